//! Sending one request with retries: failures before the first byte that the provider
//! calls retryable (429, 5xx, no connection) are tried again with backoff, honouring the
//! server's `Retry-After` and `max_retry_wait_secs` in all, each wait announced as
//! `Event::Retrying` and counted down once a second; a refused connection to this machine
//! is tried once more after half a second, then reported. Knows nothing about the budget,
//! compaction or what the request carries.

use std::time::Duration;

use super::state::AgentState;
use crate::message::Message;
use crate::protocol::{Event, NoticeLevel};
use crate::provider::{EventStream, ProviderError, Request};
use crate::tool_vocab::ToolSchema;

/// The wait before the one retry of a refused connection to this machine.
const LOCAL_RETRY: Duration = Duration::from_millis(500);

/// Sends `messages` (the budget step's view of the conversation) with `tools`, retrying
/// failures before the first byte with backoff, waiting `max_retry_wait_secs` in all at
/// most: a wait that would pass it (a long Retry-After) ends the retries at once.
pub(super) async fn send(
    st: &AgentState,
    messages: &[Message],
    tools: &[ToolSchema],
) -> Result<EventStream, ProviderError> {
    let config = st.config();
    let base = Duration::from_millis(config.retry_base_delay_ms);
    let budget = Duration::from_secs(config.max_retry_wait_secs);
    let mut waited = Duration::ZERO;
    let mut attempt = 0;
    loop {
        let req = Request {
            model: st.model(),
            system: st.system_prompt(),
            environment: st.environment(),
            messages,
            tools,
            stop: &[],
            max_output_tokens: Some(st.budget().reserve()),
        };
        match st.provider().stream(req).await {
            Ok(s) => return Ok(s),
            // Nothing listens on this machine: one quick look again (a server that is
            // just starting), then the error, not the backoff meant for a busy server.
            Err(ProviderError::NothingListening { .. }) if attempt == 0 && config.max_retries > 0 => {
                attempt += 1;
                tokio::time::sleep(LOCAL_RETRY).await;
            }
            Err(e) if e.is_retryable() && attempt < config.max_retries => {
                attempt += 1;
                let wait = crate::backoff::delay(attempt, base, crate::backoff::MAX_BACKOFF, e.retry_after());
                if waited + wait > budget {
                    st.notice(
                        NoticeLevel::Warning,
                        format!(
                            "not retrying: waiting {:.0} s more would pass max_retry_wait_secs ({} s)",
                            wait.as_secs_f64().ceil(),
                            budget.as_secs()
                        ),
                    );
                    return Err(e);
                }
                waited += wait;
                count_down(st, attempt, wait, &e.to_string()).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Waits `wait` before attempt `attempt + 1`, saying so at once and then once a second
/// (the seconds left), so a long wait is never silent.
async fn count_down(st: &AgentState, attempt: u32, wait: Duration, reason: &str) {
    st.emit(Event::Retrying {
        attempt,
        in_secs: wait.as_secs_f64(),
        reason: reason.to_string(),
    });
    let mut left = wait;
    while !left.is_zero() {
        // Step to the next whole second left, then by seconds.
        let fraction = Duration::from_nanos(u64::from(left.subsec_nanos()));
        let step = if fraction.is_zero() {
            Duration::from_secs(1)
        } else {
            fraction
        };
        tokio::time::sleep(step).await;
        left = left.saturating_sub(step);
        if left >= Duration::from_secs(1) {
            st.emit(Event::Retrying {
                attempt,
                in_secs: left.as_secs_f64(),
                reason: reason.to_string(),
            });
        }
    }
}
