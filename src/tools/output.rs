//! Output capping shared by every tool: bytes are kept only up to `max_output_size` while
//! they are produced, cut at a UTF-8 boundary, and a visible notice says what was left out.
//! Never buffers more than the cap (plus one pending entry for sorted results).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Room kept for the truncation notice so that content plus notice stays within the cap.
const NOTICE_ROOM: usize = 128;

/// How much was produced in all, for the notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Total {
    /// Exactly this many bytes were produced.
    Exact(u64),
    /// Reading stopped early; at least this many bytes exist.
    AtLeast(u64),
}

/// Capped text ready for a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capped {
    pub text: String,
    pub truncated: bool,
    /// Invalid UTF-8 was replaced with U+FFFD.
    pub lossy: bool,
}

impl Capped {
    /// One entry per line, `"a\nb"`: no newline after the last entry.
    pub fn lines(mut self) -> Capped {
        if !self.truncated && self.text.ends_with('\n') {
            self.text.pop();
        }
        self
    }
}

impl Capped {
    /// Adds `"truncated": true` to a result object when the text was cut.
    pub fn mark(&self, result: &mut Map<String, Value>) {
        if self.truncated {
            result.insert("truncated".into(), Value::Bool(true));
        }
    }
}

/// The most content bytes kept for a cap, leaving room for the notice.
pub(crate) fn content_limit(cap: usize) -> usize {
    if cap > 2 * NOTICE_ROOM {
        cap - NOTICE_ROOM
    } else {
        cap / 2
    }
}

/// Keeps at most `content_limit(cap)` bytes of what is pushed, counting the rest.
#[derive(Debug)]
pub struct CappedBuf {
    buf: Vec<u8>,
    limit: usize,
    total: u64,
}

impl CappedBuf {
    pub fn new(cap: usize) -> Self {
        let limit = content_limit(cap);
        CappedBuf {
            buf: Vec::with_capacity(limit.min(64 * 1024)),
            limit,
            total: 0,
        }
    }

    /// Appends what fits; returns false once the buffer is full.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        self.total += bytes.len() as u64;
        let room = self.limit.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
        !self.is_full()
    }

    pub fn is_full(&self) -> bool {
        self.buf.len() >= self.limit
    }

    /// Bytes offered so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes kept so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes kept so far.
    pub fn kept(&self) -> &[u8] {
        &self.buf
    }

    /// Finishes with the total counted by `push`.
    pub fn finish(self) -> Capped {
        let total = Total::Exact(self.total);
        self.finish_with(total)
    }

    /// Finishes with a total the caller knows better (e.g. a file's size).
    pub fn finish_with(self, total: Total) -> Capped {
        let all = match total {
            Total::Exact(n) | Total::AtLeast(n) => n,
        };
        let truncated = all > self.buf.len() as u64 || matches!(total, Total::AtLeast(_));
        let mut bytes = self.buf;
        if truncated {
            let keep = utf8_floor(&bytes);
            bytes.truncate(keep);
        }
        let (mut text, lossy) = match String::from_utf8(bytes) {
            Ok(s) => (s, false),
            Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
        };
        if truncated {
            let shown = text.len() as u64;
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&notice(shown, total));
        }
        Capped {
            text,
            truncated,
            lossy,
        }
    }
}

/// The notice line, e.g. "[output truncated: 10 of 20 bytes shown]".
pub(crate) fn notice(shown: u64, total: Total) -> String {
    match total {
        Total::Exact(n) => format!("[output truncated: {shown} of {n} bytes shown]"),
        Total::AtLeast(n) => format!("[output truncated: {shown} of at least {n} bytes shown]"),
    }
}

/// The length of `bytes` without a trailing incomplete UTF-8 sequence.
pub(crate) fn utf8_floor(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // Look back at most 3 bytes for the start of the last character.
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if b & 0b1100_0000 != 0b1000_0000 {
            let need = match b {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if need > back { len - back } else { len };
        }
    }
    len
}

/// Sorted entries (e.g. one per file) kept within a byte budget: when over budget the
/// largest keys are dropped, so what remains is always a sorted prefix of everything seen.
#[derive(Debug)]
pub(crate) struct SortedCapped {
    entries: BTreeMap<String, String>,
    kept: usize,
    limit: usize,
    total: u64,
    /// Smallest key dropped so far; keys at or above it are no longer kept.
    horizon: Option<String>,
}

