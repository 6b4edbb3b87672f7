//! The Anthropic Messages API (`POST /v1/messages`, streaming) as a `Wire`: the key in
//! `x-api-key` with `anthropic-version`, the body (`request`), the stream decoder
//! (`stream`) and how its errors read (`error`). Nothing else knows this format.

pub mod error;
pub mod request;
pub mod stream;

use super::http::{DataStream, KeyHeader};
use super::status::VendorError;
use super::wire::{Body, HttpProvider, Wire};
use super::{EventStream, Request, Spec};
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

/// The Messages wire format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Messages;

/// An Anthropic Messages endpoint.
pub type Anthropic = HttpProvider<Messages>;

/// The path under the base URL (`/messages` after a `/v1` base).
fn versioned(spec: &Spec, endpoint: &str) -> String {
    if spec.base_url.ends_with("/v1") {
        endpoint.to_string()
    } else {
        format!("/v1{endpoint}")
    }
}

/// The body options `spec` asks for.
pub fn options<'a>(spec: &'a Spec, req: &Request<'_>) -> request::Options<'a> {
    request::Options {
        name: &spec.name,
        max_tokens: req
            .output_cap(spec)
            .map_or(DEFAULT_MAX_TOKENS, |n| u32::try_from(n).unwrap_or(u32::MAX)),
        thinking_budget: spec.reasoning_effort.as_deref().and_then(thinking_budget),
        temperature: spec.temperature,
    }
}

#[async_trait::async_trait]
impl Wire for Messages {
    type Decoder = Decoder;

    fn key_header(&self) -> KeyHeader {
        KeyHeader::Named("x-api-key")
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", API_VERSION)]
    }

    fn stream_path(&self, spec: &Spec, _: &str) -> String {
        versioned(spec, "/messages")
    }

    fn body<'a>(&self, spec: &'a Spec, req: Request<'a>) -> serde_json::Result<Body<'a>> {
        let opts = options(spec, &req);
        Ok(Box::new(request::body(req, &opts)?))
    }

    fn errors_arrive_in_stream(&self) -> bool {
        true
    }

    fn error_object(&self, error: &serde_json::Value) -> VendorError {
        error::object(error)
    }

    fn models_path(&self, spec: &Spec) -> String {
        versioned(spec, "/models")
    }
}

/// Turns SSE payloads into events. A body that ends before `message_stop` or a stop
/// reason was cut off, and says so.
pub fn decode(data: DataStream) -> EventStream {
    super::decode::decode(data, Decoder::default())
}
