//! HTTP plumbing shared by providers: the client, status → `ProviderError` mapping,
//! Retry-After, and an SSE `data:` stream with an idle timeout. Knows no wire format.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::Response;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::body::JsonBody;
use super::sse::SseDecoder;
use super::{ProviderError, Spec};

/// The SSE `data:` payloads of a response, in order; an `Err` ends it.
pub type DataStream = Pin<Box<dyn Stream<Item = Result<String, ProviderError>> + Send>>;

/// What an error message may name (never the key itself).
#[derive(Clone, Debug)]
pub struct ErrorContext {
    pub model: String,
    pub url: String,
    pub api_key_env: String,
    pub key_set: bool,
    /// Scrubbed from any server message that echoes it.
    pub secret: Option<String>,
}

/// A client tuned for streaming: connect timeout, no overall timeout, no Nagle. It never
/// follows a redirect: every request carries the key or the conversation (see
/// `super::screen`).
pub fn client(connect_timeout: Duration) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        .user_agent(concat!("ikigai/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ProviderError::Connect {
            url: String::new(),
            message: format!("cannot build the HTTP client: {}", root_cause(&e)),
        })
}

/// The innermost cause of an error, e.g. "Connection refused (os error 111)".
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// A failure to send the request or read its headers.
pub fn send_error(url: &str, e: &reqwest::Error) -> ProviderError {
    let message = if e.is_timeout() {
        "timed out connecting".to_string()
    } else {
        root_cause(e)
    };
    ProviderError::Connect {
        url: url.to_string(),
        message,
    }
}

/// Seconds from a `Retry-After` header (delta-seconds form), or OpenAI's `retry-after-ms`.
pub fn retry_after(headers: &HeaderMap) -> Option<f64> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        return Some((ms / 1000.0).max(0.0));
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .map(|s| s.max(0.0))
}

