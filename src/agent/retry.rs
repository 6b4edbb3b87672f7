//! Sending one request with retries: failures before the first byte that the provider
//! calls retryable (429, 5xx, no connection) are tried again with backoff, honouring the
//! server's `Retry-After`, each announced as `Event::Retrying`. Knows nothing about the
//! budget, compaction or what the request carries.

use super::state::AgentState;
use crate::message::Message;
use crate::protocol::Event;
use crate::provider::{EventStream, ProviderError, Request};
use crate::tools::ToolSchema;

/// Sends `messages` (the budget step's view of the conversation) with `tools`, retrying
/// failures before the first byte with backoff.
pub async fn send(
    st: &AgentState,
    messages: &[Message],
    tools: &[ToolSchema],
) -> Result<EventStream, ProviderError> {
    let config = st.config();
    let base = std::time::Duration::from_millis(config.retry_base_delay_ms);
    let mut attempt = 0;
    loop {
        let req = Request {
            model: st.model(),
            system: st.system_prompt(),
            messages,
            tools,
            stop: &[],
        };
        match st.provider().stream(req).await {
            Ok(s) => return Ok(s),
            Err(e) if e.is_retryable() && attempt < config.max_retries => {
                attempt += 1;
                let wait = crate::backoff::delay(attempt, base, crate::backoff::MAX_BACKOFF, e.retry_after());
                st.emit(Event::Retrying {
                    attempt,
                    in_secs: wait.as_secs_f64(),
                    reason: e.to_string(),
                });
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}
