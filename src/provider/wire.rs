//! One generic HTTP provider for every wire format. A `Wire` says only what differs
//! between formats (paths, how the key travels, the request body, the stream decoder,
//! how the vendor words an error, the model list); `HttpProvider` does everything else
//! once: the key check, sending with the body written while it goes, the status mapping,
//! the response bounds, holding back an early in-stream error so it can be retried.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Response;
use serde_json::Value;

use super::body::Source;
use super::decode::Decoder;
use super::http::{self, KeyHeader};
use super::status::{self, ErrorContext, VendorError};
use super::{EventStream, Provider, ProviderError, Request, Spec};
use crate::config::redact_url;

/// A request body being written, borrowing the request.
pub type Body<'a> = Box<dyn Source<'a> + 'a>;

/// What one wire format does its own way. Every method but `events` is pure: the
/// provider does the IO.
#[async_trait]
pub trait Wire: Send + Sync + 'static {
    /// This format's stream decoder.
    type Decoder: Decoder;

    /// How the key travels (`Authorization: Bearer`, `x-api-key`, `x-goog-api-key`).
    fn key_header(&self) -> KeyHeader;

    /// Headers every request of this format carries (`anthropic-version`).
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// The path under the base URL that streams a response of `model`.
    fn stream_path(&self, spec: &Spec, model: &str) -> String;

    /// The request body for `req`, written while it is sent: it borrows the conversation
    /// and must never copy it whole.
    fn body<'a>(&self, spec: &'a Spec, req: Request<'a>) -> serde_json::Result<Body<'a>>;

    /// A decoder for one response, holding at most `max_bytes` of tool arguments.
    fn decoder(&self, max_bytes: usize) -> Self::Decoder {
        Self::Decoder::with_limit(max_bytes)
    }

    /// The response's events: its SSE stream through this format's decoder (a format
    /// may read other answers too: a Chat Completions server may ignore `stream: true`).
    async fn events(&self, resp: Response, spec: &Spec) -> Result<EventStream, ProviderError> {
        Ok(sse_events(resp, spec, self.decoder(spec.max_response_bytes)))
    }

    /// True when the vendor may report an overload inside the stream before any output
    /// (Anthropic, Gemini): the stream is held back until output so it can be retried.
    fn errors_arrive_in_stream(&self) -> bool {
        false
    }

    /// The vendor's reading of its error object (`{"error": …}` of an error body, or an
    /// error event in the stream).
    fn error_object(&self, error: &Value) -> VendorError;

    /// The vendor's reading of an error body.
    fn error(&self, body: &str) -> VendorError {
        status::read_body(body, |e| self.error_object(e))
    }

    /// The path that lists models.
    fn models_path(&self, spec: &Spec) -> String {
        let _ = spec;
        "/models".to_string()
    }

    /// The model names of a model-list body: `data[].id` unless the format says otherwise.
    fn model_names(&self, body: &Value) -> Vec<String> {
        body["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str().map(str::to_string))
            .collect()
    }
}

/// The most bytes of a model list read (OpenRouter's, the longest known, is about 1 MB).
const MODEL_LIST_MAX: usize = 8 * 1024 * 1024;

/// A provider speaking wire format `W` over HTTP.
pub struct HttpProvider<W: Wire> {
    client: reqwest::Client,
    spec: Spec,
    wire: W,
}

/// The SSE `data:` payloads of `resp` through `decoder`.
pub fn sse_events<D: Decoder>(resp: Response, spec: &Spec, decoder: D) -> EventStream {
    let data = http::sse_data(resp, spec.idle, spec.max_response_bytes.saturating_mul(2));
    super::decode::decode(data, decoder)
}

impl<W: Wire> HttpProvider<W> {
    /// A provider of `spec` speaking `wire`.
    pub fn speaking(wire: W, spec: Spec) -> Result<Self, ProviderError> {
        Ok(HttpProvider {
            client: http::client(spec.connect_timeout)?,
            spec,
            wire,
        })
    }

    /// The wire format.
    pub fn wire(&self) -> &W {
        &self.wire
    }

    /// Sends `builder` with the key and headers; a non-2xx answer becomes its error.
    async fn send(
        &self,
        builder: reqwest::RequestBuilder,
        model: &str,
        url: &str,
    ) -> Result<Response, ProviderError> {
        if self.spec.missing_key() {
            return Err(ProviderError::MissingKey {
                env_var: self.spec.api_key_env.clone(),
            });
        }
        let builder = http::authorize(builder, &self.spec, self.wire.key_header(), self.wire.headers());
        let resp = http::send(builder, &redact_url(&self.spec.base_url), self.spec.idle).await?;
        // A redirect is never followed, an HTML page is not the API's answer.
        let resp = super::screen::screen(resp, self.spec.idle).await?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status().as_u16();
        let retry_after = http::retry_after(resp.headers());
        let body = http::read_capped(resp, 64 * 1024, self.spec.idle).await;
        let ctx = error_context(&self.spec, model, url);
        Err(status::from_status(
            status,
            retry_after,
            &self.wire.error(&body),
            &ctx,
        ))
    }
}

/// What an error message may name about `spec`'s endpoint (never the key itself).
pub fn error_context(spec: &Spec, model: &str, url: &str) -> ErrorContext {
    ErrorContext {
        model: model.to_string(),
        url: redact_url(url),
        api_key_env: spec.api_key_env.clone(),
        key_set: spec.api_key.is_some(),
        secret: spec.api_key.as_ref().map(|k| k.expose().to_string()),
    }
}

#[async_trait]
impl<W: Wire> Provider for HttpProvider<W> {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        let url = self.spec.url(&self.wire.models_path(&self.spec));
        let resp = self.send(self.client.get(&url), &self.spec.model, &url).await?;
        let body = http::read_bytes(resp, MODEL_LIST_MAX, self.spec.idle)
            .await
            .map_err(|e| match e {
                ProviderError::BodyTooLarge { cap, .. } => ProviderError::BodyTooLarge {
                    what: format!("the model list of {}", redact_url(&url)),
                    cap,
                },
                e => e,
            })?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| ProviderError::Stream(format!("bad model list: {e}")))?;
        let mut names = self.wire.model_names(&v);
        names.sort();
        Ok(names)
    }

    /// Asked with this provider's own client: its connections, no second TLS setup.
    async fn context_window(&self, model: &str) -> Result<Option<u64>, ProviderError> {
        let limit = std::time::Duration::from_secs(3);
        super::window::probe(&self.client, &self.spec.base_url, model, limit).await
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let body = self.wire.body(&self.spec, request).map_err(http::encode_error)?;
        let url = self.spec.url(&self.wire.stream_path(&self.spec, request.model));
        let started = tokio::time::Instant::now();
        let resp = http::with_body(body.as_ref(), |body| {
            let builder = self
                .client
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .body(body);
            self.send(builder, request.model, &url)
        })
        .await?;
        drop(body);
        let events = self.wire.events(resp, &self.spec).await?;
        let events = super::limits::bounded_by(events, &self.spec, started);
        if self.wire.errors_arrive_in_stream() {
            super::early::hold_until_output(events).await
        } else {
            Ok(events)
        }
    }
}

/// A shared provider of wire format `W`.
pub fn shared<W: Wire>(spec: Spec, wire: W) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(Arc::new(HttpProvider::speaking(wire, spec)?))
}
