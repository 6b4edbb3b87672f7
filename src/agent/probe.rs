//! The handle of the background question about the server's context window: the task
//! in flight, aborted when it is dropped or its model is no longer current. Held by the
//! agent state; asked, polled and settled by `window.rs`. Owns the handle only.

use tokio::task::JoinHandle;

use crate::provider::ProviderError;

/// What the server said: its window, nothing, or an error (a body past the cap).
pub(crate) type Answer = Result<Option<u64>, ProviderError>;

/// The question in flight, if any.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    pub(super) task: Option<JoinHandle<Answer>>,
}

impl Probe {
    /// Drops a question about a model that is no longer current.
    pub(crate) fn forget(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.forget();
    }
}
