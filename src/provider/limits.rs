//! Bounds on one response, whatever the provider: at most `max_response_bytes` of text,
//! reasoning and tool arguments, and an overall deadline. Past either, the stream ends
//! with an error after what arrived (the agent keeps it and ends the turn interrupted).

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;

use super::{EventStream, ProviderError, StreamEvent};

/// The size a stream event adds to the response.
fn size(ev: &StreamEvent) -> usize {
    match ev {
        StreamEvent::TextDelta(t) | StreamEvent::ReasoningDelta(t) => t.len(),
        StreamEvent::ToolCall { arguments, .. } => arguments.len(),
        _ => 0,
    }
}

struct State {
    inner: EventStream,
    total: usize,
    deadline: Instant,
    ended: bool,
}

/// `inner`, cut with an error once its text and arguments pass `max_bytes` or once
/// `timeout` has passed since `started`.
pub fn bounded(inner: EventStream, max_bytes: usize, timeout: Duration, started: Instant) -> EventStream {
    let state = State {
        inner,
        total: 0,
        deadline: started + timeout,
        ended: false,
    };
    Box::pin(futures_util::stream::unfold(state, move |mut s| async move {
        if s.ended {
            return None;
        }
        match tokio::time::timeout_at(s.deadline, s.inner.next()).await {
            Err(_) => {
                s.ended = true;
                Some((Err(ProviderError::Deadline(timeout.as_secs())), s))
            }
            Ok(None) => None,
            Ok(Some(Ok(ev))) => {
                s.total = s.total.saturating_add(size(&ev));
                if s.total > max_bytes {
                    s.ended = true;
                    return Some((Err(too_large(max_bytes)), s));
                }
                Some((Ok(ev), s))
            }
            Ok(Some(Err(e))) => {
                s.ended = true;
                Some((Err(e), s))
            }
        }
    }))
}

/// `inner` bounded by `spec`'s size cap and deadline, counted from `started`.
pub fn bounded_by(inner: EventStream, spec: &super::Spec, started: Instant) -> EventStream {
    bounded(inner, spec.max_response_bytes, spec.response_timeout, started)
}

/// The error for a response past `max_bytes`.
pub fn too_large(max_bytes: usize) -> ProviderError {
    ProviderError::TooLarge(format!("it passed {max_bytes} bytes of text and tool arguments"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_of(events: Vec<StreamEvent>) -> EventStream {
        Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)))
    }

    #[tokio::test]
    async fn text_past_the_cap_ends_the_stream_after_what_fit() {
        let evs = (0..10).map(|_| StreamEvent::TextDelta("x".repeat(100))).collect();
        let out: Vec<_> = bounded(stream_of(evs), 450, Duration::from_secs(60), Instant::now())
            .collect()
            .await;
        assert_eq!(out.len(), 5);
        assert!(out[..4].iter().all(Result::is_ok));
        assert!(matches!(out[4], Err(ProviderError::TooLarge(_))), "{:?}", out[4]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_never_ends_meets_the_deadline() {
        let endless: EventStream = Box::pin(futures_util::stream::pending());
        let out: Vec<_> = bounded(endless, 1 << 20, Duration::from_secs(600), Instant::now())
            .collect()
            .await;
        assert_eq!(out, vec![Err(ProviderError::Deadline(600))]);
    }
}
