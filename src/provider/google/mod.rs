//! The Google Gemini API (`POST models/{model}:streamGenerateContent?alt=sse`) as a
//! `Wire`: the key in `x-goog-api-key`, the body (`request`, `schema`), the (CRLF-framed)
//! stream decoder (`stream`), how its errors read (`error`) and its model list.

pub mod error;
pub mod request;
pub mod schema;
pub mod stream;

use serde_json::{Value, json};

use super::http::{DataStream, KeyHeader};
use super::status::VendorError;
use super::wire::{Body, HttpProvider, Wire};
use super::{EventStream, Request, Spec};
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

/// The Gemini wire format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gemini;

/// A Gemini endpoint.
pub type Google = HttpProvider<Gemini>;

/// The path under the base URL; a base with no API version gets `/v1beta`.
fn versioned(spec: &Spec, endpoint: &str) -> String {
    let versioned = ["/v1", "/v1beta", "/v1alpha"]
        .iter()
        .any(|v| spec.base_url.ends_with(v));
    if versioned {
        endpoint.to_string()
    } else {
        format!("/v1beta{endpoint}")
    }
}

#[async_trait::async_trait]
impl Wire for Gemini {
    type Decoder = Decoder;

    fn key_header(&self) -> KeyHeader {
        KeyHeader::Named("x-goog-api-key")
    }

    /// The streaming path for `model` (`models/` prefix optional).
    fn stream_path(&self, spec: &Spec, model: &str) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        versioned(spec, &format!("/models/{model}:streamGenerateContent?alt=sse"))
    }

    fn body<'a>(&self, spec: &'a Spec, req: Request<'a>) -> serde_json::Result<Body<'a>> {
        let opts = request::Options {
            name: &spec.name,
            max_output_tokens: req.output_cap(spec),
            temperature: spec.temperature,
            thinking: thinking_config(req.model, spec.reasoning_effort.as_deref()),
        };
        Ok(Box::new(request::body(req, &opts)?))
    }

    fn errors_arrive_in_stream(&self) -> bool {
        true
    }

    fn error_object(&self, error: &serde_json::Value) -> VendorError {
        error::object(error)
    }

    fn models_path(&self, spec: &Spec) -> String {
        versioned(spec, "/models?pageSize=1000")
    }

    /// The names of `models[]` that can generate content.
    fn model_names(&self, body: &Value) -> Vec<String> {
        body["models"]
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
            .collect()
    }
}

/// Turns SSE payloads into events. Gemini sends no `[DONE]`: a body that ends before any
/// finish reason was cut off, and says so.
pub fn decode(data: DataStream) -> EventStream {
    super::decode::decode(data, Decoder::default())
}
