//! From a vendor's failure to a `ProviderError`, once for every wire format: each format
//! only reads its error body into a `VendorError` (its own words and codes); the status,
//! the words every vendor shares (the one list that recognises a context-length refusal,
//! with the token counts it names) and the retry hints do the rest, here. Pure: no IO.

use serde_json::Value;

use super::error::ProviderError;

/// What an error message may name about the endpoint (never the key itself).
#[derive(Clone, Debug)]
pub struct ErrorContext {
    pub model: String,
    /// Passwords hidden.
    pub url: String,
    pub api_key_env: String,
    pub key_set: bool,
    /// Scrubbed from any server message that echoes it.
    pub secret: Option<String>,
}

/// What a vendor's code says a failure is, when the code is enough to tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Auth,
    NotFound,
    UnknownModel,
    RateLimited,
    /// Overloaded or failing on its side: retryable.
    Server,
    ContextLength,
    Quota,
    ContentFilter,
}

/// A vendor's error body, read by its wire format.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VendorError {
    /// The server's own words (not yet scrubbed).
    pub message: String,
    /// The vendor's code for it, as sent (`overloaded_error`, `UNAVAILABLE`,
    /// `context_length_exceeded`); shown after the message of an error it names.
    pub code: String,
    /// Any other codes the body names (an error `type`, a reason), for recognising the
    /// kind; never shown.
    pub tags: String,
    /// What the vendor's code says the failure is.
    pub kind: Option<Kind>,
    /// A status the body itself gives (for errors that arrive inside a stream).
    pub status: Option<u16>,
    /// A retry hint inside the body (Gemini's `RetryInfo`), in seconds.
    pub retry_after: Option<f64>,
    /// Token counts the body names in fields of their own (llama.cpp's `n_prompt_tokens`
    /// and `n_ctx`): the request's, and the window.
    pub tokens: (Option<u64>, Option<u64>),
}

/// The words of a context-length refusal, in any vendor's message or code.
const CONTEXT_WORDS: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "exceed_context_size",
    "exceeds the available context size",
    "exceeds the context",
    "context size",
    "context window",
    "context length",
    "context is full",
    "context full",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "too many total tokens",
    "input token count",
    "exceeds the maximum number of tokens",
    "string_above_max_length",
];

/// The words of an exhausted account (not "quota" alone: Gemini's retryable
/// `RESOURCE_EXHAUSTED` says "exceeded your quota"); a 400 may also say it as
/// `QUOTA_400_WORDS` (a 429 that mentions billing is a rate limit).
const QUOTA_WORDS: &[&str] = &["insufficient_quota", "credit balance"];
const QUOTA_400_WORDS: &[&str] = &["billing", "usage limit"];

/// The words of a content-filter refusal.
const FILTER_WORDS: &[&str] = &[
    "content_filter",
    "content_policy",
    "content management policy",
    "safety system",
];

/// What the words of a message (and code) say the failure is.
fn kind_of_words(message: &str, code: &str, status: Option<u16>) -> Option<Kind> {
    let m = message.to_ascii_lowercase();
    let c = code.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| m.contains(w) || c.contains(w));
    let token_limit =
        m.contains("token") && (m.contains("exceeds the maximum") || m.contains("exceeds the limit"));
    if any(CONTEXT_WORDS) || token_limit {
        return Some(Kind::ContextLength);
    }
    if any(QUOTA_WORDS) || (status == Some(400) && any(QUOTA_400_WORDS)) {
        return Some(Kind::Quota);
    }
    if any(FILTER_WORDS) {
        return Some(Kind::ContentFilter);
    }
    if m.contains("api key not valid") {
        return Some(Kind::Auth);
    }
    let model_missing = c.contains("model_not_found")
        || (m.contains("model") && (m.contains("does not exist") || m.contains("not found")));
    if model_missing && matches!(status, None | Some(400) | Some(404)) {
        return Some(Kind::UnknownModel);
    }
    None
}

fn codes(v: &VendorError) -> String {
    format!("{} {}", v.code, v.tags)
}

