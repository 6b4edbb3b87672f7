//! A JSON request body sent while it is written: the object's other fields, then one long
//! array (the conversation) encoded item by item as the connection takes it, so a long
//! session's request is never held whole in memory. A small body is written once into one
//! buffer; a large one has its exact length counted first, so it too goes out with a
//! `Content-Length`, never chunked. The items are written by sonic-rs (the bytes
//! serde_json writes, with vectorised string escaping); the object's head by serde_json.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use serde::Serialize;
use tokio::sync::mpsc;

/// Bytes per piece handed to the connection.
pub const PIECE: usize = 64 * 1024;

/// Bodies up to this size are written into one buffer and sent as it.
pub const WHOLE_UP_TO: usize = 4 * PIECE;

/// A request body that can be written from its start any number of times (a counting
/// pass, then the bytes), one part at a time; it borrows what it writes for `'a`. Every
/// wire format's body is one.
pub trait Source<'a>: Send + Sync {
    /// A fresh pass over the body.
    fn pass(&self) -> Box<dyn Pass + Send + 'a>;

    /// The exact length in bytes: one pass that writes each part aside only to measure it
    /// (the body is never held). Remembered: a second call is free.
    fn byte_count(&self) -> serde_json::Result<u64> {
        if let Some(n) = self.counted() {
            return Ok(n);
        }
        let (mut count, mut scratch) = (0u64, Vec::new());
        let mut pass = self.pass();
        while let Some(n) = pass.count_next(&mut scratch)? {
            count += n;
        }
        self.remember(count);
        Ok(count)
    }

    /// The length a `byte_count` found, if one ran.
    fn counted(&self) -> Option<u64> {
        None
    }

    /// Keeps the length `byte_count` found (bodies that can; it never changes).
    fn remember(&self, _count: u64) {}

    /// The whole body in one buffer (of its exact size when it was counted).
    fn to_vec(&self) -> serde_json::Result<Vec<u8>> {
        let size = self.counted().and_then(|n| usize::try_from(n).ok());
        let mut out = Vec::with_capacity(size.unwrap_or(0));
        let mut pass = self.pass();
        while pass.write_next(&mut out)? {}
        Ok(out)
    }

    /// The whole body in one buffer if it is at most `limit` bytes (written once, the
    /// usual case); `None` as soon as it would pass `limit`. Each part is written aside
    /// first, so the buffer never grows past `limit` for a body that turns out large.
    fn small(&self, limit: usize) -> serde_json::Result<Option<Vec<u8>>> {
        let mut pass = self.pass();
        let (mut out, mut part) = (Vec::new(), Vec::new());
        while pass.write_next(&mut part)? {
            if out.len() + part.len() > limit {
                return Ok(None);
            }
            out.append(&mut part);
        }
        Ok(Some(out))
    }
}

/// One pass over a body.
pub trait Pass {
    /// Appends the next part (the head, one item, or the tail) to `out`; false once all
    /// is written.
    fn write_next(&mut self, out: &mut Vec<u8>) -> serde_json::Result<bool>;

    /// The length of the next part, which is skipped; `None` once all is written. By
    /// default the part is written into `scratch` and measured.
    fn count_next(&mut self, scratch: &mut Vec<u8>) -> serde_json::Result<Option<u64>> {
        scratch.clear();
        Ok(self.write_next(scratch)?.then_some(scratch.len() as u64))
    }
}

/// Sends `body` in pieces to `tx` as the receiver takes them (at most two ahead);
/// returns when all are sent, or early when the receiver is gone.
pub async fn send_to(body: &dyn Source<'_>, tx: mpsc::Sender<Bytes>) -> serde_json::Result<()> {
    let mut pass = body.pass();
    loop {
        let mut piece = Vec::with_capacity(PIECE + PIECE / 8);
        while piece.len() < PIECE && pass.write_next(&mut piece)? {}
        if piece.is_empty() || tx.send(Bytes::from(piece)).await.is_err() {
            return Ok(());
        }
    }
}

