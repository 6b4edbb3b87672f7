//! Responses API stream decoding: `response.*` events → `StreamEvent`s. Text and
//! reasoning summaries stream out at once; a function call comes out whole at its
//! `output_item.done`; a reasoning item comes out with its encrypted content. Pure: no IO.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::provider::decode::{Decoder, Held};
use crate::provider::openai::error::in_stream as api_error;
use crate::provider::{FinishReason, ProviderError, StreamEvent};
use crate::text::shorten;

#[derive(Default)]
struct PartialCall {
    call_id: String,
    name: String,
    arguments: String,
}

/// One streamed response.
#[derive(Default)]
pub struct ResponsesDecoder {
    /// Function calls in progress, by item id.
    calls: BTreeMap<String, PartialCall>,
    /// Reasoning summary text per reasoning item, for the stored block.
    summaries: BTreeMap<String, String>,
    saw_call: bool,
    done: bool,
    /// Bytes of streamed arguments held back until their calls are done.
    held: Held,
}

impl ResponsesDecoder {
    fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
        v.get(key).and_then(Value::as_str).unwrap_or("")
    }

    fn item_added(&mut self, item: &Value) {
        if item["type"] == "function_call" {
            self.calls.insert(
                Self::str_of(item, "id").to_string(),
                PartialCall {
                    call_id: Self::str_of(item, "call_id").to_string(),
                    name: Self::str_of(item, "name").to_string(),
                    arguments: Self::str_of(item, "arguments").to_string(),
                },
            );
        }
    }

    fn item_done(&mut self, item: &Value, out: &mut Vec<StreamEvent>) {
        let id = Self::str_of(item, "id").to_string();
        match item["type"].as_str() {
            Some("function_call") => {
                let partial = self.calls.remove(&id).unwrap_or_default();
                let pick = |a: &str, b: String| if a.is_empty() { b } else { a.to_string() };
                self.saw_call = true;
                out.push(StreamEvent::ToolCall {
                    id: pick(Self::str_of(item, "call_id"), partial.call_id),
                    name: pick(Self::str_of(item, "name"), partial.name),
                    arguments: pick(Self::str_of(item, "arguments"), partial.arguments),
                });
            }
            Some("reasoning") => {
                let streamed = self.summaries.remove(&id).unwrap_or_default();
                let text = match item["summary"].as_array() {
                    Some(parts) if !parts.is_empty() => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n\n"),
                    _ => streamed,
                };
                // Sent back as is on later requests: no id or status (store is false).
                let mut opaque = item.clone();
                if let Some(o) = opaque.as_object_mut() {
                    o.remove("id");
                    o.remove("status");
                }
                out.push(StreamEvent::Reasoning { text, opaque });
            }
            _ => {}
        }
    }

    fn usage(response: &Value, out: &mut Vec<StreamEvent>) {
        let u = &response["usage"];
        if u.is_object() {
            out.push(StreamEvent::Usage {
                input: u["input_tokens"].as_u64().unwrap_or(0),
                output: u["output_tokens"].as_u64().unwrap_or(0),
                cached: u["input_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
            });
        }
    }

    /// Calls never finished (a response cut short), as they stand.
    fn drain_partial(&mut self, out: &mut Vec<StreamEvent>) {
        for (_, c) in std::mem::take(&mut self.calls) {
            out.push(StreamEvent::ToolCall {
                id: c.call_id,
                name: c.name,
                arguments: c.arguments,
            });
        }
    }
}

impl Decoder for ResponsesDecoder {
    fn held(&mut self) -> &mut Held {
        &mut self.held
    }

    fn push(&mut self, payload: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let payload = payload.trim();
        if payload.is_empty() || payload == "[DONE]" {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(payload).map_err(|e| {
            ProviderError::Stream(format!("malformed event ({e}): {}", shorten(payload, 200)))
        })?;
        let mut out = Vec::new();
        match v["type"].as_str().unwrap_or("") {
            "response.output_text.delta" | "response.refusal.delta" => {
                let d = Self::str_of(&v, "delta");
                if !d.is_empty() {
                    out.push(StreamEvent::TextDelta(d.to_string()));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let d = Self::str_of(&v, "delta");
                let item = Self::str_of(&v, "item_id").to_string();
                self.summaries.entry(item).or_default().push_str(d);
                if !d.is_empty() {
                    out.push(StreamEvent::ReasoningDelta(d.to_string()));
                }
            }
            "response.reasoning_summary_part.added" if v["summary_index"].as_u64().unwrap_or(0) > 0 => {
                out.push(StreamEvent::ReasoningDelta("\n\n".into()));
            }
            "response.output_item.added" => self.item_added(&v["item"]),
            "response.function_call_arguments.delta" => {
                let d = Self::str_of(&v, "delta");
                self.held.add(d.len())?;
                let item = Self::str_of(&v, "item_id").to_string();
                self.calls.entry(item).or_default().arguments.push_str(d);
            }
            "response.function_call_arguments.done" => {
                let item = Self::str_of(&v, "item_id").to_string();
                if let Some(args) = v.get("arguments").and_then(Value::as_str) {
                    self.calls.entry(item).or_default().arguments = args.to_string();
                }
            }
            "response.output_item.done" => self.item_done(&v["item"], &mut out),
            "response.completed" => {
                self.drain_partial(&mut out);
                Self::usage(&v["response"], &mut out);
                let reason = if self.saw_call {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                out.push(StreamEvent::Finished { reason: Some(reason) });
                self.done = true;
            }
            "response.incomplete" => {
                self.drain_partial(&mut out);
                Self::usage(&v["response"], &mut out);
                let why = v["response"]["incomplete_details"]["reason"]
                    .as_str()
                    .unwrap_or("length");
                out.push(StreamEvent::Finished {
                    reason: Some(FinishReason::parse(why)),
                });
                self.done = true;
            }
            "response.failed" => {
                let err = &v["response"]["error"];
                return Err(if err.is_object() {
                    api_error(err)
                } else {
                    ProviderError::Api("the response failed".into())
                });
            }
            "error" => {
                let err = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
                return Err(api_error(err));
            }
            _ => {}
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn is_complete(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }
}
