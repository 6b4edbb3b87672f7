//! OpenAI Chat Completions (and every OpenAI-compatible server): sends the request,
//! maps HTTP failures, and decodes the SSE stream into `StreamEvent`s.

pub mod request;
pub mod stream;

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;

use super::http::{self, DataStream, ErrorContext};
use super::{EventStream, Provider, ProviderError, Request, StreamEvent};
use crate::config::{Config, Secret};
use stream::Accumulator;

/// A Chat Completions endpoint.
pub struct OpenAiChat {
    client: reqwest::Client,
    /// OpenAI's own endpoint with no key: every request would be refused.
    needs_key: bool,
    base_url: String,
    api_key: Option<Secret>,
    api_key_env: String,
    idle: Duration,
}

impl OpenAiChat {
    pub fn new(config: &Config) -> Result<Self, ProviderError> {
        Ok(OpenAiChat {
            client: http::client(Duration::from_secs(config.connect_timeout_secs))?,
            needs_key: config.needs_key(),
            base_url: config.base_url.trim_end_matches('/').to_string(),
            api_key: config.api_key.clone(),
            api_key_env: config.api_key_env.clone(),
            idle: Duration::from_secs(config.idle_timeout_secs),
        })
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

#[async_trait]
impl Provider for OpenAiChat {
    fn name(&self) -> &str {
        "openai"
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        if self.needs_key {
            return Err(ProviderError::MissingKey {
                env_var: self.api_key_env.clone(),
            });
        }
        let url = self.url();
        let body = serde_json::to_vec(&request::body(&request)).map_err(|e| ProviderError::Rejected {
            status: 0,
            message: format!("cannot encode request: {e}"),
        })?;
        let mut builder = self
            .client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        let resp = match tokio::time::timeout(self.idle, builder.send()).await {
            Err(_) => {
                return Err(ProviderError::Connect {
                    url: self.base_url.clone(),
                    message: format!("no response within {} s", self.idle.as_secs()),
                });
            }
            Ok(Err(e)) => return Err(http::send_error(&self.base_url, &e)),
            Ok(Ok(resp)) => resp,
        };
        if !resp.status().is_success() {
            let ctx = ErrorContext {
                model: request.model.to_string(),
                url,
                api_key_env: self.api_key_env.clone(),
                key_set: self.api_key.is_some(),
                secret: self.api_key.as_ref().map(|k| k.expose().to_string()),
            };
            return Err(http::error_from_response(resp, &ctx, self.idle).await);
        }
        Ok(decode(http::sse_data(resp, self.idle)))
    }
}

struct DecodeState {
    data: DataStream,
    acc: Accumulator,
    pending: VecDeque<StreamEvent>,
    ended: bool,
}

/// Turns SSE payloads into events. A body that ends with neither `[DONE]` nor a finish
/// reason was cut off, and says so.
pub fn decode(data: DataStream) -> EventStream {
    let state = DecodeState {
        data,
        acc: Accumulator::new(),
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
                Some(Ok(payload)) => match s.acc.push(&payload) {
                    Ok(events) => {
                        s.pending.extend(events);
                        if s.acc.is_done() {
                            s.pending.extend(s.acc.finish());
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
                    if !s.acc.saw_finish() {
                        return Some((
                            Err(ProviderError::Stream(
                                "the connection closed before the response was complete".into(),
                            )),
                            s,
                        ));
                    }
                    s.pending.extend(s.acc.finish());
                }
            }
        }
    }))
}