/// A JSON object: the fields of `rest`, then the array `key` of the items `items()` yields
/// (called again for each pass over the body; every call must yield the same items).
pub struct JsonBody<F> {
    /// `{…rest…,"key":[` (shared by every pass)
    head: Bytes,
    items: F,
    /// The length, once counted.
    count: std::sync::OnceLock<u64>,
}

const TAIL: &[u8] = b"]}";

impl<F, I> JsonBody<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    /// The body; fails when `rest` is not a JSON object.
    pub fn new(rest: &impl Serialize, key: &str, items: F) -> serde_json::Result<Self> {
        let mut head = serde_json::to_vec(rest)?;
        if head.first() != Some(&b'{') || head.pop() != Some(b'}') {
            return Err(serde::ser::Error::custom("the body must be a JSON object"));
        }
        if head.len() > 1 {
            head.push(b',');
        }
        serde_json::to_writer(&mut head, key)?;
        head.extend_from_slice(b":[");
        Ok(JsonBody {
            head: Bytes::from(head),
            items,
            count: std::sync::OnceLock::new(),
        })
    }
}

impl<'a, F, I> Source<'a> for JsonBody<F>
where
    F: Fn() -> I + Send + Sync,
    I: Iterator + Send + 'a,
    I::Item: Serialize,
{
    fn pass(&self) -> Box<dyn Pass + Send + 'a> {
        Box::new(Pieces {
            head: Some(self.head.clone()),
            items: (self.items)(),
            first: true,
            done: false,
        })
    }

    fn counted(&self) -> Option<u64> {
        self.count.get().copied()
    }

    fn remember(&self, count: u64) {
        let _ = self.count.set(count);
    }
}

/// Appends `item` as compact JSON: with sonic-rs, whose string escaping (most of a long
/// conversation's bytes) is vectorised, where serde_json's goes a byte at a time. The bytes
/// are serde_json's own (`tests::items_are_written_as_serde_json_writes_them`).
fn write_item(out: &mut Vec<u8>, item: &impl Serialize) -> serde_json::Result<()> {
    sonic_rs::to_writer(out, item).map_err(serde::ser::Error::custom)
}

/// `item` as a body writes it, read back as a JSON tree (tests and callers that inspect
/// one part of a body). Parts hold raw JSON that only the body writer writes as it is:
/// serialising them with serde_json directly would not.
pub fn item_value(item: &impl Serialize) -> serde_json::Result<serde_json::Value> {
    let mut out = Vec::new();
    write_item(&mut out, item)?;
    serde_json::from_slice(&out)
}

/// `item` as a body writes it.
#[cfg(test)]
pub fn item_bytes(item: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::new();
    write_item(&mut out, item).map(|()| out).unwrap_or_default()
}

/// Where the writing stands.
struct Pieces<I> {
    head: Option<Bytes>,
    items: I,
    first: bool,
    done: bool,
}

impl<I> Pass for Pieces<I>
where
    I: Iterator,
    I::Item: Serialize,
{
    fn write_next(&mut self, out: &mut Vec<u8>) -> serde_json::Result<bool> {
        if let Some(head) = self.head.take() {
            out.extend_from_slice(&head);
            return Ok(true);
        }
        if self.done {
            return Ok(false);
        }
        match self.items.next() {
            Some(item) => {
                if !std::mem::take(&mut self.first) {
                    out.push(b',');
                }
                write_item(out, &item)?;
            }
            None => {
                out.extend_from_slice(TAIL);
                self.done = true;
            }
        }
        Ok(true)
    }
}

/// The receiving end as an HTTP body of a known, exact length.
pub struct Received {
    rx: mpsc::Receiver<Bytes>,
    len: u64,
}

impl Received {
    /// A channel whose receiving end is a body of `len` bytes.
    pub fn channel(len: u64) -> (mpsc::Sender<Bytes>, Received) {
        let (tx, rx) = mpsc::channel(2);
        (tx, Received { rx, len })
    }
}