fn kind_of_status(status: u16) -> Option<Kind> {
    match status {
        401 | 403 => Some(Kind::Auth),
        402 => Some(Kind::Quota),
        404 => Some(Kind::NotFound),
        413 => Some(Kind::ContextLength),
        429 => Some(Kind::RateLimited),
        500..=599 => Some(Kind::Server),
        _ => None,
    }
}

/// The request's tokens and the window a context-length refusal names, when it does
/// ("resulted in 22383 tokens", "request (22383 tokens) … context size (8192 tokens)",
/// "prompt is too long: 208310 tokens > 200000", "input token count (1200000) exceeds
/// … (1048576)"): OpenAI names the window first, the others the request first.
pub fn refused_tokens(message: &str) -> (Option<u64>, Option<u64>) {
    let numbers: Vec<u64> = message
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| s.len() >= 3)
        .filter_map(|s| s.parse().ok())
        .collect();
    if message.to_ascii_lowercase().contains("maximum context length is") {
        (numbers.get(1).copied(), numbers.first().copied())
    } else {
        (numbers.first().copied(), numbers.get(1).copied())
    }
}

/// The typed context-length refusal: the counts the body gives, else those its words name.
pub fn context_length(v: &VendorError, message: &str) -> ProviderError {
    let (requested, window) = refused_tokens(message);
    ProviderError::ContextLength {
        requested: v.tokens.0.or(requested),
        window: v.tokens.1.or(window),
        detail: colon(message),
    }
}

