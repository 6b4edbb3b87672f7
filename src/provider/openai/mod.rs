//! OpenAI Chat Completions (and every OpenAI-compatible server): sends the request,
//! maps HTTP failures, and decodes the SSE stream into `StreamEvent`s.

pub mod completion;
pub mod request;
pub mod stream;

use async_trait::async_trait;

use serde_json::json;

use super::http::{self, DataStream};
use super::{EventStream, Provider, ProviderError, Request, Spec};
use crate::config::Config;
use stream::Accumulator;

/// A Chat Completions endpoint.
pub struct OpenAiChat {
    client: reqwest::Client,
    spec: Spec,
}

impl OpenAiChat {
    /// The provider the config selects, as a Chat Completions endpoint (whatever its kind).
    pub fn new(config: &Config) -> Result<Self, ProviderError> {
        let name = if config.provider.is_empty() {
            super::presets::DEFAULT.to_string()
        } else {
            config.provider.clone()
        };
        let spec = super::factory::spec_for(config, &name, None, &|k| crate::environ::var(k))?;
        Self::from_spec(spec)
    }

    pub fn from_spec(spec: Spec) -> Result<Self, ProviderError> {
        Ok(OpenAiChat {
            client: http::client(spec.connect_timeout)?,
            spec,
        })
    }

    /// Everything but the messages, with this endpoint's options (temperature, output
    /// cap, effort).
    fn rest<'a>(&self, request: &Request<'a>) -> request::Rest<'a> {
        let mut body = request::rest(request);
        if let Some(t) = self.spec.temperature {
            body.extra.insert("temperature".into(), json!(t));
        }
        if let Some(n) = self.spec.max_output_tokens {
            body.extra.insert("max_completion_tokens".into(), json!(n));
        }
        if let Some(e) = &self.spec.reasoning_effort {
            body.extra.insert("reasoning_effort".into(), json!(e));
        }
        body
    }
}

#[async_trait]
impl Provider for OpenAiChat {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        http::list_models(&self.client, &self.spec).await
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let body = request::body(&request, &self.rest(&request)).map_err(http::encode_error)?;
        let started = tokio::time::Instant::now();
        let resp = http::post_json(
            &self.client,
            &self.spec,
            "/chat/completions",
            request.model,
            &body,
            http::KeyHeader::Bearer,
        )
        .await?;
        let max = self.spec.max_response_bytes;
        let events = if is_json(&resp) {
            // A server that ignored `stream: true` and answered with one chat.completion.
            let body = http::read_body(resp, max.saturating_mul(2), self.spec.idle).await?;
            Box::pin(futures_util::stream::iter(completion::events(&body, max))) as EventStream
        } else {
            decode_with_limit(http::sse_data(resp, self.spec.idle, max.saturating_mul(2)), max)
        };
        Ok(self.spec.bounded(events, started))
    }
}

/// True when the answer is a JSON document rather than an event stream.
fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("json") && !ct.contains("event-stream"))
}

/// Turns SSE payloads into events. A body that ends with neither `[DONE]` nor a finish
/// reason was cut off, and says so.
pub fn decode(data: DataStream) -> EventStream {
    decode_with_limit(data, usize::MAX)
}

/// `decode`, with tool arguments held back at most `max_bytes` in total.
pub fn decode_with_limit(data: DataStream, max_bytes: usize) -> EventStream {
    super::decode::decode(data, Accumulator::with_limit(max_bytes))
}