impl http_body::Body for Received {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.rx
            .poll_recv(cx)
            .map(|piece| piece.map(|b| Ok(Frame::data(b))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

/// Asserts that every item of `items` is written as serde_json writes it (for parts that
/// hold no raw JSON: serde_json cannot write sonic-rs's raw values).
#[cfg(test)]
pub fn assert_written_as_serde_json<T: Serialize>(items: impl Iterator<Item = T>) {
    let mut n = 0;
    for item in items {
        let mut ours = Vec::new();
        write_item(&mut ours, &item).unwrap();
        let theirs = serde_json::to_vec(&item).unwrap();
        assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
        n += 1;
    }
    assert!(n > 5, "only {n} items");
}

/// Asserts that the items written for `history::varied` keep the model's own argument
/// text byte for byte, wrap bad arguments, and that every item parses as an object
/// (for parts holding raw JSON, which serde_json cannot write).
#[cfg(test)]
pub fn assert_raw_json_kept<T: Serialize>(
    items: impl Iterator<Item = T>,
    history: &[crate::message::Message],
) {
    let mut all = String::new();
    for item in items {
        let v = item_value(&item).unwrap();
        assert!(v.is_object(), "{v}");
        all.push_str(&v.to_string());
        all.push_str(&String::from_utf8(item_bytes(&item)).unwrap());
    }
    let Some(args) = history[6].as_tool_call().map(|c| c.function.arguments.as_str()) else {
        panic!("the call")
    };
    assert!(args.contains(": ") && all.contains(args), "{args}");
    assert!(
        all.contains(r#"{"invalid_arguments":"{\"pattern\": \"*"}"#),
        "{all}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn body(n: usize) -> JsonBody<impl Fn() -> std::vec::IntoIter<Value>> {
        let rest = json!({"model": "m", "stream": true});
        JsonBody::new(&rest, "messages", move || {
            (0..n)
                .map(|i| json!({"role": "user", "content": format!("message {i} \"quoted\"")}))
                .collect::<Vec<_>>()
                .into_iter()
        })
        .unwrap()
    }

    #[test]
    fn the_body_is_the_object_with_the_array_last_and_its_length_exact() {
        for n in [0, 1, 3] {
            let b = body(n);
            let bytes = b.to_vec().unwrap();
            assert_eq!(bytes.len() as u64, b.byte_count().unwrap());
            assert_eq!(b.small(bytes.len()).unwrap(), Some(bytes.clone()));
            assert_eq!(b.small(bytes.len() - 1).unwrap(), None);
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(v["model"], "m");
            assert_eq!(v["stream"], true);
            assert_eq!(v["messages"].as_array().unwrap().len(), n);
        }
        let empty = JsonBody::new(&json!({}), "items", || std::iter::once(1)).unwrap();
        assert_eq!(empty.to_vec().unwrap(), br#"{"items":[1]}"#);
        assert!(JsonBody::new(&json!([1]), "items", std::iter::empty::<u8>).is_err());
    }

    #[tokio::test]
    async fn pieces_sent_in_turn_make_the_same_bytes() {
        let b = body(20_000);
        assert!(b.byte_count().unwrap() > 8 * PIECE as u64);
        let (tx, mut rx) = mpsc::channel(2);
        let send = send_to(&b, tx);
        let collect = async {
            let mut all = Vec::new();
            let mut pieces = 0;
            while let Some(p) = rx.recv().await {
                assert!(p.len() <= PIECE + PIECE / 8 + 200, "a piece of {} bytes", p.len());
                all.extend_from_slice(&p);
                pieces += 1;
            }
            (all, pieces)
        };
        let (sent, (all, pieces)) = tokio::join!(send, collect);
        sent.unwrap();
        assert!(pieces > 8);
        assert_eq!(all, b.to_vec().unwrap());
        // The counting pass (which writes nothing) agrees with what was sent.
        assert_eq!(b.byte_count().unwrap(), all.len() as u64);
    }
}