fn colon(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

fn or_none(message: &str) -> String {
    if message.is_empty() {
        "no message".to_string()
    } else {
        message.to_string()
    }
}

/// `message (code)`, unless the message names the code already.
fn with_code(message: &str, code: &str) -> String {
    if code.is_empty() || message.contains(code) {
        or_none(message)
    } else {
        format!("{} ({code})", or_none(message))
    }
}

/// The error for a non-2xx answer with status `status`, `Retry-After` `retry_after`, and
/// the body its wire format read as `v`.
pub fn from_status(
    status: u16,
    retry_after: Option<f64>,
    v: &VendorError,
    ctx: &ErrorContext,
) -> ProviderError {
    let message = scrub(&v.message, ctx.secret.as_deref());
    let detail = colon(&message);
    let retry_after = v.retry_after.or(retry_after);
    let mut kind = v
        .kind
        .or_else(|| kind_of_words(&message, &codes(v), Some(status)))
        .or_else(|| kind_of_status(status));
    if kind == Some(Kind::NotFound) && message.to_ascii_lowercase().contains("model") {
        kind = Some(Kind::UnknownModel);
    }
    match kind {
        Some(Kind::Auth) => ProviderError::Auth {
            status,
            env_var: ctx.api_key_env.clone(),
            detail: if ctx.key_set {
                detail
            } else {
                format!(" (it is not set){detail}")
            },
        },
        // Say where the model was looked for, as a plain 404 does.
        Some(Kind::UnknownModel) => ProviderError::UnknownModel {
            model: ctx.model.clone(),
            detail: format!("{detail} (endpoint {})", ctx.url),
        },
        Some(Kind::NotFound) => ProviderError::NotFound {
            model: ctx.model.clone(),
            url: ctx.url.clone(),
            detail,
        },
        Some(Kind::RateLimited) => ProviderError::RateLimited {
            retry_after,
            detail: if message.to_ascii_lowercase().contains("quota") {
                format!(" (quota exhausted for the key in ${}){detail}", ctx.api_key_env)
            } else {
                detail
            },
        },
        Some(Kind::Server) => ProviderError::Server {
            status,
            message: with_code(&message, &v.code),
            retry_after,
        },
        Some(Kind::ContextLength) => context_length(v, &message),
        Some(Kind::Quota) => ProviderError::QuotaExhausted {
            detail: format!(" for the key in ${}{detail}", ctx.api_key_env),
        },
        Some(Kind::ContentFilter) => ProviderError::ContentFiltered { detail },
        None => ProviderError::Rejected {
            status,
            message: or_none(&message),
        },
    }
}

/// The error for an error event inside a stream. Overload, server and rate-limit errors
/// before any output are retryable (`produced` false); after output the partial answer
/// is kept, so they end the stream like any other.
pub fn in_stream(v: &VendorError, produced: bool) -> ProviderError {
    let kind = v.kind.or_else(|| kind_of_words(&v.message, &codes(v), None));
    let text = with_code(&v.message, &v.code);
    match kind {
        Some(Kind::Server) if !produced => ProviderError::Server {
            status: v.status.unwrap_or(500),
            message: text,
            retry_after: v.retry_after,
        },
        Some(Kind::RateLimited) if !produced => ProviderError::RateLimited {
            retry_after: v.retry_after,
            detail: format!(": {text}"),
        },
        Some(Kind::ContextLength) => context_length(v, &v.message),
        Some(Kind::Quota) => ProviderError::QuotaExhausted {
            detail: colon(&v.message),
        },
        Some(Kind::ContentFilter) => ProviderError::ContentFiltered {
            detail: colon(&v.message),
        },
        Some(Kind::UnknownModel) => ProviderError::UnknownModel {
            model: String::new(),
            detail: colon(&v.message),
        },
        _ => ProviderError::Api(text),
    }
}

/// An error body whose error object is `{"error": …}` (or the first of an array of
/// them, as Gemini sends), read by `object`; any other body says what its text says.
/// Token counts in fields of their own (`token_fields`) are read from the error object,
/// else from the body's top level.
pub fn read_body(body: &str, object: impl Fn(&Value) -> VendorError) -> VendorError {
    let parsed: Value = serde_json::from_str(body.trim()).unwrap_or(Value::Null);
    let error = match &parsed {
        Value::Array(items) => items.first().and_then(|i| i.get("error")),
        other => other.get("error"),
    };
    let mut v = match error {
        Some(e) => object(e),
        None => VendorError {
            message: server_message(body),
            ..Default::default()
        },
    };
    let (inner, outer) = (error.map(token_fields).unwrap_or_default(), token_fields(&parsed));
    v.tokens = (
        v.tokens.0.or(inner.0).or(outer.0),
        v.tokens.1.or(inner.1).or(outer.1),
    );
    v
}

/// Fields that name a request's tokens (llama.cpp `n_prompt_tokens`, …).
const REQUEST_FIELDS: &[&str] = &["n_prompt_tokens", "prompt_tokens", "requested_tokens"];
/// Fields that name a server's context window (llama.cpp `n_ctx`, `max_context_length`,
/// vLLM's `max_model_len`, …).
const WINDOW_FIELDS: &[&str] = &[
    "n_ctx",
    "n_ctx_slot",
    "max_context_length",
    "context_length",
    "context_window",
    "max_model_len",
];

/// The request's tokens and the window an error object names in fields of their own.
pub fn token_fields(v: &Value) -> (Option<u64>, Option<u64>) {
    let first = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| v.get(*k).and_then(Value::as_u64).filter(|n| *n > 0))
    };
    (first(REQUEST_FIELDS), first(WINDOW_FIELDS))
}

/// The human part of an error body: `{"error": {"message": …}}`, `{"error": "…"}`,
/// `{"message": …}`, `{"detail": …}`, or the text itself (one line, at most 300
/// characters).
pub fn server_message(body: &str) -> String {
    let trimmed = body.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        let err = v.get("error").unwrap_or(&v);
        if let Some(s) = err.as_str() {
            return s.to_string();
        }
        if let Some(s) = err.get("message").and_then(Value::as_str) {
            return s.to_string();
        }
        if let Some(s) = v.get("detail").and_then(Value::as_str) {
            return s.to_string();
        }
    }
    let line: String = trimmed.chars().take(300).collect();
    line.replace('\n', " ")
}

