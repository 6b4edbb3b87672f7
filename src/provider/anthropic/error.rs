//! Anthropic error bodies (`{"type":"error","error":{"type":…,"message":…}}`), over HTTP
//! and inside the stream, as `ProviderError`s with clear messages. Knows nothing else.

use std::time::Duration;

use reqwest::Response;
use serde_json::Value;

use crate::provider::ProviderError;
use crate::provider::http::{self, ErrorContext};

/// HTTP status Anthropic uses for `overloaded_error`.
pub const OVERLOADED: u16 = 529;

fn parts(error: &Value) -> (String, String) {
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    (kind, message)
}

fn is_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("prompt is too long") || m.contains("context window") || m.contains("too many total tokens")
}

fn is_quota(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("credit balance") || m.contains("billing") || m.contains("usage limit")
}

/// An `error` event inside the stream. Overload and server errors before any output
/// are retryable (returned as `Server`); after output, the partial answer is kept.
pub fn stream_error(error: &Value, produced: bool) -> ProviderError {
    let (kind, message) = parts(error);
    match kind.as_str() {
        "overloaded_error" | "api_error" if !produced => ProviderError::Server {
            status: if kind == "overloaded_error" {
                OVERLOADED
            } else {
                500
            },
            message: format!("{message} ({kind})"),
            retry_after: None,
        },
        "invalid_request_error" if is_context_length(&message) => ProviderError::ContextLength {
            detail: format!(": {message}"),
        },
        _ if kind.is_empty() => ProviderError::Api(message),
        _ => ProviderError::Api(format!("{message} ({kind})")),
    }
}

/// Maps a non-2xx response to an error, reading at most 64 KiB of its body.
pub async fn from_response(resp: Response, ctx: &ErrorContext, idle: Duration) -> ProviderError {
    let status = resp.status().as_u16();
    let retry_after = http::retry_after(resp.headers());
    let body = http::read_capped(resp, 64 * 1024, idle).await;
    from_body(status, retry_after, &body, ctx)
}

/// The error for `status` with `body` (pure, for tests).
pub fn from_body(status: u16, retry_after: Option<f64>, body: &str, ctx: &ErrorContext) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_str(body.trim()).ok();
    let (kind, message) = match parsed.as_ref().and_then(|v| v.get("error")) {
        Some(e) => parts(e),
        None => (String::new(), http::server_message(body)),
    };
    let message = http::scrub(&message, ctx.secret.as_deref());
    let detail = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    match (status, kind.as_str()) {
        (_, "authentication_error") | (401, _) | (403, _) | (_, "permission_error") => ProviderError::Auth {
            status,
            env_var: ctx.api_key_env.clone(),
            detail: if ctx.key_set {
                detail
            } else {
                format!(" (it is not set){detail}")
            },
        },
        (_, "not_found_error") | (404, _) if message.contains("model") => ProviderError::UnknownModel {
            model: ctx.model.clone(),
            detail,
        },
        (_, "not_found_error") | (404, _) => ProviderError::NotFound {
            model: ctx.model.clone(),
            url: ctx.url.clone(),
            detail,
        },
        (_, "rate_limit_error") | (429, _) => ProviderError::RateLimited { retry_after, detail },
        (413, _) | (_, "request_too_large") => ProviderError::ContextLength { detail },
        (400, _) if is_context_length(&message) => ProviderError::ContextLength { detail },
        (400, _) if is_quota(&message) => ProviderError::QuotaExhausted {
            detail: format!(" for the key in ${}{detail}", ctx.api_key_env),
        },
        (500..=599, _) | (_, "overloaded_error") | (_, "api_error") => ProviderError::Server {
            status,
            message: if kind.is_empty() {
                or_none(message)
            } else {
                format!("{} ({kind})", or_none(message))
            },
            retry_after,
        },
        _ => ProviderError::Rejected {
            status,
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

    fn ctx() -> ErrorContext {
        ErrorContext {
            model: "claude-x".into(),
            url: "http://h/v1/messages".into(),
            api_key_env: "ANTHROPIC_API_KEY".into(),
            key_set: true,
            secret: Some("sk-ant-secret".into()),
        }
    }

    fn body(kind: &str, msg: &str) -> String {
        serde_json::json!({"type": "error", "error": {"type": kind, "message": msg}}).to_string()
    }

    #[test]
    fn http_errors_become_clear_kinds() {
        let e = from_body(
            401,
            None,
            &body("authentication_error", "invalid x-api-key"),
            &ctx(),
        );
        assert!(e.to_string().contains("$ANTHROPIC_API_KEY"), "{e}");
        assert!(!e.is_retryable());
        let e = from_body(404, None, &body("not_found_error", "model: claude-nope"), &ctx());
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
            &ctx(),
        );
        assert_eq!(
            e,
            ProviderError::ContextLength {
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
            &ctx(),
        );
        assert!(
            matches!(e, ProviderError::QuotaExhausted { .. }) && e.to_string().contains("ANTHROPIC_API_KEY"),
            "{e}"
        );
        let e = from_body(529, None, &body("overloaded_error", "Overloaded"), &ctx());
        assert!(
            e.is_retryable() && e.to_string().contains("overloaded_error"),
            "{e}"
        );
        let e = from_body(429, Some(3.0), &body("rate_limit_error", "slow down"), &ctx());
        assert_eq!(e.retry_after(), Some(3.0));
        let e = from_body(
            400,
            None,
            &body("invalid_request_error", "bad sk-ant-secret"),
            &ctx(),
        );
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
