//! Anthropic Messages API (`POST /v1/messages`, streaming): sends the request with
//! `x-api-key` and `anthropic-version`, maps HTTP failures, and decodes the SSE stream.
//! The wire format lives in `request` (out) and `stream` (in); nothing else knows it.

pub mod error;
pub mod request;
pub mod stream;

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;

use super::http::{self, DataStream, ErrorContext};
use super::{EventStream, Provider, ProviderError, Request, StreamEvent};
use crate::config::Secret;
use stream::Decoder;

/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// The default endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// `max_tokens` when the configuration names none (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Everything an Anthropic endpoint needs, resolved by the provider factory.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The configured provider name (reasoning is tagged with it).
    pub name: String,
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub api_key_env: String,
    /// Extra headers (`[providers.NAME] headers`).
    pub headers: Vec<(String, String)>,
    pub max_tokens: Option<u32>,
    pub thinking_budget: Option<u32>,
    pub temperature: Option<f64>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Settings {
    /// Anthropic's own endpoint with the key from `ANTHROPIC_API_KEY` style settings.
    pub fn new(name: &str, base_url: &str, api_key: Option<Secret>, api_key_env: &str) -> Settings {
        Settings {
            name: name.to_string(),
            base_url: base_url.to_string(),
            api_key,
            api_key_env: api_key_env.to_string(),
            headers: Vec::new(),
            max_tokens: None,
            thinking_budget: None,
            temperature: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

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
    settings: Settings,
    url: String,
}

impl Anthropic {
    pub fn new(settings: Settings) -> Result<Self, ProviderError> {
        let base = settings.base_url.trim_end_matches('/');
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Ok(Anthropic {
            client: http::client(settings.connect_timeout)?,
            settings,
            url,
        })
    }

    fn error_context(&self, model: &str) -> ErrorContext {
        ErrorContext {
            model: model.to_string(),
            url: self.url.clone(),
            api_key_env: self.settings.api_key_env.clone(),
            key_set: self.settings.api_key.is_some(),
            secret: self.settings.api_key.as_ref().map(|k| k.expose().to_string()),
        }
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        &self.settings.name
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let Some(key) = &self.settings.api_key else {
            return Err(ProviderError::MissingKey {
                env_var: self.settings.api_key_env.clone(),
            });
        };
        let opts = request::Options {
            name: &self.settings.name,
            max_tokens: self.settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            thinking_budget: self.settings.thinking_budget,
            temperature: self.settings.temperature,
        };
        let body =
            serde_json::to_vec(&request::body(&request, &opts)).map_err(|e| ProviderError::Rejected {
                status: 0,
                message: format!("cannot encode request: {e}"),
            })?;
        let mut builder = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header("x-api-key", key.expose())
            .header("anthropic-version", API_VERSION);
        for (k, v) in &self.settings.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let idle = self.settings.idle_timeout;
        let resp = match tokio::time::timeout(idle, builder.body(body).send()).await {
            Err(_) => {
                return Err(ProviderError::Connect {
                    url: self.url.clone(),
                    message: format!("no response within {} s", idle.as_secs()),
                });
            }
            Ok(Err(e)) => return Err(http::send_error(&self.url, &e)),
            Ok(Ok(resp)) => resp,
        };
        if !resp.status().is_success() {
            return Err(error::from_response(resp, &self.error_context(request.model), idle).await);
        }
        super::early::hold_until_output(decode(http::sse_data(resp, idle), &self.settings.name)).await
    }
}

struct DecodeState {
    data: DataStream,
    decoder: Decoder,
    pending: VecDeque<StreamEvent>,
    ended: bool,
}

/// Turns SSE payloads into events. A body that ends before `message_stop` or a stop
/// reason was cut off, and says so.
pub fn decode(data: DataStream, name: &str) -> EventStream {
    let state = DecodeState {
        data,
        decoder: Decoder::new(name),
        pending: VecDeque::new(),
        ended: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(ev) = s.pending.pop_front() {
                return Some((Ok(ev), s));
            }
            if s.ended {
                return None;
            }
            match s.data.next().await {
                Some(Ok(payload)) => match s.decoder.push(&payload) {
                    Ok(events) => {
                        s.pending.extend(events);
                        if s.decoder.is_done() {
                            s.pending.extend(s.decoder.finish());
                            s.ended = true;
                        }
                    }
                    Err(e) => {
                        s.ended = true;
                        return Some((Err(e), s));
                    }
                },
                Some(Err(e)) => {
                    s.ended = true;
                    return Some((Err(e), s));
                }
                None => {
                    s.ended = true;
                    if !s.decoder.is_complete() {
                        return Some((
                            Err(ProviderError::Stream(
                                "the connection closed before the response was complete".into(),
                            )),
                            s,
                        ));
                    }
                    s.pending.extend(s.decoder.finish());
                }
            }
        }
    }))
}
