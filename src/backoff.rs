//! The one backoff policy: exponential from a base, bounded, honouring a server's
//! Retry-After. Used by the agent (requests that failed before their first byte) and the
//! store writer (an unavailable database). Pure.

use std::time::Duration;

/// Longest wait between two provider attempts when the server gave no Retry-After.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Longest Retry-After we honour.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// How long to wait before attempt `attempt + 1` (`attempt` starts at 1): `base` doubled
/// per attempt, at most `max`; a Retry-After (seconds) wins, up to `MAX_RETRY_AFTER`.
pub(crate) fn delay(attempt: u32, base: Duration, max: Duration, retry_after: Option<f64>) -> Duration {
    if let Some(secs) = retry_after {
        return Duration::from_secs_f64(secs.clamp(0.0, MAX_RETRY_AFTER.as_secs_f64()));
    }
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    base.saturating_mul(factor).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_and_caps_and_honours_retry_after() {
        let b = Duration::from_millis(500);
        assert_eq!(delay(1, b, MAX_BACKOFF, None), Duration::from_millis(500));
        assert_eq!(delay(3, b, MAX_BACKOFF, None), Duration::from_secs(2));
        assert_eq!(delay(40, b, MAX_BACKOFF, None), MAX_BACKOFF);
        assert_eq!(delay(4, b, Duration::from_secs(3), None), Duration::from_secs(3));
        assert_eq!(delay(0, b, MAX_BACKOFF, None), b);
        assert_eq!(delay(1, b, MAX_BACKOFF, Some(0.25)), Duration::from_millis(250));
        assert_eq!(delay(1, b, MAX_BACKOFF, Some(1e9)), MAX_RETRY_AFTER);
    }
}
