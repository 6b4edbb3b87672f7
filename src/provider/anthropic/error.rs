//! How Anthropic words a failure (`{"type":"error","error":{"type":…,"message":…}}`),
//! over HTTP and inside the stream. Reading only: `status` turns it into a
//! `ProviderError`.

use serde_json::Value;

use crate::provider::status::{Kind, VendorError};

/// HTTP status Anthropic uses for `overloaded_error`.
pub const OVERLOADED: u16 = 529;

/// An error object (`{"type", "message"}`), over HTTP or inside the stream.
pub fn object(error: &Value) -> VendorError {
    let code = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    let kind = match code.as_str() {
        "authentication_error" | "permission_error" => Some(Kind::Auth),
        "not_found_error" => Some(Kind::NotFound),
        "rate_limit_error" => Some(Kind::RateLimited),
        "request_too_large" => Some(Kind::ContextLength),
        "overloaded_error" | "api_error" => Some(Kind::Server),
        _ => None,
    };
    VendorError {
        status: Some(if code == "overloaded_error" {
            OVERLOADED
        } else {
            500
        }),
        message,
        code,
        kind,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderError;
    use crate::provider::status;

    fn from_body(code: u16, retry_after: Option<f64>, body: &str) -> ProviderError {
        status::test_map(
            code,
            retry_after,
            body,
            object,
            ("claude-x", "ANTHROPIC_API_KEY", "sk-ant-secret"),
        )
    }

    fn stream_error(error: &Value, produced: bool) -> ProviderError {
        status::in_stream(&object(error), produced)
    }

    fn body(kind: &str, msg: &str) -> String {
        serde_json::json!({"type": "error", "error": {"type": kind, "message": msg}}).to_string()
    }

    #[test]
    fn http_errors_become_clear_kinds() {
        let e = from_body(401, None, &body("authentication_error", "invalid x-api-key"));
        assert!(e.to_string().contains("$ANTHROPIC_API_KEY"), "{e}");
        assert!(!e.is_retryable());
        let e = from_body(404, None, &body("not_found_error", "model: claude-nope"));
        assert!(
            matches!(e, ProviderError::UnknownModel { .. }) && e.to_string().contains("claude-x"),
            "{e}"
        );
        let e = from_body(
            400,
            None,
            &body(
                "invalid_request_error",
                "prompt is too long: 208310 tokens > 200000 maximum",
            ),
        );
        assert_eq!(
            e,
            ProviderError::ContextLength {
                requested: Some(208_310),
                window: Some(200_000),
                detail: ": prompt is too long: 208310 tokens > 200000 maximum".into()
            }
        );
        let e = from_body(
            400,
            None,
            &body(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API.",
            ),
        );
        assert!(
            matches!(e, ProviderError::QuotaExhausted { .. }) && e.to_string().contains("ANTHROPIC_API_KEY"),
            "{e}"
        );
        let e = from_body(529, None, &body("overloaded_error", "Overloaded"));
        assert!(
            e.is_retryable() && e.to_string().contains("overloaded_error"),
            "{e}"
        );
        let e = from_body(429, Some(3.0), &body("rate_limit_error", "slow down"));
        assert_eq!(e.retry_after(), Some(3.0));
        let e = from_body(400, None, &body("invalid_request_error", "bad sk-ant-secret"));
        assert!(!e.to_string().contains("sk-ant-secret"), "{e}");
    }

    #[test]
    fn stream_errors_are_retryable_only_before_output() {
        let overloaded = serde_json::json!({"type": "overloaded_error", "message": "Overloaded"});
        assert!(stream_error(&overloaded, false).is_retryable());
        let after = stream_error(&overloaded, true);
        assert!(!after.is_retryable());
        assert_eq!(after, ProviderError::Api("Overloaded (overloaded_error)".into()));
    }
}
