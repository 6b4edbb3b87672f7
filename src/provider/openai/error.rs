//! How OpenAI-style servers word a failure (`{"error": {"message", "type", "code"}}`,
//! also llama.cpp's `n_prompt_tokens` / `n_ctx`), over HTTP and inside a stream (the
//! Responses API shares it). Reading only: `status` turns it into a `ProviderError`.

use serde_json::Value;

use crate::provider::ProviderError;
use crate::provider::status::{self, VendorError};

/// An error object (`{"message", "type", "code"}`, or a bare string).
pub fn object(err: &Value) -> VendorError {
    let str_of = |k: &str| err.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| err.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| err.to_string());
    let code = match err.get("code") {
        Some(Value::String(c)) => c.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => str_of("type"),
    };
    VendorError {
        message,
        code,
        tags: format!("{} {}", str_of("type"), str_of("status")).to_ascii_lowercase(),
        tokens: status::token_fields(err),
        ..Default::default()
    }
}

/// An error object inside a stream, as its distinct kind when it is one.
pub fn in_stream(err: &Value) -> ProviderError {
    status::in_stream(&object(err), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_errors_become_distinct_kinds() {
        let c = |code, body: &str| {
            status::test_map(code, None, body, object, ("gpt-x", "OPENAI_API_KEY", "sk-x"))
        };
        let openai_ctx = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            c(400, openai_ctx),
            ProviderError::ContextLength {
                requested: Some(130_000),
                window: Some(128_000),
                ..
            }
        ));
        let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(matches!(c(429, quota), ProviderError::QuotaExhausted { .. }));
        let model = r#"{"error":{"message":"The model `gpt-x` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}"#;
        match c(404, model) {
            e @ ProviderError::UnknownModel { .. } => assert!(e.to_string().contains("gpt-x"), "{e}"),
            other => panic!("{other:?}"),
        }
        let filtered = r#"{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"code":"content_filter"}}"#;
        assert!(matches!(c(400, filtered), ProviderError::ContentFiltered { .. }));
        // A rate limit stays a rate limit (retryable), even when it mentions billing.
        let rate = r#"{"error":{"message":"Rate limit reached. Add a payment method at https://platform.openai.com/account/billing.","code":"rate_limit_exceeded"}}"#;
        let e = c(429, rate);
        assert!(
            matches!(e, ProviderError::RateLimited { .. }) && e.is_retryable(),
            "{e:?}"
        );
        let e = c(500, "oops");
        assert!(
            matches!(e, ProviderError::Server { status: 500, .. }) && e.is_retryable(),
            "{e:?}"
        );
        // llama.cpp names the counts in fields of their own.
        let llama = r#"{"error":{"code":400,"type":"exceed_context_size_error","message":"request (600000 tokens) exceeds the available context size (8192 tokens)","n_prompt_tokens":600000,"n_ctx":8192}}"#;
        assert!(matches!(
            c(400, llama),
            ProviderError::ContextLength {
                requested: Some(600_000),
                window: Some(8192),
                ..
            }
        ));
    }

    #[test]
    fn stream_errors_name_their_code() {
        let e = in_stream(&serde_json::json!({"message": "The server had an error", "type": "server_error"}));
        assert_eq!(
            e,
            ProviderError::Api("The server had an error (server_error)".into())
        );
        let e = in_stream(&serde_json::json!({"message": "too long", "code": "context_length_exceeded"}));
        assert!(matches!(e, ProviderError::ContextLength { .. }), "{e:?}");
    }
}
