//! Anthropic Messages API (`POST /v1/messages`, streaming): sends the request with
//! `x-api-key` and `anthropic-version`, maps HTTP failures, and decodes the SSE stream.
//! The wire format lives in `request` (out) and `stream` (in); nothing else knows it.

pub mod error;
pub mod request;
pub mod stream;

use async_trait::async_trait;

use reqwest::Response;
use serde_json::Value;

use super::http::{self, DataStream, KeyHeader};
use super::{EventStream, Provider, ProviderError, Request, Spec};
use crate::config::redact_url;
use stream::Decoder;

/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the configuration names none (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Thinking budget for a `reasoning_effort` setting (`low`, `medium`, `high`).
pub fn thinking_budget(effort: &str) -> Option<u32> {
    match effort {
        "minimal" | "low" => Some(2048),
        "medium" => Some(8192),
        "high" => Some(24576),
        _ => None,
    }
}

/// An Anthropic Messages endpoint.
pub struct Anthropic {
    client: reqwest::Client,
    spec: Spec,
}

impl Anthropic {
    pub fn from_spec(spec: Spec) -> Result<Self, ProviderError> {
        Ok(Anthropic {
            client: http::client(spec.connect_timeout)?,
            spec,
        })
    }

    /// The path under the base URL (`/messages` after a `/v1` base).
    fn path(&self, endpoint: &str) -> String {
        if self.spec.base_url.ends_with("/v1") {
            endpoint.to_string()
        } else {
            format!("/v1{endpoint}")
        }
    }

    fn options(&self) -> request::Options<'_> {
        let max = self
            .spec
            .max_output_tokens
            .map_or(DEFAULT_MAX_TOKENS, |n| u32::try_from(n).unwrap_or(u32::MAX));
        request::Options {
            name: &self.spec.name,
            max_tokens: max,
            thinking_budget: self.spec.reasoning_effort.as_deref().and_then(thinking_budget),
            temperature: self.spec.temperature,
        }
    }

    /// Sends `builder` with the key and version headers; maps failures.
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
        let builder = http::authorize(
            builder.header("anthropic-version", API_VERSION),
            &self.spec,
            KeyHeader::Named("x-api-key"),
        );
        let shown = redact_url(&self.spec.base_url);
        let idle = self.spec.idle;
        let resp = match tokio::time::timeout(idle, builder.send()).await {
            Err(_) => {
                return Err(ProviderError::Connect {
                    url: shown,
                    message: format!("no response within {} s", idle.as_secs()),
                });
            }
            Ok(Err(e)) => return Err(http::send_error(&shown, &e)),
            Ok(Ok(resp)) => super::screen::screen(resp, idle).await?,
        };
        if !resp.status().is_success() {
            let ctx = self.spec.error_context(model, &redact_url(url));
            return Err(error::from_response(resp, &ctx, idle).await);
        }
        Ok(resp)
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    /// `GET /v1/models`: the ids of `data[]`, sorted.
    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        let url = self.spec.url(&self.path("/models"));
        let resp = self.send(self.client.get(&url), &self.spec.model, &url).await?;
        let body = http::read_capped(resp, 4 * 1024 * 1024, self.spec.idle).await;
        let v: Value =
            serde_json::from_str(&body).map_err(|e| ProviderError::Stream(format!("bad model list: {e}")))?;
        let mut ids: Vec<String> = v["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str().map(str::to_string))
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let body =
            serde_json::to_vec(&request::body(&request, &self.options())).map_err(http::encode_error)?;
        let url = self.spec.url(&self.path("/messages"));
        let builder = self
            .client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body);
        let started = tokio::time::Instant::now();
        let resp = self.send(builder, request.model, &url).await?;
        let max = self.spec.max_response_bytes;
        let events = decode_with_limit(http::sse_data(resp, self.spec.idle, max.saturating_mul(2)), max);
        super::early::hold_until_output(self.spec.bounded(events, started)).await
    }
}

/// Turns SSE payloads into events. A body that ends before `message_stop` or a stop
/// reason was cut off, and says so.
pub fn decode(data: DataStream) -> EventStream {
    decode_with_limit(data, usize::MAX)
}

/// `decode`, with tool arguments held back at most `max_bytes` in total.
pub fn decode_with_limit(data: DataStream, max_bytes: usize) -> EventStream {
    super::decode::decode(data, Decoder::with_limit(max_bytes))
}
