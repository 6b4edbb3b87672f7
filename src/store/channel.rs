//! What the store's handle and its writer task share: the commands the handle queues,
//! and the connection state the writer publishes for readers (with the final failure it
//! keeps). Types only; neither side's logic.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::StoreError;
use super::backend::{Backend, Write};

/// What the handle sends.
pub(crate) enum Cmd {
    Write(Write),
    /// The handle now holds this session (a claim): keep it across a recreated file.
    Held(String),
    /// Answered once every earlier write is done (readers).
    Sync(oneshot::Sender<()>),
    /// At exit: answered once every earlier write is done, or spooled.
    Flush(oneshot::Sender<()>),
}

/// A final failure, kept so every later read can report it.
#[derive(Clone, Debug)]
pub(crate) enum Fatal {
    TooNew { found: i64, known: i64 },
    Other(String),
}

impl From<StoreError> for Fatal {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TooNew { found, known } => Fatal::TooNew { found, known },
            other => Fatal::Other(other.to_string()),
        }
    }
}

impl From<&Fatal> for StoreError {
    fn from(f: &Fatal) -> Self {
        match f {
            Fatal::TooNew { found, known } => StoreError::TooNew {
                found: *found,
                known: *known,
            },
            Fatal::Other(s) => StoreError::Other(s.clone()),
        }
    }
}

/// The connection as readers see it.
#[derive(Clone)]
pub(crate) enum Conn {
    Connecting,
    Up(Arc<dyn Backend>),
    /// Why it is down, naming the database.
    Down(String),
    Failed(Fatal),
}
