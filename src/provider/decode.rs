//! Drives a payload decoder over an SSE data stream: the one loop every wire format's
//! stream decoder shares (pending events, end of body, errors end the stream).

use std::collections::VecDeque;

use futures_util::StreamExt;

use super::http::DataStream;
use super::{EventStream, ProviderError, StreamEvent};

/// One wire format's stream decoder, fed one `data:` payload at a time.
pub trait Decoder: Send + 'static {
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