/// How the key travels: `Authorization: Bearer` (OpenAI kinds) or a named header
/// (`x-api-key`, `x-goog-api-key`).
#[derive(Clone, Copy, Debug)]
pub enum KeyHeader {
    Bearer,
    Named(&'static str),
}

/// Applies the key and the configured extra headers to a request.
pub fn authorize(
    mut builder: reqwest::RequestBuilder,
    spec: &Spec,
    key: KeyHeader,
) -> reqwest::RequestBuilder {
    if let Some(k) = &spec.api_key {
        builder = match key {
            KeyHeader::Bearer => builder.bearer_auth(k.expose()),
            KeyHeader::Named(name) => builder.header(name, k.expose()),
        };
    }
    for (name, value) in &spec.headers {
        builder = builder.header(name, value);
    }
    builder
}

/// POSTs a JSON body to `spec.url(path)` expecting a stream; refuses to send when the key
/// is missing, waits at most the idle timeout for the headers, and maps non-2xx answers.
pub async fn post(
    client: &reqwest::Client,
    spec: &Spec,
    path: &str,
    model: &str,
    body: impl Into<reqwest::Body>,
    key: KeyHeader,
) -> Result<Response, ProviderError> {
    if spec.missing_key() {
        return Err(ProviderError::MissingKey {
            env_var: spec.api_key_env.clone(),
        });
    }
    let url = spec.url(path);
    let builder = client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .body(body);
    let builder = authorize(builder, spec, key);
    let shown = crate::config::redact_url(&spec.base_url);
    let resp = match tokio::time::timeout(spec.idle, builder.send()).await {
        Err(_) => {
            return Err(ProviderError::Connect {
                url: shown,
                message: format!("no response within {} s", spec.idle.as_secs()),
            });
        }
        Ok(Err(e)) => return Err(send_error(&shown, &e)),
        Ok(Ok(resp)) => super::screen::screen(resp, spec.idle).await?,
    };
    if !resp.status().is_success() {
        let ctx = spec.error_context(model, &crate::config::redact_url(&url));
        return Err(error_from_response(resp, &ctx, spec.idle).await);
    }
    Ok(resp)
}

/// A request body that could not be encoded (a provider's own fault: never retried).
pub fn encode_error(e: serde_json::Error) -> ProviderError {
    ProviderError::Encode(e.to_string())
}

/// `post` for a `JsonBody`: a small one goes as one buffer, written once; a large one is
/// counted, then encoded piece by piece while the connection sends it (with its exact
/// `Content-Length`), and the encoding stops as soon as the server answers, even before
/// it read the whole body.
pub async fn post_json<F, I>(
    client: &reqwest::Client,
    spec: &Spec,
    path: &str,
    model: &str,
    body: &JsonBody<F>,
    key: KeyHeader,
) -> Result<Response, ProviderError>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: serde::Serialize,
{
    if let Some(bytes) = body.small(super::body::WHOLE_UP_TO).map_err(encode_error)? {
        return post(client, spec, path, model, bytes, key).await;
    }
    let (tx, received) = super::body::Received::channel(body.byte_count().map_err(encode_error)?);
    let send = post(client, spec, path, model, reqwest::Body::wrap(received), key);
    let encode = body.send_to(tx);
    tokio::pin!(send, encode);
    let mut encoded = false;
    loop {
        tokio::select! {
            answer = &mut send => return answer,
            done = &mut encode, if !encoded => {
                done.map_err(encode_error)?;
                encoded = true;
            }
        }
    }
}

/// `GET /models` of an OpenAI-style endpoint: the ids of `data[]`, sorted.
pub async fn list_models(client: &reqwest::Client, spec: &Spec) -> Result<Vec<String>, ProviderError> {
    if spec.missing_key() {
        return Err(ProviderError::MissingKey {
            env_var: spec.api_key_env.clone(),
        });
    }
    let url = spec.url("/models");
    let shown = crate::config::redact_url(&spec.base_url);
    let builder = authorize(client.get(&url), spec, KeyHeader::Bearer);
    let resp = match tokio::time::timeout(spec.idle, builder.send()).await {
        Err(_) => {
            return Err(ProviderError::Connect {
                url: shown,
                message: format!("no response within {} s", spec.idle.as_secs()),
            });
        }
        Ok(Err(e)) => return Err(send_error(&shown, &e)),
        Ok(Ok(resp)) => super::screen::screen(resp, spec.idle).await?,
    };
    if !resp.status().is_success() {
        let ctx = spec.error_context(&spec.model, &crate::config::redact_url(&url));
        return Err(error_from_response(resp, &ctx, spec.idle).await);
    }
    let body = read_capped(resp, 4 * 1024 * 1024, spec.idle).await;
    let v: Value =
        serde_json::from_str(&body).map_err(|e| ProviderError::Stream(format!("bad model list: {e}")))?;
    let mut ids: Vec<String> = v["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    Ok(ids)
}

/// Maps a non-2xx response to an error, reading at most 64 KiB of its body.
pub async fn error_from_response(resp: Response, ctx: &ErrorContext, idle: Duration) -> ProviderError {
    let status = resp.status().as_u16();
    let retry = retry_after(resp.headers());
    let body = read_capped(resp, 64 * 1024, idle).await;
    let message = scrub(&server_message(&body), ctx.secret.as_deref());
    let detail = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    match classify(Some(status), &message, &error_code(&body), &ctx.model) {
        // Say where the model was looked for, as a plain 404 does.
        Some(ProviderError::UnknownModel { model, detail }) => {
            return ProviderError::UnknownModel {
                model,
                detail: format!("{detail} (endpoint {})", ctx.url),
            };
        }
        Some(e) => return e,
        None => {}
    }
    match status {
        401 | 403 => ProviderError::Auth {
            status,
            env_var: ctx.api_key_env.clone(),
            detail: if ctx.key_set {
                detail
            } else {
                format!(" (it is not set){detail}")
            },
        },
        404 => ProviderError::NotFound {
            model: ctx.model.clone(),
            url: ctx.url.clone(),
            detail,
        },
        429 => ProviderError::RateLimited {
            retry_after: retry,
            detail,
        },
        500..=599 => ProviderError::Server {
            status,
            message: if message.is_empty() {
                "no message".to_string()
            } else {
                message
            },
            retry_after: retry,
        },
        _ => ProviderError::Rejected {
            status,
            message: if message.is_empty() {
                "no message".to_string()
            } else {
                message
            },
        },
    }
}

/// The whole body of a successful answer, at most `cap` bytes (more is an error).
pub async fn read_body(resp: Response, cap: usize, idle: Duration) -> Result<String, ProviderError> {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    loop {
        match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => return Err(ProviderError::Idle(idle.as_secs())),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(ProviderError::Stream(stream_error(&e))),
            Ok(Some(Ok(bytes))) => {
                if body.len() + bytes.len() > cap {
                    return Err(super::limits::too_large(cap));
                }
                body.extend_from_slice(&bytes);
            }
        }
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// At most `cap` bytes of a body, stopping at the first stall longer than `idle`.
pub async fn read_capped(resp: Response, cap: usize, idle: Duration) -> String {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while body.len() < cap {
        match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(cap);
    String::from_utf8_lossy(&body).into_owned()
}

/// The machine-readable kind of an error body, lowercased: `error.code`, else
/// `error.type`, else `error.status` (Gemini), else empty.
pub fn error_code(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body.trim()) else {
        return String::new();
    };
    let err = v.get("error").unwrap_or(&v);
    ["code", "type", "status"]
        .iter()
        .filter_map(|k| err.get(*k).and_then(Value::as_str))
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The error kinds every vendor shares, told apart by status, code and message: context
/// length exceeded, unknown model, content filtered, quota exhausted. `None` leaves the
/// plain status mapping.
pub fn classify(status: Option<u16>, message: &str, code: &str, model: &str) -> Option<ProviderError> {
    let m = message.to_ascii_lowercase();
    let detail = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    let any = |needles: &[&str]| needles.iter().any(|n| m.contains(n) || code.contains(n));
    if any(&[
        "context_length_exceeded",
        "maximum context length",
        "context window",
        "prompt is too long",
        "too many tokens",
        "input is too long",
        "exceeds the context",
        "string_above_max_length",
    ]) {
        return Some(ProviderError::ContextLength { detail });
    }
    // Not "quota" alone: Gemini's retryable RESOURCE_EXHAUSTED says "exceeded your quota".
    if status == Some(402) || any(&["insufficient_quota", "credit balance"]) {
        return Some(ProviderError::QuotaExhausted { detail });
    }
    if any(&[
        "content_filter",
        "content_policy",
        "content management policy",
        "safety system",
    ]) {
        return Some(ProviderError::ContentFiltered { detail });
    }
    let model_missing = any(&["model_not_found"])
        || (m.contains("model") && (m.contains("does not exist") || m.contains("not found")));
    if model_missing && matches!(status, None | Some(400) | Some(404)) {
        return Some(ProviderError::UnknownModel {
            model: model.to_string(),
            detail,
        });
    }
    None
}

/// The human part of an error body: `{"error": {"message": …}}`, `{"error": "…"}`,
/// `{"message": …}`, or the text itself.
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

/// The `data:` payloads of an SSE body; stalls longer than `idle`, broken bodies and
/// events larger than `max_event` bytes end it with an error.
pub fn sse_data(resp: Response, idle: Duration, max_event: usize) -> DataStream {
    sse_data_from(resp.bytes_stream(), idle, max_event)
}

struct SseState<S> {
    bytes: Pin<Box<S>>,
    decoder: SseDecoder,
    pending: VecDeque<String>,
    ended: bool,
}

/// The same over any byte stream (benchmarks feed memory).
pub fn sse_data_from<S, B, E>(bytes: S, idle: Duration, max_event: usize) -> DataStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: std::error::Error + Send + Sync + 'static,
{
    let state = SseState {
        bytes: Box::pin(bytes),
        decoder: SseDecoder::new(max_event),
        pending: VecDeque::new(),
        ended: false,
    };
    Box::pin(futures_util::stream::unfold(state, move |mut s| async move {
        loop {
            if let Some(data) = s.pending.pop_front() {
                return Some((Ok(data), s));
            }
            if s.ended {
                return None;
            }
            let mut out = Vec::new();
            match tokio::time::timeout(idle, s.bytes.next()).await {
                Err(_) => {
                    s.ended = true;
                    return Some((Err(ProviderError::Idle(idle.as_secs())), s));
                }
                Ok(None) => {
                    s.ended = true;
                    s.decoder.finish(&mut out);
                }
                Ok(Some(Ok(chunk))) => {
                    if let Err(e) = s.decoder.push(chunk.as_ref(), &mut out) {
                        s.ended = true;
                        return Some((Err(ProviderError::TooLarge(e.to_string())), s));
                    }
                }
                Ok(Some(Err(e))) => {
                    s.ended = true;
                    return Some((Err(ProviderError::Stream(stream_error(&e))), s));
                }
            }
            s.pending.extend(out);
        }
    }))
}

fn stream_error<E: std::error::Error + 'static>(e: &E) -> String {
    let cause = root_cause(e);
    let top = e.to_string();
    if cause == top {
        top
    } else {
        format!("{top}: {cause}")
    }
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
    fn vendor_errors_become_distinct_kinds() {
        let openai_ctx = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let c =
            |status, body: &str| classify(Some(status), &server_message(body), &error_code(body), "gpt-x");
        assert!(matches!(
            c(400, openai_ctx),
            Some(ProviderError::ContextLength { .. })
        ));
        let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(matches!(
            c(429, quota),
            Some(ProviderError::QuotaExhausted { .. })
        ));
        let model = r#"{"error":{"message":"The model `gpt-x` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}"#;
        match c(404, model) {
            Some(e @ ProviderError::UnknownModel { .. }) => assert!(e.to_string().contains("gpt-x"), "{e}"),
            other => panic!("{other:?}"),
        }
        let filtered = r#"{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"code":"content_filter"}}"#;
        assert!(matches!(
            c(400, filtered),
            Some(ProviderError::ContentFiltered { .. })
        ));
        assert_eq!(
            c(
                429,
                r#"{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}"#
            ),
            None
        );
        assert_eq!(c(500, "oops"), None);
        assert!(
            !ProviderError::ContextLength {
                detail: String::new()
            }
            .is_retryable()
        );
    }

    #[test]
    fn keys_are_scrubbed() {
        let s = scrub("Incorrect API key provided: sk-proj-abcdef123. See docs", None);
        assert!(!s.contains("abcdef123"), "{s}");
        let s = scrub("key=mysecretkey", Some("mysecretkey"));
        assert_eq!(s, "key=[redacted]");
    }

    #[test]
    fn retry_after_reads_seconds_and_ms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(2.0));
        h.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after(&h), Some(1.5));
        let mut h = HeaderMap::new();
        h.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
