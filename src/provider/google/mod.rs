//! Google Gemini API (`POST models/{model}:streamGenerateContent?alt=sse`): sends the
//! request with `x-goog-api-key`, maps HTTP failures, and decodes the (CRLF-framed) SSE
//! stream. The wire format lives in `request`, `schema` (out) and `stream` (in).

pub mod error;
pub mod request;
pub mod schema;
pub mod stream;

use async_trait::async_trait;

use reqwest::Response;
use serde_json::{Value, json};

use super::http::{self, DataStream, KeyHeader};
use super::{EventStream, Provider, ProviderError, Request, Spec};
use crate::config::redact_url;
use stream::Decoder;

/// Thinking settings for a `reasoning_effort` (`low`, `medium`, `high`): Gemini 3 takes a
/// level, Gemini 2.5 a token budget.
pub fn thinking_config(model: &str, effort: Option<&str>) -> Option<Value> {
    let thinking = request::is_thinking_model(model);
    let gemini3 = model.rsplit('/').next().unwrap_or(model).starts_with("gemini-3");
    let mut config = json!({"includeThoughts": true});
    match effort {
        Some(level @ ("low" | "high")) if gemini3 => config["thinkingLevel"] = json!(level),
        Some(e) if !gemini3 => {
            let budget = match e {
                "minimal" | "low" => 1024,
                "medium" => 8192,
                "high" => 24576,
                _ => return thinking.then_some(config),
            };
            config["thinkingBudget"] = json!(budget);
        }
        _ => {}
    }
    thinking.then_some(config)
}

/// A Gemini endpoint.
pub struct Google {
    client: reqwest::Client,
    spec: Spec,
}

impl Google {
    pub fn from_spec(spec: Spec) -> Result<Self, ProviderError> {
        Ok(Google {
            client: http::client(spec.connect_timeout)?,
            spec,
        })
    }

    /// The path under the base URL; a base with no API version gets `/v1beta`.
    fn path(&self, endpoint: &str) -> String {
        let versioned = ["/v1", "/v1beta", "/v1alpha"]
            .iter()
            .any(|v| self.spec.base_url.ends_with(v));
        if versioned {
            endpoint.to_string()
        } else {
            format!("/v1beta{endpoint}")
        }
    }

    /// The streaming path for `model` (`models/` prefix optional).
    pub fn stream_path(&self, model: &str) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        self.path(&format!("/models/{model}:streamGenerateContent?alt=sse"))
    }

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
        let builder = http::authorize(builder, &self.spec, KeyHeader::Named("x-goog-api-key"));
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
impl Provider for Google {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    /// `GET models`: the names of `models[]` that can generate content, sorted.
    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        let url = self.spec.url(&self.path("/models?pageSize=1000"));
        let resp = self.send(self.client.get(&url), &self.spec.model, &url).await?;
        let body = http::read_capped(resp, 4 * 1024 * 1024, self.spec.idle).await;
        let v: Value =
            serde_json::from_str(&body).map_err(|e| ProviderError::Stream(format!("bad model list: {e}")))?;
        let mut names: Vec<String> = v["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| {
                m["supportedGenerationMethods"]
                    .as_array()
                    .is_none_or(|a| a.iter().any(|x| x == "generateContent"))
            })
            .filter_map(|m| m["name"].as_str())
            .map(|n| n.strip_prefix("models/").unwrap_or(n).to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let opts = request::Options {
            name: &self.spec.name,
            max_output_tokens: self.spec.max_output_tokens,
            temperature: self.spec.temperature,
            thinking: thinking_config(request.model, self.spec.reasoning_effort.as_deref()),
        };
        let body = serde_json::to_vec(&request::body(&request, &opts)).map_err(http::encode_error)?;
        let url = self.spec.url(&self.stream_path(request.model));
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

/// Turns SSE payloads into events. Gemini sends no `[DONE]`: a body that ends before any
/// finish reason was cut off, and says so.
pub fn decode(data: DataStream) -> EventStream {
    decode_with_limit(data, usize::MAX)
}

/// `decode`, with tool arguments held back at most `max_bytes` in total.
pub fn decode_with_limit(data: DataStream, max_bytes: usize) -> EventStream {
    super::decode::decode(data, Decoder::with_limit(max_bytes))
}
