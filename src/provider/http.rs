//! HTTP plumbing shared by providers: the client, status → `ProviderError` mapping,
//! Retry-After, and an SSE `data:` stream with an idle timeout. Knows no wire format.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use reqwest::Response;
use reqwest::header::HeaderMap;
use serde_json::Value;

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

/// A client tuned for streaming: connect timeout, no overall timeout, no Nagle.
pub fn client(connect_timeout: Duration) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
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
    body: Vec<u8>,
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
        Ok(Ok(resp)) => resp,
    };
    if !resp.status().is_success() {
        let ctx = spec.error_context(model, &crate::config::redact_url(&url));
        return Err(error_from_response(resp, &ctx, spec.idle).await);
    }
    Ok(resp)
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
        Ok(Ok(resp)) => resp,
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

async fn read_capped(resp: Response, cap: usize, idle: Duration) -> String {
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

/// The `data:` payloads of an SSE body; stalls longer than `idle` and broken bodies end it
/// with an error.
pub fn sse_data(resp: Response, idle: Duration) -> DataStream {
    sse_data_from(resp.bytes_stream(), idle)
}

/// The same over any byte stream (benchmarks feed memory).
pub fn sse_data_from<S, B, E>(bytes: S, idle: Duration) -> DataStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: std::error::Error + Send + Sync + 'static,
{
    let events = bytes.eventsource();
    let stream =
        futures_util::stream::unfold((Box::pin(events), false), move |(mut events, ended)| async move {
            if ended {
                return None;
            }
            match tokio::time::timeout(idle, events.next()).await {
                Err(_) => Some((Err(ProviderError::Idle(idle.as_secs())), (events, true))),
                Ok(None) => None,
                Ok(Some(Ok(ev))) => Some((Ok(ev.data), (events, false))),
                Ok(Some(Err(e))) => Some((Err(ProviderError::Stream(stream_error(&e))), (events, true))),
            }
        });
    Box::pin(stream)
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
