//! Anthropic Messages stream decoding: turns each SSE `data:` payload (message_start,
//! content_block_*, message_delta, ping, error …) into `StreamEvent`s, accumulating tool
//! input JSON and thinking signatures per content block. Pure: no IO, no request shape.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::provider::decode::{self, Held};
use crate::provider::status;
use crate::provider::{FinishReason, ProviderError, StreamEvent};
use crate::text::shorten;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Payload {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize, Default)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // the wire names
enum Delta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Unknown,
}

/// One content block being received.
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    Other,
}

/// Accumulates one streamed message. Feed every `data:` payload to `push`; call `finish`
/// when the body ended.
#[derive(Default)]
pub struct Decoder {
    blocks: BTreeMap<u64, Block>,
    input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
    saw_usage: bool,
    stop_reason: Option<String>,
    stopped: bool,
    /// True once anything the user sees (text, reasoning, a call) came out.
    produced: bool,
    /// Bytes of tool input held back until their blocks close.
    held: Held,
}

impl Decoder {
    /// True once any text, reasoning or tool call was produced (an error after that
    /// point cannot be retried without losing what the user saw).
    pub fn produced_output(&self) -> bool {
        self.produced
    }

    fn add_usage(&mut self, u: &Usage) {
        self.saw_usage = true;
        // message_delta repeats the totals so far; later values replace earlier ones.
        if let Some(v) = u.input_tokens {
            self.input = v;
        }
        if let Some(v) = u.cache_read_input_tokens {
            self.cache_read = v;
        }
        if let Some(v) = u.cache_creation_input_tokens {
            self.cache_creation = v;
        }
        if let Some(v) = u.output_tokens {
            self.output = v;
        }
    }

    fn start(&mut self, index: u64, block: Value, out: &mut Vec<StreamEvent>) {
        let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let b = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = text("text");
                if !t.is_empty() {
                    self.produced = true;
                    out.push(StreamEvent::TextDelta(t));
                }
                Block::Text
            }
            // Server tools (web search…) run at Anthropic; only client tools come here.
            Some("tool_use") => Block::ToolUse {
                id: text("id"),
                name: text("name"),
                json: String::new(),
                initial: block.get("input").cloned().unwrap_or(Value::Null),
            },
            Some("thinking") => {
                let t = text("thinking");
                if !t.is_empty() {
                    self.produced = true;
                    out.push(StreamEvent::ReasoningDelta(t.clone()));
                }
                Block::Thinking {
                    text: t,
                    signature: text("signature"),
                }
            }
            Some("redacted_thinking") => Block::Redacted { data: text("data") },
            _ => Block::Other,
        };
        self.blocks.insert(index, b);
    }

    fn delta(&mut self, index: u64, delta: Delta, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let block = self.blocks.entry(index).or_insert(Block::Other);
        match (delta, block) {
            (Delta::TextDelta { text }, _) if !text.is_empty() => {
                self.produced = true;
                out.push(StreamEvent::TextDelta(text));
            }
            (Delta::InputJsonDelta { partial_json }, Block::ToolUse { json, .. }) => {
                self.held.add(partial_json.len())?;
                json.push_str(&partial_json)
            }
            (Delta::ThinkingDelta { thinking }, b) => {
                if let Block::Thinking { text, .. } = b {
                    text.push_str(&thinking);
                }
                if !thinking.is_empty() {
                    self.produced = true;
                    out.push(StreamEvent::ReasoningDelta(thinking));
                }
            }
            (Delta::SignatureDelta { signature: s }, Block::Thinking { signature, .. }) => {
                signature.push_str(&s)
            }
            _ => {}
        }
        Ok(())
    }

    fn close(&mut self, block: Block, out: &mut Vec<StreamEvent>) {
        match block {
            Block::ToolUse {
                id,
                name,
                json,
                initial,
            } => {
                self.produced = true;
                let arguments = if !json.trim().is_empty() {
                    json
                } else if initial.as_object().is_some_and(|o| !o.is_empty()) {
                    initial.to_string()
                } else {
                    "{}".to_string()
                };
                out.push(StreamEvent::ToolCall { id, name, arguments });
            }
            Block::Thinking { text, signature } => {
                self.produced = true;
                out.push(StreamEvent::Reasoning {
                    text,
                    opaque: serde_json::json!({"type": "thinking", "signature": signature}),
                });
            }
            Block::Redacted { data } => {
                self.produced = true;
                out.push(StreamEvent::Reasoning {
                    text: String::new(),
                    opaque: serde_json::json!({"type": "redacted_thinking", "data": data}),
                });
            }
            Block::Text | Block::Other => {}
        }
    }
}

/// Anthropic's `stop_reason` in canonical terms.
pub fn finish_reason(r: &str) -> FinishReason {
    match r {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter(r.to_string()),
        other => FinishReason::Other(other.to_string()),
    }
}

impl decode::Decoder for Decoder {
    fn held(&mut self) -> &mut Held {
        &mut self.held
    }

    /// True once `message_stop` or a stop reason arrived.
    fn is_complete(&self) -> bool {
        self.stopped || self.stop_reason.is_some()
    }
    /// True once `message_stop` arrived (nothing more will come).
    fn is_done(&self) -> bool {
        self.stopped
    }
    /// Decodes one payload into the events it completes.
    fn push(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let payload: Payload = serde_json::from_str(data)
            .map_err(|e| ProviderError::Stream(format!("malformed event ({e}): {}", shorten(data, 200))))?;
        let mut out = Vec::new();
        match payload {
            Payload::MessageStart { message } => {
                if let Some(u) = message.usage {
                    self.add_usage(&u);
                }
            }
            Payload::ContentBlockStart { index, content_block } => self.start(index, content_block, &mut out),
            Payload::ContentBlockDelta { index, delta } => self.delta(index, delta, &mut out)?,
            Payload::ContentBlockStop { index } => {
                if let Some(block) = self.blocks.remove(&index) {
                    self.close(block, &mut out);
                }
            }
            Payload::MessageDelta { delta, usage } => {
                if let Some(r) = delta.stop_reason {
                    self.stop_reason = Some(r);
                }
                if let Some(u) = usage {
                    self.add_usage(&u);
                }
            }
            Payload::MessageStop => self.stopped = true,
            Payload::Ping | Payload::Unknown => {}
            Payload::Error { error } => {
                return Err(status::in_stream(&super::error::object(&error), self.produced));
            }
        }
        Ok(out)
    }
    /// Ends the message: blocks never closed (a truncated tool input keeps its raw text),
    /// the usage, and `Finished`.
    fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for (_, block) in std::mem::take(&mut self.blocks) {
            self.close(block, &mut out);
        }
        if self.saw_usage {
            out.push(StreamEvent::Usage {
                input: self.input + self.cache_read + self.cache_creation,
                output: self.output,
                cached: self.cache_read,
            });
        }
        out.push(StreamEvent::Finished {
            reason: self.stop_reason.as_deref().map(finish_reason),
        });
        out
    }

    fn malformed_then_end_is_cut(&self) -> bool {
        true
    }
}
