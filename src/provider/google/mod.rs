//! Google Gemini API (`POST models/{model}:streamGenerateContent?alt=sse`): sends the
//! request with `x-goog-api-key`, maps HTTP failures, and decodes the (CRLF-framed) SSE
//! stream. The wire format lives in `request`, `schema` (out) and `stream` (in).

pub mod error;
pub mod request;
pub mod schema;
pub mod stream;

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;

use super::http::{self, DataStream, ErrorContext};
use super::{EventStream, Provider, ProviderError, Request, StreamEvent};
use crate::config::Secret;
use stream::Decoder;

/// The default endpoint.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Everything a Gemini endpoint needs, resolved by the provider factory.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The configured provider name (signatures are tagged with it).
    pub name: String,
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub api_key_env: String,
    /// Extra headers (`[providers.NAME] headers`).
    pub headers: Vec<(String, String)>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Settings {
    pub fn new(name: &str, base_url: &str, api_key: Option<Secret>, api_key_env: &str) -> Settings {
        Settings {
            name: name.to_string(),
            base_url: base_url.to_string(),
            api_key,
            api_key_env: api_key_env.to_string(),
            headers: Vec::new(),
            max_output_tokens: None,
            temperature: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// A Gemini endpoint.
pub struct Google {
    client: reqwest::Client,
    settings: Settings,
    base: String,
}

impl Google {
    pub fn new(settings: Settings) -> Result<Self, ProviderError> {
        let base = settings.base_url.trim_end_matches('/');
        let versioned = ["/v1", "/v1beta", "/v1alpha"].iter().any(|v| base.ends_with(v));
        let base = if versioned {
            base.to_string()
        } else {
            format!("{base}/v1beta")
        };
        Ok(Google {
            client: http::client(settings.connect_timeout)?,
            settings,
            base,
        })
    }

    /// The streaming URL for `model` (`models/` prefix optional).
    pub fn url(&self, model: &str) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        format!("{}/models/{model}:streamGenerateContent?alt=sse", self.base)
    }

    fn error_context(&self, model: &str, url: &str) -> ErrorContext {
        ErrorContext {
            model: model.to_string(),
            url: url.to_string(),
            api_key_env: self.settings.api_key_env.clone(),
            key_set: self.settings.api_key.is_some(),
            secret: self.settings.api_key.as_ref().map(|k| k.expose().to_string()),
        }
    }
}

#[async_trait]
impl Provider for Google {
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
            max_output_tokens: self.settings.max_output_tokens,
            temperature: self.settings.temperature,
        };
        let body =
            serde_json::to_vec(&request::body(&request, &opts)).map_err(|e| ProviderError::Rejected {
                status: 0,
                message: format!("cannot encode request: {e}"),
            })?;
        let url = self.url(request.model);
        let mut builder = self
            .client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header("x-goog-api-key", key.expose());
        for (k, v) in &self.settings.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let idle = self.settings.idle_timeout;
        let resp = match tokio::time::timeout(idle, builder.body(body).send()).await {
            Err(_) => {
                return Err(ProviderError::Connect {
                    url: self.base.clone(),
                    message: format!("no response within {} s", idle.as_secs()),
                });
            }
            Ok(Err(e)) => return Err(http::send_error(&self.base, &e)),
            Ok(Ok(resp)) => resp,
        };
        if !resp.status().is_success() {
            let ctx = self.error_context(request.model, &url);
            return Err(error::from_response(resp, &ctx, idle).await);
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

/// Turns SSE payloads into events. Gemini sends no `[DONE]`: a body that ends before any
/// finish reason was cut off, and says so.
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
                    Ok(events) => s.pending.extend(events),
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
