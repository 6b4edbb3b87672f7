//! Live output of the running call: what its command prints, handed to the front ends
//! while it runs. The caller (the agent's turn) runs the call inside `Sink::scope`;
//! process.rs feeds what it reads into a `Feed`, which keeps only a bounded tail and hands
//! it on at most every `INTERVAL`; nothing is copied when no front end shows it. Owns no
//! rendering, no protocol and no process handling, and never changes what the call
//! returns (the stored result is read as before).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

tokio::task_local! {
    static CURRENT: Sink;
}

/// Whether any front end shows live output (off: plain mode with neither `--json` nor a
/// terminal on stderr), so that nothing is copied when nobody looks.
static WATCHED: AtomicBool = AtomicBool::new(true);

/// Says whether a front end shows live output (for the whole process).
pub fn set_watched(on: bool) {
    WATCHED.store(on, Ordering::Relaxed);
}

/// The shortest time between two deltas of one call.
pub const INTERVAL: Duration = Duration::from_millis(50);
/// The most one delta carries: older output of a fast command is skipped (and counted).
pub const MAX_DELTA: usize = 8 * 1024;

/// Output of the running call since the last delta.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    pub text: String,
    /// Bytes printed before `text` that were left out (the command printed faster than
    /// `MAX_DELTA` per `INTERVAL`).
    pub skipped: u64,
}

/// Where the live output of one call goes.
#[derive(Clone)]
pub struct Sink(Arc<dyn Fn(Delta) + Send + Sync>);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("live::Sink")
    }
}

impl Sink {
    pub fn new(f: impl Fn(Delta) + Send + Sync + 'static) -> Self {
        Sink(Arc::new(f))
    }

    /// Hands on one delta.
    pub fn send(&self, d: Delta) {
        (self.0)(d)
    }

    /// Runs `call` with this sink receiving what its processes print.
    pub async fn scope<F: Future>(self, call: F) -> F::Output {
        CURRENT.scope(self, call).await
    }
}

/// What a running process's output passes through on its way to the sink: a bounded
/// buffer, flushed when `INTERVAL` has passed since the last delta.
pub(crate) struct Feed {
    sink: Sink,
    pending: Vec<u8>,
    skipped: u64,
    last: Option<Instant>,
}

impl Feed {
    /// A feed into the sink of the call running on this task, if it was given one.
    pub(crate) fn current() -> Option<Feed> {
        if !WATCHED.load(Ordering::Relaxed) {
            return None;
        }
        let sink = CURRENT.try_with(Clone::clone).ok()?;
        Some(Feed {
            sink,
            pending: Vec::new(),
            skipped: 0,
            last: None,
        })
    }

    /// Takes what the process printed; hands it on now when the last delta is old enough.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let keep = &bytes[bytes.len().saturating_sub(MAX_DELTA)..];
        let over = (self.pending.len() + keep.len()).saturating_sub(MAX_DELTA);
        if over > 0 {
            let from_pending = over.min(self.pending.len());
            self.pending.drain(..from_pending);
            self.skipped += over as u64;
        }
        self.skipped += (bytes.len() - keep.len()) as u64;
        self.pending.extend_from_slice(keep);
        if over > 0 || bytes.len() > keep.len() {
            // Never start inside a character.
            let cont = self
                .pending
                .iter()
                .take(3)
                .take_while(|b| (**b & 0xC0) == 0x80)
                .count();
            self.pending.drain(..cont);
            self.skipped += cont as u64;
        }
        if self.due().is_some_and(|d| d <= Instant::now()) {
            self.flush(false);
        }
    }

    /// When the output held back is due; `None` when nothing is held.
    pub(crate) fn due(&self) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(self.last.map_or_else(Instant::now, |t| t + INTERVAL))
    }

    /// Hands on what is held: all of it when `all` (the process is done), else up to the
    /// last whole character.
    pub(crate) fn flush(&mut self, all: bool) {
        let cut = if all {
            self.pending.len()
        } else {
            complete_len(&self.pending)
        };
        if cut == 0 {
            return;
        }
        let rest = self.pending.split_off(cut);
        let bytes = std::mem::replace(&mut self.pending, rest);
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        self.last = Some(Instant::now());
        let skipped = std::mem::take(&mut self.skipped);
        self.sink.send(Delta { text, skipped });
    }
}

/// Resolves at `at`; never when `None`.
pub(crate) async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The length of `b` without a character it ends in the middle of.
fn complete_len(b: &[u8]) -> usize {
    for back in 1..=b.len().min(4) {
        let byte = b[b.len() - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let need = match byte {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if need > back { b.len() - back } else { b.len() };
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn collecting() -> (Sink, Arc<Mutex<Vec<Delta>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        (Sink::new(move |d| g.lock().unwrap().push(d)), got)
    }

    // The clock is paused: it moves only when the test sleeps.
    #[tokio::test(start_paused = true)]
    async fn the_first_output_goes_at_once_then_at_most_every_interval() {
        let (sink, got) = collecting();
        sink.scope(async {
            let mut f = Feed::current().expect("in scope");
            f.push(b"one\n");
            assert_eq!(got.lock().unwrap().len(), 1, "the first delta is not held");
            f.push(b"two\n");
            f.push(b"three\n");
            assert_eq!(got.lock().unwrap().len(), 1, "held until the interval passed");
            let due = f.due().expect("held");
            tokio::time::sleep_until(due).await;
            f.flush(false);
            assert_eq!(f.due(), None);
        })
        .await;
        let got = got.lock().unwrap();
        let texts: Vec<&str> = got.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts, ["one\n", "two\nthree\n"]);
        assert!(Feed::current().is_none(), "no sink outside a scope");
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_is_bounded_and_counts_what_it_skipped() {
        let (sink, got) = collecting();
        sink.scope(async {
            let mut f = Feed::current().expect("in scope");
            f.push(b"x");
            for _ in 0..100 {
                f.push(&[b'y'; 1000]);
            }
            f.push("é".as_bytes());
            f.flush(true);
        })
        .await;
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 2);
        let last = &got[1];
        assert!(last.text.len() <= MAX_DELTA, "{}", last.text.len());
        assert!(last.text.ends_with("yé"));
        assert_eq!(last.skipped as usize + last.text.len(), 100_000 + 2);
    }

    #[tokio::test]
    async fn a_character_split_between_reads_waits_for_its_end() {
        let (sink, got) = collecting();
        sink.scope(async {
            let mut f = Feed::current().expect("in scope");
            let e = "é".as_bytes();
            f.push(&[b'a', e[0]]);
            assert_eq!(f.pending, [e[0]], "the half character waits");
            f.push(&e[1..]);
            f.flush(false);
        })
        .await;
        let got = got.lock().unwrap();
        let text: String = got.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(text, "aé");
    }

    #[test]
    fn complete_len_stops_before_a_partial_character() {
        assert_eq!(complete_len(b"abc"), 3);
        assert_eq!(complete_len(&"€".as_bytes()[..2]), 0);
        assert_eq!(complete_len("a€".as_bytes()), 4);
        assert_eq!(complete_len(&[b'a', 0xF0, 0x9F]), 1);
        assert_eq!(complete_len(&[0x80, 0x80, 0x80, 0x80, 0x80]), 5);
    }
}