impl SortedCapped {
    pub(crate) fn new(cap: usize) -> Self {
        SortedCapped {
            entries: BTreeMap::new(),
            kept: 0,
            limit: content_limit(cap),
            total: 0,
            horizon: None,
        }
    }

    /// Offers an entry of `len_total` bytes of which `text` is the part kept (an entry may
    /// itself be cut by the producer).
    pub(crate) fn insert(&mut self, key: String, text: String, len_total: u64) {
        self.total += len_total;
        if self.horizon.as_ref().is_some_and(|h| &key >= h) {
            return;
        }
        self.kept += text.len();
        if let Some(old) = self.entries.insert(key, text) {
            self.kept -= old.len();
        }
        while self.kept > self.limit && self.entries.len() > 1 {
            if let Some((k, v)) = self.entries.pop_last() {
                self.kept -= v.len();
                self.horizon = Some(k);
            }
        }
    }

    /// Concatenates the kept entries in key order and caps the result.
    pub(crate) fn finish(self, cap: usize, stopped_early: bool) -> Capped {
        let mut buf = CappedBuf::new(cap);
        for text in self.entries.values() {
            buf.push(text.as_bytes());
        }
        let total = self.total.max(buf.total());
        let capped = if stopped_early {
            buf.finish_with(Total::AtLeast(total))
        } else {
            buf.finish_with(Total::Exact(total))
        };
        capped.lines()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut b = CappedBuf::new(1000);
        b.push(b"hello\n");
        let c = b.finish();
        assert_eq!(c.text, "hello\n");
        assert!(!c.truncated && !c.lossy);
    }

    #[test]
    fn cuts_at_a_char_boundary_and_says_so() {
        let cap = 301;
        let mut b = CappedBuf::new(cap);
        let s = "é".repeat(500);
        while b.push(s.as_bytes()) {}
        b.push(s.as_bytes());
        let c = b.finish();
        assert!(c.truncated);
        assert!(!c.lossy, "a cut inside a character must not produce U+FFFD");
        assert!(c.text.len() <= cap, "{}", c.text.len());
        let shown = c.text.lines().next().unwrap().len();
        assert_eq!(shown, 172);
        assert!(c.text.ends_with("[output truncated: 172 of 2000 bytes shown]"));
    }

    #[test]
    fn at_least_when_reading_stopped() {
        let mut b = CappedBuf::new(1000);
        b.push(b"abc");
        let c = b.finish_with(Total::AtLeast(5000));
        assert!(
            c.text
                .ends_with("[output truncated: 3 of at least 5000 bytes shown]")
        );
    }

    #[test]
    fn invalid_utf8_is_lossy() {
        let mut b = CappedBuf::new(1000);
        b.push(b"a\xffb");
        let c = b.finish();
        assert_eq!(c.text, "a\u{FFFD}b");
        assert!(c.lossy);
    }

    #[test]
    fn utf8_floor_finds_partial_sequences() {
        assert_eq!(utf8_floor("aé".as_bytes()), 3);
        assert_eq!(utf8_floor(&"aé".as_bytes()[..2]), 1);
        assert_eq!(utf8_floor(&"a€".as_bytes()[..3]), 1);
        assert_eq!(utf8_floor(&"😀".as_bytes()[..3]), 0);
        assert_eq!(utf8_floor(b""), 0);
    }

    #[test]
    fn sorted_capped_keeps_a_sorted_prefix() {
        let cap = 80;
        let mut s = SortedCapped::new(cap);
        for k in ["d", "b", "e", "a", "c", "f"] {
            let text = format!("{}\n", k.repeat(9));
            s.insert(k.to_string(), text, 10);
        }
        let c = s.finish(cap, false);
        assert!(c.truncated);
        assert!(c.text.starts_with("aaaaaaaaa\nbbbbbbbbb\nccccccccc\nddddddddd\n"));
        assert!(c.text.ends_with("[output truncated: 40 of 60 bytes shown]"));
        assert!(c.text.len() <= cap);
    }
}
