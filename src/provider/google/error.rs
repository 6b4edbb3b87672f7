//! How Gemini words a failure (`{"error":{"code","message","status","details"}}`,
//! sometimes in an array), over HTTP and inside the stream, with the `RetryInfo` hint.
//! Reading only: `status` turns it into a `ProviderError`.

use serde_json::Value;

use crate::provider::status::{Kind, VendorError};

/// `"31s"`, `"1.5s"` → seconds.
pub fn parse_delay(d: &str) -> Option<f64> {
    d.trim()
        .strip_suffix('s')
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
}

/// A Google RPC error object, over HTTP or inside the stream.
pub fn object(error: &Value) -> VendorError {
    let details = error.get("details").and_then(Value::as_array);
    let detail = |field: &str| {
        details
            .into_iter()
            .flatten()
            .find_map(|d| d.get(field).and_then(Value::as_str))
            .map(str::to_string)
    };
    let code = error
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let reason = detail("reason").unwrap_or_default();
    let kind = match code.as_str() {
        _ if reason == "API_KEY_INVALID" => Some(Kind::Auth),
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => Some(Kind::Auth),
        "NOT_FOUND" => Some(Kind::NotFound),
        "RESOURCE_EXHAUSTED" => Some(Kind::RateLimited),
        "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED" => Some(Kind::Server),
        _ => None,
    };
    let number = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok());
    VendorError {
        message: error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string()),
        tags: reason,
        kind,
        status: Some(number.filter(|c| *c != 0).unwrap_or(503)),
        retry_after: detail("retryDelay").and_then(|d| parse_delay(&d)),
        code,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderError;
    use crate::provider::status;
    use serde_json::json;

    fn from_body(code: u16, retry_after: Option<f64>, body: &str) -> ProviderError {
        status::test_map(
            code,
            retry_after,
            body,
            object,
            ("gemini-x", "GEMINI_API_KEY", "AIzaSecretKey"),
        )
    }

    fn stream_error(error: &Value, produced: bool) -> ProviderError {
        status::in_stream(&object(error), produced)
    }

    fn body(code: u16, status: &str, msg: &str, details: Value) -> String {
        json!({"error": {"code": code, "message": msg, "status": status, "details": details}}).to_string()
    }

    #[test]
    fn http_errors_become_clear_kinds() {
        let e = from_body(
            400,
            None,
            &body(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]),
            ),
        );
        assert!(
            matches!(e, ProviderError::Auth { .. }) && e.to_string().contains("$GEMINI_API_KEY"),
            "{e}"
        );
        let e = from_body(
            429,
            None,
            &format!(
                "[{}]",
                body(
                    429,
                    "RESOURCE_EXHAUSTED",
                    "You exceeded your current quota.",
                    json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]),
                )
            ),
        );
        assert!(
            e.is_retryable() && e.to_string().contains("quota exhausted"),
            "{e}"
        );
        assert_eq!(e.retry_after(), Some(31.0));
        let e = from_body(
            503,
            None,
            &body(503, "UNAVAILABLE", "The model is overloaded.", json!([])),
        );
        assert!(e.is_retryable(), "{e}");
        let e = from_body(
            400,
            None,
            &body(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                json!([]),
            ),
        );
        assert!(matches!(e, ProviderError::ContextLength { .. }), "{e}");
        let e = from_body(
            404,
            None,
            &body(
                404,
                "NOT_FOUND",
                "models/gemini-x is not found for API version v1beta",
                json!([]),
            ),
        );
        assert!(matches!(e, ProviderError::UnknownModel { .. }), "{e}");
    }

    #[test]
    fn stream_errors_before_output_are_retryable() {
        let err = json!({"code": 503, "message": "overloaded", "status": "UNAVAILABLE"});
        assert!(stream_error(&err, false).is_retryable());
        assert!(!stream_error(&err, true).is_retryable());
        assert_eq!(parse_delay("1.5s"), Some(1.5));
    }
}
