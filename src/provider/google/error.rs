//! Gemini error bodies (`{"error":{"code","message","status","details"}}`, sometimes in
//! an array), over HTTP and inside the stream, as `ProviderError`s with clear messages and
//! the `RetryInfo` hint. Knows nothing else.

use std::time::Duration;

use reqwest::Response;
use serde_json::Value;

use crate::provider::ProviderError;
use crate::provider::http::{self, ErrorContext};

/// The fields of a Google RPC error object.
struct Status {
    code: u16,
    status: String,
    message: String,
    reason: String,
    retry_delay: Option<f64>,
}

fn status(error: &Value) -> Status {
    let details = error.get("details").and_then(Value::as_array);
    let detail = |field: &str| {
        details
            .into_iter()
            .flatten()
            .find_map(|d| d.get(field).and_then(Value::as_str))
            .map(str::to_string)
    };
    Status {
        code: error.get("code").and_then(Value::as_u64).unwrap_or(0) as u16,
        status: error
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string()),
        reason: detail("reason").unwrap_or_default(),
        retry_delay: detail("retryDelay").and_then(|d| parse_delay(&d)),
    }
}

/// `"31s"`, `"1.5s"` → seconds.
pub fn parse_delay(d: &str) -> Option<f64> {
    d.trim()
        .strip_suffix('s')
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
}

fn is_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    (m.contains("token") && (m.contains("exceeds the maximum") || m.contains("exceeds the limit")))
        || m.contains("context window")
        || m.contains("too many tokens")
}

fn error_object(body: &Value) -> Option<&Value> {
    match body {
        Value::Array(items) => items.first().and_then(|i| i.get("error")),
        other => other.get("error"),
    }
}

/// An `error` object inside the stream: retryable kinds before any output are returned
/// as retryable errors; after output, the partial answer is kept.
pub fn stream_error(error: &Value, produced: bool) -> ProviderError {
    let s = status(error);
    let text = format!(
        "{} ({})",
        s.message,
        if s.status.is_empty() { "error" } else { &s.status }
    );
    match s.status.as_str() {
        "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED" if !produced => ProviderError::Server {
            status: if s.code == 0 { 503 } else { s.code },
            message: text,
            retry_after: s.retry_delay,
        },
        "RESOURCE_EXHAUSTED" if !produced => ProviderError::RateLimited {
            retry_after: s.retry_delay,
            detail: format!(": {text}"),
        },
        _ if is_context_length(&s.message) => ProviderError::ContextLength {
            detail: format!(": {}", s.message),
        },
        _ => ProviderError::Api(text),
    }
}

/// Maps a non-2xx response to an error, reading at most 64 KiB of its body.
pub async fn from_response(resp: Response, ctx: &ErrorContext, idle: Duration) -> ProviderError {
    let code = resp.status().as_u16();
    let retry_after = http::retry_after(resp.headers());
    let body = http::read_capped(resp, 64 * 1024, idle).await;
    from_body(code, retry_after, &body, ctx)
}

/// The error for HTTP `code` with `body` (pure, for tests).
pub fn from_body(code: u16, retry_after: Option<f64>, body: &str, ctx: &ErrorContext) -> ProviderError {
    let parsed: Value = serde_json::from_str(body.trim()).unwrap_or(Value::Null);
    let s = match error_object(&parsed) {
        Some(e) => status(e),
        None => Status {
            code,
            status: String::new(),
            message: http::server_message(body),
            reason: String::new(),
            retry_delay: None,
        },
    };
    let message = http::scrub(&s.message, ctx.secret.as_deref());
    let detail = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    let retry_after = s.retry_delay.or(retry_after);
    let auth = s.reason == "API_KEY_INVALID"
        || matches!(s.status.as_str(), "UNAUTHENTICATED" | "PERMISSION_DENIED")
        || message.contains("API key not valid");
    if auth || code == 401 || code == 403 {
        return ProviderError::Auth {
            status: code,
            env_var: ctx.api_key_env.clone(),
            detail: if ctx.key_set {
                detail
            } else {
                format!(" (it is not set){detail}")
            },
        };
    }
    match (code, s.status.as_str()) {
        (404, _) | (_, "NOT_FOUND") if message.contains("models/") => ProviderError::UnknownModel {
            model: ctx.model.clone(),
            detail,
        },
        (404, _) | (_, "NOT_FOUND") => ProviderError::NotFound {
            model: ctx.model.clone(),
            url: ctx.url.clone(),
            detail,
        },
        (429, _) | (_, "RESOURCE_EXHAUSTED") => ProviderError::RateLimited {
            retry_after,
            detail: if message.to_ascii_lowercase().contains("quota") {
                format!(" (quota exhausted for the key in ${}){detail}", ctx.api_key_env)
            } else {
                detail
            },
        },
        (500..=599, _) | (_, "UNAVAILABLE") | (_, "INTERNAL") => ProviderError::Server {
            status: code,
            message: if s.status.is_empty() {
                or_none(message)
            } else {
                format!("{} ({})", or_none(message), s.status)
            },
            retry_after,
        },
        _ if is_context_length(&message) => ProviderError::ContextLength { detail },
        _ => ProviderError::Rejected {
            status: code,
            message: or_none(message),
        },
    }
}

fn or_none(m: String) -> String {
    if m.is_empty() { "no message".to_string() } else { m }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> ErrorContext {
        ErrorContext {
            model: "gemini-x".into(),
            url: "http://h/v1beta/models/gemini-x:streamGenerateContent".into(),
            api_key_env: "GEMINI_API_KEY".into(),
            key_set: true,
            secret: Some("AIzaSecretKey".into()),
        }
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
            &ctx(),
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
            &ctx(),
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
            &ctx(),
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
            &ctx(),
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
            &ctx(),
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
