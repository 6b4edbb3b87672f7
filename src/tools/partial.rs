//! What a running command has printed so far, kept outside its call so that a cancelled
//! call (its future dropped) can still report it. The caller runs the call inside
//! `Partial::scope`; `process.rs` copies what it reads into the scope's buffer, capped
//! like any output. Owns no process handling and no envelope format.

use std::future::Future;
use std::sync::{Arc, Mutex};

use super::output::CappedBuf;

tokio::task_local! {
    static CURRENT: Partial;
}

/// A shared buffer for one call's output so far; empty until a process writes to it.
#[derive(Clone, Debug, Default)]
pub struct Partial(Arc<Mutex<Option<CappedBuf>>>);

impl Partial {
    /// Runs `call` with this buffer collecting what its processes print.
    pub async fn scope<F: Future>(&self, call: F) -> F::Output {
        CURRENT.scope(self.clone(), call).await
    }

    /// The buffer of the call running on this task, if it was given one.
    pub(crate) fn current() -> Option<Partial> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Starts over with an empty buffer capped at `cap` bytes.
    pub(crate) fn reset(&self, cap: usize) {
        if let Ok(mut b) = self.0.lock() {
            *b = Some(CappedBuf::new(cap));
        }
    }

    /// Appends what fits under the cap.
    pub(crate) fn push(&self, bytes: &[u8]) {
        if let Ok(mut b) = self.0.lock()
            && let Some(buf) = b.as_mut()
        {
            buf.push(bytes);
        }
    }

    /// The text printed so far (with the truncation notice when capped), emptying the
    /// buffer; `None` when nothing was printed.
    pub fn take_text(&self) -> Option<String> {
        let buf = self.0.lock().ok()?.take()?;
        if buf.total() == 0 {
            return None;
        }
        Some(buf.finish().text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scope_collects_what_was_pushed_and_caps_it() {
        let p = Partial::default();
        p.scope(async {
            let cur = Partial::current().expect("in scope");
            cur.reset(1024);
            cur.push(b"hello ");
            cur.push(b"world\n");
        })
        .await;
        assert_eq!(p.take_text().as_deref(), Some("hello world\n"));
        assert_eq!(p.take_text(), None, "taken once");
        assert!(Partial::current().is_none(), "no buffer outside a scope");
    }

    #[test]
    fn what_is_kept_is_capped_like_any_output() {
        let p = Partial::default();
        p.reset(300);
        p.push(&[b'x'; 1000]);
        let text = p.take_text().expect("printed");
        assert!(text.len() <= 300, "{}", text.len());
        assert!(text.ends_with("bytes shown]"), "{text}");
    }

    #[tokio::test]
    async fn nothing_printed_is_none() {
        let p = Partial::default();
        p.reset(10);
        assert_eq!(p.take_text(), None);
    }
}
