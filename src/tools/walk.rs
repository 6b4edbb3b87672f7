//! Directory walking shared by glob and grep: a ripgrep-like `ignore` walker (honours
//! .gitignore/.ignore even outside a git repository, includes hidden files, skips `.git`),
//! path display, and running blocking work off the async runtime with a stop signal that
//! fires on cancel (drop) or on the tool timeout.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ignore::{DirEntry, WalkBuilder};

use super::{ToolContext, ToolError};

/// The walker both search tools use.
pub(crate) fn builder(base: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(base);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .threads(threads());
    b
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(12)
}

/// True for a `.git` directory, which is never searched.
pub(crate) fn is_git_dir(entry: &DirEntry) -> bool {
    entry.file_name() == ".git" && entry.file_type().is_some_and(|t| t.is_dir())
}

/// How a found path is shown: under the base as the model wrote it, so it can be passed
/// straight back to another tool. Non-UTF-8 names are shown lossily.
pub(crate) fn display_join(given: Option<&str>, rel: &Path) -> String {
    let rel = rel.to_string_lossy();
    match given.map(|g| g.trim_end_matches('/')) {
        None | Some("") | Some(".") => rel.into_owned(),
        Some(g) => format!("{g}/{rel}"),
    }
}

/// Tells blocking work to stop: set when the tool's future is dropped or time runs out.
#[derive(Debug)]
pub(crate) struct Stop {
    cancelled: AtomicBool,
    timed_out: AtomicBool,
    /// `None` when the timeout is too far away to represent.
    deadline: Option<Instant>,
}

impl Stop {
    /// Checks the deadline too; cheap enough to call per file.
    pub(crate) fn should_stop(&self) -> bool {
        if self.cancelled.load(Ordering::Relaxed) || self.timed_out.load(Ordering::Relaxed) {
            return true;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    pub(crate) fn timed_out(&self) -> bool {
        self.timed_out.load(Ordering::Relaxed)
    }
}

struct CancelOnDrop(Arc<Stop>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancelled.store(true, Ordering::Relaxed);
    }
}

/// Runs `f` on the blocking pool; dropping the returned future tells `f` to stop.
pub(crate) async fn run_blocking<T, F>(ctx: &ToolContext, f: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Stop) -> T + Send + 'static,
{
    let stop = Arc::new(Stop {
        cancelled: AtomicBool::new(false),
        timed_out: AtomicBool::new(false),
        deadline: Instant::now().checked_add(ctx.timeout),
    });
    let guard = CancelOnDrop(stop.clone());
    let result = tokio::task::spawn_blocking(move || f(&stop)).await;
    drop(guard);
    result.map_err(|e| ToolError::Crashed(format!("tool thread failed: {e}")))
}

/// The timeout error for a search that ran out of time, with what it had found.
pub(crate) fn timeout_error(ctx: &ToolContext, partial_output: String) -> ToolError {
    ToolError::Timeout {
        message: format!(
            "Search timed out after {}s; narrow the path or pattern",
            ctx.timeout.as_secs_f64()
        ),
        partial_output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_keeps_the_base_as_given() {
        let rel = Path::new("a/b.rs");
        assert_eq!(display_join(None, rel), "a/b.rs");
        assert_eq!(display_join(Some("."), rel), "a/b.rs");
        assert_eq!(display_join(Some("src/"), rel), "src/a/b.rs");
        assert_eq!(display_join(Some("/abs"), rel), "/abs/a/b.rs");
    }
}
