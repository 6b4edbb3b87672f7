//! The OpenAI Responses API (`/responses`) as a `Wire`: stateless requests
//! (`store: false`) with function tools, reasoning items sent back with their encrypted
//! content (`request`), and the `response.*` stream decoded into `StreamEvent`s
//! (`stream`). Errors read as OpenAI's.

pub mod request;
pub mod stream;

use super::http::KeyHeader;
use super::status::VendorError;
use super::wire::{Body, HttpProvider, Wire};
use super::{Request, Spec};
use stream::ResponsesDecoder;

/// The Responses wire format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Responses;

/// A Responses API endpoint.
pub type OpenAiResponses = HttpProvider<Responses>;

#[async_trait::async_trait]
impl Wire for Responses {
    type Decoder = ResponsesDecoder;

    fn key_header(&self) -> KeyHeader {
        KeyHeader::Bearer
    }

    fn stream_path(&self, _: &Spec, _: &str) -> String {
        "/responses".to_string()
    }

    fn body<'a>(&self, spec: &'a Spec, req: Request<'a>) -> serde_json::Result<Body<'a>> {
        Ok(Box::new(request::body(req, spec)?))
    }

    fn error_object(&self, error: &serde_json::Value) -> VendorError {
        super::openai::error::object(error)
    }
}
