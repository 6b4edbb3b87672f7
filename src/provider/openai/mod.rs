//! OpenAI Chat Completions (and every OpenAI-compatible server) as a `Wire`: the body
//! (`request`), the stream decoder (`stream`), a whole JSON answer from a server that
//! ignored `stream: true` (`completion`), and how its error bodies read (`error`).

pub mod completion;
pub mod error;
pub mod request;
pub mod stream;

use async_trait::async_trait;
use futures_util::StreamExt;
use reqwest::Response;

use super::http::{self, DataStream, KeyHeader};
use super::status::VendorError;
use super::wire::{Body, HttpProvider, Wire, sse_events};
use super::{EventStream, ProviderError, Request, Spec};
use crate::config::Config;
use stream::Accumulator;

/// The Chat Completions wire format (`/chat/completions`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Chat;

/// A Chat Completions endpoint.
pub type OpenAiChat = HttpProvider<Chat>;

impl OpenAiChat {
    /// The provider the config selects, spoken as Chat Completions (whatever its kind),
    /// its key read from the environment.
    pub fn new(config: &Config) -> Result<Self, ProviderError> {
        let spec = super::resolve(config, &super::env_key)?.spec;
        HttpProvider::speaking(Chat, spec)
    }
}

#[async_trait]
impl Wire for Chat {
    type Decoder = Accumulator;

    fn key_header(&self) -> KeyHeader {
        KeyHeader::Bearer
    }

    fn stream_path(&self, _: &Spec, _: &str) -> String {
        "/chat/completions".to_string()
    }

    fn body<'a>(&self, spec: &'a Spec, req: Request<'a>) -> serde_json::Result<Body<'a>> {
        Ok(Box::new(request::body(&req, &request::rest_for(spec, &req))?))
    }

    async fn events(&self, resp: Response, spec: &Spec) -> Result<EventStream, ProviderError> {
        if !is_json(&resp) {
            return Ok(sse_events(resp, spec, self.decoder(spec.max_response_bytes)));
        }
        // A server that ignored `stream: true` and answered with one chat.completion.
        let max = spec.max_response_bytes;
        let body = http::read_body(resp, max.saturating_mul(2), spec.idle).await?;
        Ok(futures_util::stream::iter(completion::events(&body, max)).boxed())
    }

    fn error_object(&self, error: &serde_json::Value) -> VendorError {
        error::object(error)
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
    super::decode::decode(data, Accumulator::default())
}
