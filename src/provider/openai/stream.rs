//! Chat Completions stream decoding: turns each SSE `data:` payload into `StreamEvent`s,
//! accumulating tool-call fragments by index until the response finishes. Pure: no IO.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::provider::decode::{self, Held};
use crate::provider::{FinishReason, ProviderError, StreamEvent};
use crate::text::shorten;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's name for cached input tokens.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates one streamed response. Feed it every `data:` payload with `push`, then
/// call `finish` once the stream ended (after `[DONE]` or end of body).
#[derive(Default)]
pub struct Accumulator {
    calls: BTreeMap<u64, PartialCall>,
    /// The index of each call id seen (for deltas without an index), so that finding one
    /// does not walk every call.
    by_id: std::collections::HashMap<String, u64>,
    /// Index of the most recent call, for deltas that carry no index.
    last_index: Option<u64>,
    usage: Option<(u64, u64, u64)>,
    finish_reason: Option<FinishReason>,
    done: bool,
    /// Bytes of tool arguments held back until their calls are complete.
    held: Held,
}

impl Accumulator {
    /// True once any choice carried a finish reason.
    pub fn saw_finish(&self) -> bool {
        self.finish_reason.is_some()
    }

    fn apply_delta(&mut self, delta: Delta, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        for reasoning in [delta.reasoning_content, delta.reasoning].into_iter().flatten() {
            if !reasoning.is_empty() {
                out.push(StreamEvent::ReasoningDelta(reasoning));
            }
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                out.push(StreamEvent::TextDelta(text));
            }
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.apply_call(call)?;
        }
        Ok(())
    }

    fn apply_call(&mut self, call: ToolCallDelta) -> Result<(), ProviderError> {
        let id = call.id.filter(|s| !s.is_empty());
        let index = match call.index {
            Some(i) => i,
            // No index (Mistral): a new id starts a new call, otherwise continue the last one.
            None => match (&id, self.last_index) {
                (Some(id), _) => match self.by_id.get(id) {
                    Some(i) => *i,
                    None => self.calls.keys().next_back().map_or(0, |k| k + 1),
                },
                (None, Some(last)) => last,
                (None, None) => 0,
            },
        };
        self.last_index = Some(index);
        let slot = self.calls.entry(index).or_default();
        if let Some(id) = id
            && slot.id.is_empty()
        {
            self.by_id.entry(id.clone()).or_insert(index);
            slot.id = id;
        }
        if let Some(f) = call.function {
            // Some servers repeat the whole name on every delta; the first one wins.
            if let Some(name) = f.name.filter(|n| !n.is_empty())
                && slot.name.is_empty()
            {
                slot.name = name;
            }
            if let Some(args) = f.arguments {
                self.held.add(args.len())?;
                slot.arguments.push_str(&args);
            }
        }
        Ok(())
    }

    fn drain_calls(&mut self, out: &mut Vec<StreamEvent>) {
        let mut seen = std::collections::HashSet::new();
        self.by_id.clear();
        for (_, call) in std::mem::take(&mut self.calls) {
            // A missing id gets a fresh one; an id sent at two indexes is made unique.
            let id = match call.id {
                id if id.is_empty() => crate::message::fresh_call_id(),
                id if seen.contains(&id) => crate::message::fresh_call_id(),
                id => id,
            };
            seen.insert(id.clone());
            out.push(StreamEvent::ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        self.last_index = None;
        self.held.release();
    }
}

impl decode::Decoder for Accumulator {
    fn held(&mut self) -> &mut Held {
        &mut self.held
    }

    /// True once `[DONE]` arrived.
    fn is_done(&self) -> bool {
        self.done
    }
    /// Decodes one payload. Text and reasoning deltas come out at once; tool calls come
    /// out at `finish_reason` (or from `finish`), whole.
    fn push(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| ProviderError::Stream(format!("malformed chunk ({e}): {}", shorten(data, 200))))?;
        if let Some(err) = chunk.error {
            return Err(super::error::in_stream(&err));
        }
        if let Some(u) = chunk.usage {
            let cached = u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(u.prompt_cache_hit_tokens)
                .unwrap_or(0);
            self.usage = Some((
                u.prompt_tokens.unwrap_or(0),
                u.completion_tokens.unwrap_or(0),
                cached,
            ));
        }
        let mut out = Vec::new();
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, &mut out)?;
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(FinishReason::parse(&reason));
                self.drain_calls(&mut out);
            }
        }
        Ok(out)
    }
    /// Ends the response: any calls not yet finalised, the usage, and `Finished`.
    fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        self.drain_calls(&mut out);
        if let Some((input, output, cached)) = self.usage.take() {
            out.push(StreamEvent::Usage {
                input,
                output,
                cached,
            });
        }
        out.push(StreamEvent::Finished {
            reason: self.finish_reason.take(),
        });
        out
    }

    fn is_complete(&self) -> bool {
        self.saw_finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::decode::Decoder as _;

    fn run(payloads: &[&str]) -> Vec<StreamEvent> {
        let mut acc = Accumulator::default();
        let mut out = Vec::new();
        for p in payloads {
            out.extend(acc.push(p).unwrap());
        }
        out.extend(acc.finish());
        out
    }

    fn call(id: &str, name: &str, args: &str) -> StreamEvent {
        StreamEvent::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn interleaved_fragments_of_three_calls_join_by_index() {
        let p = |i: u32, extra: &str| {
            format!(r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{i}{extra}}}]}}}}]}}"#)
        };
        let events = run(&[
            &p(
                0,
                r#","id":"a","type":"function","function":{"name":"glob","arguments":""}"#,
            ),
            &p(
                1,
                r#","id":"b","function":{"name":"file_read","arguments":"{\"pa"}"#,
            ),
            &p(0, r#","function":{"arguments":"{\"pattern\":"}"#),
            &p(2, r#","id":"c","function":{"name":"glob","arguments":"{}"}"#),
            &p(1, r#","function":{"arguments":"th\":\"x\"}"}"#),
            &p(0, r#","function":{"arguments":"\"*\"}"}"#),
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            events,
            vec![
                call("a", "glob", r#"{"pattern":"*"}"#),
                call("b", "file_read", r#"{"path":"x"}"#),
                call("c", "glob", "{}"),
                StreamEvent::Finished {
                    reason: Some(FinishReason::ToolCalls)
                },
            ]
        );
    }

    #[test]
    fn missing_ids_are_generated_and_usage_comes_last() {
        let events = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"glob","arguments":"{}"}}]}}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":null}}"#,
            "[DONE]",
        ]);
        let StreamEvent::ToolCall { id, .. } = &events[0] else {
            panic!("{events:?}")
        };
        assert!(id.starts_with("call_") && id.len() > 12, "{id}");
        assert_eq!(
            events,
            vec![
                call(id, "glob", "{}"),
                StreamEvent::Usage {
                    input: 5,
                    output: 0,
                    cached: 0
                },
                StreamEvent::Finished { reason: None }
            ]
        );
    }

    #[test]
    fn fresh_ids_differ_between_responses_and_duplicates_are_made_unique() {
        let p = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"glob","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
        let ids = |events: Vec<StreamEvent>| -> Vec<String> {
            events
                .into_iter()
                .filter_map(|e| match e {
                    StreamEvent::ToolCall { id, .. } => Some(id),
                    _ => None,
                })
                .collect()
        };
        let a = ids(run(&[p]));
        let b = ids(run(&[p]));
        assert_ne!(a, b, "every response gets its own fresh ids");
        let dup = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"glob","arguments":"{}"}},{"index":1,"id":"call_1","function":{"name":"glob","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
        let d = ids(run(&[dup]));
        assert_eq!(d.len(), 2);
        assert_eq!(d[0], "call_1");
        assert_ne!(d[1], "call_1");
    }

    #[test]
    fn arguments_past_the_limit_are_an_error() {
        let mut acc = Accumulator::with_limit(10);
        let p = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"0123456789ab"}}]}}]}"#;
        assert!(matches!(acc.push(p), Err(ProviderError::TooLarge(_))));
    }

    #[test]
    fn malformed_json_and_error_objects_are_errors() {
        let mut acc = Accumulator::default();
        let e = acc.push("{not json").unwrap_err();
        assert!(
            matches!(e, ProviderError::Stream(ref m) if m.contains("malformed chunk")),
            "{e}"
        );
        let e = acc
            .push(r#"{"error":{"message":"The server had an error","type":"server_error"}}"#)
            .unwrap_err();
        assert_eq!(
            e,
            ProviderError::Api("The server had an error (server_error)".into())
        );
    }
}
