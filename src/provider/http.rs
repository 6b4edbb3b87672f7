//! HTTP plumbing shared by providers: the client, sending with the key and a bounded
//! wait for the headers (a request body written while it is sent), Retry-After, bounded
//! body reads, and an SSE `data:` stream with an idle timeout. Knows no wire format and
//! maps no vendor error (`status` does).

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use super::body::Source;
use super::sse::SseDecoder;
use super::{ProviderError, Spec};
use futures_util::{Stream, StreamExt};
use reqwest::Response;
use reqwest::header::HeaderMap;

/// The SSE `data:` payloads of a response, in order; an `Err` ends it.
pub type DataStream = Pin<Box<dyn Stream<Item = Result<String, ProviderError>> + Send>>;

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

/// A failure to send the request or read its headers. A refused connection to this
/// machine means nothing listens there: said at once, not retried as a busy server is.
pub fn send_error(url: &str, e: &reqwest::Error) -> ProviderError {
    if refused(e) && is_loopback(url) {
        return ProviderError::NothingListening { url: url.to_string() };
    }
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

/// Whether the connection was refused (no socket listening at the address).
fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// Whether `url` points at this machine (`localhost`, `127.*`, `[::1]`).
pub fn is_loopback(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| h == "localhost" || h == "[::1]" || h.starts_with("127."))
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

/// Applies the key, the format's own headers and the configured extra headers.
pub fn authorize(
    mut builder: reqwest::RequestBuilder,
    spec: &Spec,
    key: KeyHeader,
    headers: &[(&str, &str)],
) -> reqwest::RequestBuilder {
    if let Some(k) = &spec.api_key {
        builder = match key {
            KeyHeader::Bearer => builder.bearer_auth(k.expose()),
            KeyHeader::Named(name) => builder.header(name, k.expose()),
        };
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    for (name, value) in &spec.headers {
        builder = builder.header(name, value);
    }
    builder
}

/// Sends a request, waiting at most `idle` for the answer's headers; `shown` is the
/// endpoint as an error may name it (passwords hidden). Any status is an answer (the
/// caller screens it, `super::screen`).
pub async fn send(
    builder: reqwest::RequestBuilder,
    shown: &str,
    idle: Duration,
) -> Result<Response, ProviderError> {
    match tokio::time::timeout(idle, builder.send()).await {
        Err(_) => Err(ProviderError::Connect {
            url: shown.to_string(),
            message: format!("no response within {} s", idle.as_secs()),
        }),
        Ok(Err(e)) => Err(send_error(shown, &e)),
        Ok(Ok(resp)) => Ok(resp),
    }
}

/// A request body that could not be encoded (a provider's own fault: never retried).
pub fn encode_error(e: serde_json::Error) -> ProviderError {
    ProviderError::Encode(e.to_string())
}

/// Sends `body` with `request`: a small one as one buffer, written once; a large one is
/// counted, then encoded piece by piece while the connection sends it (with its exact
/// `Content-Length`), and the encoding stops as soon as `request` has its answer, even
/// before the server read the whole body. `request` sends what it is given.
pub async fn with_body<F, Fut>(body: &dyn Source<'_>, request: F) -> Result<Response, ProviderError>
where
    F: FnOnce(reqwest::Body) -> Fut,
    Fut: std::future::Future<Output = Result<Response, ProviderError>>,
{
    if let Some(bytes) = body.small(super::body::WHOLE_UP_TO).map_err(encode_error)? {
        return request(bytes.into()).await;
    }
    let (tx, received) = super::body::Received::channel(body.byte_count().map_err(encode_error)?);
    let send = request(reqwest::Body::wrap(received));
    let encode = super::body::send_to(body, tx);
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

/// The whole body of a successful answer, at most `cap` bytes (more is an error).
pub async fn read_body(resp: Response, cap: usize, idle: Duration) -> Result<String, ProviderError> {
    let body = read_bytes(resp, cap, idle).await.map_err(|e| match e {
        ProviderError::BodyTooLarge { cap, .. } => super::limits::too_large(cap),
        e => e,
    })?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The whole body of an answer, at most `cap` bytes: more stops the read at once with
/// `BodyTooLarge` (what the answer was is the caller's to say), a stall longer than `idle`
/// with `Idle`. Nothing past `cap` is ever buffered.
pub async fn read_bytes(resp: Response, cap: usize, idle: Duration) -> Result<Vec<u8>, ProviderError> {
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(ProviderError::BodyTooLarge {
            what: "the answer".into(),
            cap,
        });
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    loop {
        match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => return Err(ProviderError::Idle(idle.as_secs())),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(ProviderError::Stream(stream_error(&e))),
            Ok(Some(Ok(bytes))) => {
                if body.len() + bytes.len() > cap {
                    return Err(ProviderError::BodyTooLarge {
                        what: "the answer".into(),
                        cap,
                    });
                }
                body.extend_from_slice(&bytes);
            }
        }
    }
    Ok(body)
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
