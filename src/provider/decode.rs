//! Drives a payload decoder over an SSE data stream: the one loop every wire format's
//! stream decoder shares (pending events, end of body, errors end the stream), and the
//! one bound on the tool arguments a decoder holds back (`Held`).

use std::collections::VecDeque;

use futures_util::StreamExt;

use super::http::DataStream;
use super::{EventStream, ProviderError, StreamEvent};

/// One wire format's stream decoder, fed one `data:` payload at a time.
pub trait Decoder: Default + Send + 'static {
    /// The bound on the tool arguments it holds back.
    fn held(&mut self) -> &mut Held;
    /// A decoder that holds at most `max_bytes` of tool arguments back (`default()`:
    /// no bound).
    fn with_limit(max_bytes: usize) -> Self {
        let mut d = Self::default();
        *d.held() = Held::new(max_bytes);
        d
    }
    /// Decodes one payload into the events it completes.
    fn push(&mut self, payload: &str) -> Result<Vec<StreamEvent>, ProviderError>;
    /// True once the response is complete; later payloads are not read.
    fn is_done(&self) -> bool;
    /// True when what was read ends the response properly (its finish reason or end
    /// marker came): a body that ends before that was cut off.
    fn is_complete(&self) -> bool;
    /// End of the response: the remaining events (calls still open, usage).
    fn finish(&mut self) -> Vec<StreamEvent>;
    /// True when a malformed payload that the body's end follows at once means the body
    /// was cut mid-event (and is reported so), not that the vendor sent a bad event.
    fn malformed_then_end_is_cut(&self) -> bool {
        false
    }
}

/// Bytes of tool arguments a decoder holds back until their call is complete, bounded:
/// past the limit the response is cut (`max_response_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    limit: usize,
    held: usize,
}

impl Default for Held {
    /// No limit.
    fn default() -> Self {
        Held::new(usize::MAX)
    }
}

impl Held {
    pub fn new(limit: usize) -> Self {
        Held { limit, held: 0 }
    }

    /// Counts `n` more bytes held; an error once they pass the limit.
    pub fn add(&mut self, n: usize) -> Result<(), ProviderError> {
        self.held = self.held.saturating_add(n);
        if self.held > self.limit {
            return Err(super::limits::too_large(self.limit));
        }
        Ok(())
    }

    /// Everything held went out.
    pub fn release(&mut self) {
        self.held = 0;
    }
}

struct State<D> {
    data: DataStream,
    decoder: D,
    pending: VecDeque<StreamEvent>,
    ended: bool,
}

/// The events `decoder` reads from `data`.
pub fn decode<D: Decoder>(data: DataStream, decoder: D) -> EventStream {
    let state = State {
        data,
        decoder,
        pending: VecDeque::new(),
        ended: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(ev) = s.pending.pop_front() {
                return Some((Ok(ev), s));
            }
            if s.ended {
                return None;
            }
            let step = match s.data.next().await {
                Some(Ok(payload)) => match s.decoder.push(&payload) {
                    Ok(mut evs) if s.decoder.is_done() => {
                        s.ended = true;
                        evs.extend(s.decoder.finish());
                        Ok(evs)
                    }
                    Ok(evs) => Ok(evs),
                    Err(e) if s.decoder.malformed_then_end_is_cut() => {
                        Err(super::early::cut_short(e, &mut s.data).await)
                    }
                    Err(e) => Err(e),
                },
                Some(Err(e)) => Err(e),
                None => {
                    s.ended = true;
                    if s.decoder.is_complete() {
                        Ok(s.decoder.finish())
                    } else {
                        Err(ProviderError::Stream(
                            "the connection closed before the response was complete".into(),
                        ))
                    }
                }
            };
            match step {
                Ok(evs) => s.pending.extend(evs),
                Err(e) => {
                    s.ended = true;
                    return Some((Err(e), s));
                }
            }
        }
    }))
}