/// Removes the key, and anything that looks like one, from text shown to the user.
pub fn scrub(text: &str, secret: Option<&str>) -> String {
    let mut s = text.to_string();
    if let Some(key) = secret.filter(|k| k.len() >= 4) {
        s = s.replace(key, "[redacted]");
    }
    s.split(' ')
        .map(|w| {
            if w.starts_with("sk-") && w.len() > 8 {
                "sk-[redacted]"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The error a vendor's error body maps to, for tests of the vendors' readings: status
/// `code`, read by `object`, at an endpoint for `model` whose key is `api_key_env`
/// (set, holding `secret`).
#[cfg(test)]
pub fn test_map(
    code: u16,
    retry_after: Option<f64>,
    body: &str,
    object: fn(&Value) -> VendorError,
    (model, api_key_env, secret): (&str, &str, &str),
) -> ProviderError {
    let ctx = ErrorContext {
        model: model.into(),
        url: format!("http://h/v1/models/{model}"),
        api_key_env: api_key_env.into(),
        key_set: true,
        secret: Some(secret.into()),
    };
    from_status(code, retry_after, &read_body(body, object), &ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_messages_are_extracted() {
        assert_eq!(
            server_message(r#"{"error":{"message":"bad model","type":"x"}}"#),
            "bad model"
        );
        assert_eq!(server_message(r#"{"error":"nope"}"#), "nope");
        assert_eq!(server_message("plain\ntext"), "plain text");
    }

    #[test]
    fn keys_are_scrubbed() {
        let s = scrub("Incorrect API key provided: sk-proj-abcdef123. See docs", None);
        assert!(!s.contains("abcdef123"), "{s}");
        let s = scrub("key=mysecretkey", Some("mysecretkey"));
        assert_eq!(s, "key=[redacted]");
    }

    /// The refusals every vendor words differently (moved from the agent, which now only
    /// reads the typed error).
    #[test]
    fn every_vendor_context_error_is_recognised() {
        let ctx = ErrorContext {
            model: "m".into(),
            url: "http://h/v1".into(),
            api_key_env: "K".into(),
            key_set: true,
            secret: None,
        };
        let bodies = [
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 22383 tokens. Please reduce the length of the messages.",
            "request (22383 tokens) exceeds the available context size (8192 tokens), try increasing it",
            "prompt is too long: 208310 tokens > 200000 maximum",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        ];
        for (body, n) in bodies.iter().zip([22383, 22383, 208310, 1200000]) {
            let v = VendorError {
                message: body.to_string(),
                ..Default::default()
            };
            for e in [from_status(400, None, &v, &ctx), in_stream(&v, true)] {
                let ProviderError::ContextLength {
                    requested,
                    window,
                    detail,
                } = &e
                else {
                    panic!("{body}: {e:?}");
                };
                assert_eq!(*requested, Some(n), "{body}");
                assert!(window.is_some_and(|w| w < n), "{body}");
                assert!(detail.contains(body), "{detail}");
                assert!(!e.is_retryable());
            }
        }
        let v = VendorError {
            message: "invalid model".into(),
            ..Default::default()
        };
        assert!(matches!(
            from_status(400, None, &v, &ctx),
            ProviderError::Rejected { .. }
        ));
        // Windows named in fields of their own, in the error object or at the top level.
        let c = |body: &str| {
            test_map(
                400,
                None,
                body,
                crate::provider::openai::error::object,
                ("m", "K", "s"),
            )
        };
        for (body, want) in [
            (
                r#"{"error":{"message":"context window exceeded","max_context_length":4096}}"#,
                4096,
            ),
            (
                r#"{"error":{"message":"context length exceeded","context_length":3000,"prompt_tokens":5000}}"#,
                3000,
            ),
            (r#"{"detail":"too many tokens","max_model_len":2048}"#, 2048),
        ] {
            assert!(
                matches!(c(body), ProviderError::ContextLength { window: Some(w), .. } if w == want),
                "{body}: {:?}",
                c(body)
            );
        }
        // Counts the body gives in fields of their own win over the words.
        let v = VendorError {
            message: "the request exceeds the available context size".into(),
            tokens: (Some(600_000), Some(8192)),
            ..Default::default()
        };
        assert!(matches!(
            from_status(400, None, &v, &ctx),
            ProviderError::ContextLength {
                requested: Some(600_000),
                window: Some(8192),
                ..
            }
        ));
        // Either may be unknown.
        let v = VendorError {
            message: "prompt is too long".into(),
            ..Default::default()
        };
        assert!(matches!(
            from_status(413, None, &v, &ctx),
            ProviderError::ContextLength {
                requested: None,
                window: None,
                ..
            }
        ));
    }
}
