//! Holds a response stream back until it has produced output, so that an error the
//! vendor sends before any text (Anthropic's `overloaded_error`, Gemini's
//! `UNAVAILABLE`) is returned from `Provider::stream` and retried like an HTTP error.
//! Knows no wire format.

use std::collections::VecDeque;

use futures_util::StreamExt;

use super::{EventStream, ProviderError, StreamEvent};

/// True for events the user sees; after one, an error can no longer be retried.
fn is_output(e: &StreamEvent) -> bool {
    matches!(
        e,
        StreamEvent::TextDelta(_)
            | StreamEvent::ReasoningDelta(_)
            | StreamEvent::ToolCall { .. }
            | StreamEvent::Reasoning { .. }
    )
}

/// Reads `stream` until its first output event. A retryable error before that point is
/// returned as `Err`; otherwise the events read so far are replayed in front of the rest.
pub async fn hold_until_output(mut stream: EventStream) -> Result<EventStream, ProviderError> {
    let mut held: VecDeque<Result<StreamEvent, ProviderError>> = VecDeque::new();
    loop {
        match stream.next().await {
            None => break,
            Some(Err(e)) if e.is_retryable() => return Err(e),
            Some(Err(e)) => {
                held.push_back(Err(e));
                break;
            }
            Some(Ok(ev)) => {
                let output = is_output(&ev);
                held.push_back(Ok(ev));
                if output {
                    break;
                }
            }
        }
    }
    Ok(Box::pin(futures_util::stream::iter(held).chain(stream)))
}
