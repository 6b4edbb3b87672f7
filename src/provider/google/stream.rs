//! Gemini `streamGenerateContent?alt=sse` decoding: each SSE `data:` payload is a
//! GenerateContentResponse; text, thought summaries, `functionCall` parts (whole, or with
//! Vertex's streamed `partialArgs`), `thoughtSignature`s, usage metadata and finish /
//! safety reasons become `StreamEvent`s. Pure: no IO, no request shape.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::error;
use crate::provider::decode::{self, Held};
use crate::provider::status;
use crate::provider::{FinishReason, ProviderError, StreamEvent};

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    safety_ratings: Vec<SafetyRating>,
}

#[derive(Deserialize, Default)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCallPart>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FunctionCallPart {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    partial_args: Option<Vec<PartialArg>>,
    #[serde(default)]
    will_continue: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartialArg {
    #[serde(default)]
    json_path: String,
    #[serde(default)]
    string_value: Option<String>,
    #[serde(default)]
    number_value: Option<f64>,
    #[serde(default)]
    bool_value: Option<bool>,
    #[serde(default)]
    null_value: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct SafetyRating {
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    blocked: Option<bool>,
}

/// A call whose arguments are still streaming (Vertex `willContinue`).
struct OpenCall {
    id: Option<String>,
    name: String,
    args: Value,
}

/// Accumulates one streamed response. Feed every `data:` payload to `push`; call
/// `finish` when the body ended.
#[derive(Default)]
pub struct Decoder {
    open: Option<OpenCall>,
    /// Thought summary text not yet closed by a signature.
    thought: String,
    usage: Option<(u64, u64, u64)>,
    finish: Option<String>,
    response_id: Option<String>,
    calls: u32,
    produced: bool,
    /// Safety categories that blocked the answer.
    blocked: Vec<String>,
    /// Bytes of streamed arguments held back until their calls close.
    held: Held,
}

impl Decoder {
    /// Safety categories that blocked the answer (for the notice shown to the user).
    pub fn blocked_categories(&self) -> &[String] {
        &self.blocked
    }

    fn part(&mut self, part: Part, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let thought = part.thought == Some(true);
        if thought && let Some(t) = part.text.as_deref().filter(|t| !t.is_empty()) {
            self.produced = true;
            self.thought.push_str(t);
            out.push(StreamEvent::ReasoningDelta(t.to_string()));
        }
        if let Some(sig) = part.thought_signature.filter(|s| !s.is_empty()) {
            self.produced = true;
            out.push(StreamEvent::Reasoning {
                text: std::mem::take(&mut self.thought),
                opaque: json!({"thoughtSignature": sig}),
            });
        }
        if thought {
            return Ok(());
        }
        if let Some(t) = part.text.filter(|t| !t.is_empty()) {
            self.produced = true;
            out.push(StreamEvent::TextDelta(t));
        }
        if let Some(fc) = part.function_call {
            self.function_call(fc, out)?;
        }
        Ok(())
    }

    fn function_call(
        &mut self,
        fc: FunctionCallPart,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let has_name = fc.name.as_deref().is_some_and(|n| !n.is_empty());
        if let Some(partials) = fc.partial_args {
            if let Some(open) = self.open.as_mut() {
                for p in partials {
                    self.held.add(p.string_value.as_ref().map_or(8, String::len))?;
                    apply_partial(&mut open.args, p);
                }
            }
            return Ok(());
        }
        if !has_name {
            // `functionCall: {}` ends a streamed call.
            self.close_open(out);
            return Ok(());
        }
        self.close_open(out);
        let call = OpenCall {
            id: fc.id.filter(|s| !s.is_empty()),
            name: fc.name.unwrap_or_default(),
            args: fc.args.unwrap_or_else(|| Value::Object(Map::new())),
        };
        if fc.will_continue == Some(true) {
            self.open = Some(call);
        } else {
            self.emit_call(call, out);
        }
        Ok(())
    }

    fn close_open(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(call) = self.open.take() {
            self.emit_call(call, out);
        }
    }

    fn emit_call(&mut self, call: OpenCall, out: &mut Vec<StreamEvent>) {
        self.produced = true;
        self.calls += 1;
        let id = call.id.unwrap_or_else(|| match &self.response_id {
            Some(r) => format!("call_{r}_{}", self.calls),
            None => format!("call_{}_{}", uuid::Uuid::new_v4().simple(), self.calls),
        });
        let args = if call.args.is_object() {
            call.args
        } else {
            Value::Object(Map::new())
        };
        out.push(StreamEvent::ToolCall {
            id,
            name: call.name,
            arguments: args.to_string(),
        });
    }
}

/// Gemini's `finishReason` in canonical terms.
pub fn finish_reason(r: &str) -> FinishReason {
    match r {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter(r.to_string())
        }
        other => FinishReason::Other(other.to_string()),
    }
}

/// Applies one streamed argument (`$.a.b[0]` path) to the arguments object; string
/// pieces of one path are joined.
fn apply_partial(args: &mut Value, p: PartialArg) {
    let Some(slot) = slot_at(args, &p.json_path) else {
        return;
    };
    if let Some(s) = p.string_value {
        match slot {
            Value::String(existing) => existing.push_str(&s),
            other => *other = Value::String(s),
        }
    } else if let Some(n) = p.number_value {
        *slot = serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number);
    } else if let Some(b) = p.bool_value {
        *slot = Value::Bool(b);
    } else if p.null_value.is_some() {
        *slot = Value::Null;
    }
}

/// The value at a JSONPath like `$.a.b[2]`, created as needed.
fn slot_at<'v>(root: &'v mut Value, path: &str) -> Option<&'v mut Value> {
    let rest = path.strip_prefix('$')?;
    let mut cur = root;
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut key = String::new();
                while let Some(&n) = chars.peek() {
                    if n == '.' || n == '[' {
                        break;
                    }
                    key.push(n);
                    chars.next();
                }
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur = cur.as_object_mut()?.entry(key).or_insert(Value::Null);
            }
            '[' => {
                let mut idx = String::new();
                for n in chars.by_ref() {
                    if n == ']' {
                        break;
                    }
                    idx.push(n);
                }
                let key = idx.trim_matches(|c| c == '\'' || c == '"');
                if let Ok(i) = key.parse::<usize>() {
                    if !cur.is_array() {
                        *cur = Value::Array(Vec::new());
                    }
                    let arr = cur.as_array_mut()?;
                    if arr.len() <= i {
                        arr.resize(i + 1, Value::Null);
                    }
                    cur = arr.get_mut(i)?;
                } else {
                    if !cur.is_object() {
                        *cur = Value::Object(Map::new());
                    }
                    cur = cur.as_object_mut()?.entry(key.to_string()).or_insert(Value::Null);
                }
            }
            _ => return None,
        }
    }
    Some(cur)
}

/// Gemini sends no end marker: the body's end is the end of the response.
impl decode::Decoder for Decoder {
    fn held(&mut self) -> &mut Held {
        &mut self.held
    }

    /// True once a finish reason arrived.
    fn is_complete(&self) -> bool {
        self.finish.is_some()
    }
    /// Decodes one payload into the events it completes.
    fn push(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ProviderError::Stream(format!(
                "malformed chunk ({e}): {}",
                crate::text::shorten(data, 200)
            ))
        })?;
        if let Some(err) = chunk.error {
            return Err(status::in_stream(&error::object(&err), self.produced));
        }
        if self.response_id.is_none() {
            self.response_id = chunk.response_id;
        }
        if let Some(u) = chunk.usage_metadata
            && u.prompt_token_count.is_some()
        {
            self.usage = Some((
                u.prompt_token_count.unwrap_or(0),
                u.candidates_token_count.unwrap_or(0) + u.thoughts_token_count.unwrap_or(0),
                u.cached_content_token_count.unwrap_or(0),
            ));
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            return Err(ProviderError::ContentFiltered {
                detail: format!(": Gemini blocked the prompt ({reason})"),
            });
        }
        let mut out = Vec::new();
        for cand in chunk.candidates.into_iter().take(1) {
            for part in cand.content.map(|c| c.parts).unwrap_or_default() {
                self.part(part, &mut out)?;
            }
            for r in cand.safety_ratings {
                if r.blocked == Some(true)
                    && let Some(c) = r.category
                {
                    self.blocked.push(c);
                }
            }
            if let Some(reason) = cand.finish_reason {
                self.close_open(&mut out);
                self.finish = Some(reason);
            }
        }
        Ok(out)
    }
    /// Ends the response: a still-open call, the usage, and `Finished`. (Thought text
    /// that no signature closed stays with the agent, which stores it unsigned.)
    fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        self.close_open(&mut out);
        if let Some((input, output, cached)) = self.usage.take() {
            out.push(StreamEvent::Usage {
                input,
                output,
                cached,
            });
        }
        let reason = self.finish.as_deref().map(|r| match finish_reason(r) {
            FinishReason::Stop if self.calls > 0 => FinishReason::ToolCalls,
            // The categories that blocked the answer say more than the reason alone.
            FinishReason::ContentFilter(r) if !self.blocked.is_empty() => {
                FinishReason::ContentFilter(format!("{r}: {}", self.blocked.join(", ")))
            }
            other => other,
        });
        out.push(StreamEvent::Finished { reason });
        out
    }

    /// Gemini sends no end marker: the body's end is the end of the response.
    fn is_done(&self) -> bool {
        false
    }

    fn malformed_then_end_is_cut(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::decode::Decoder as _;

    #[test]
    fn partial_paths_build_nested_arguments() {
        let mut args = json!({});
        let p = |path: &str, s: &str| PartialArg {
            json_path: path.into(),
            string_value: Some(s.into()),
            number_value: None,
            bool_value: None,
            null_value: None,
        };
        apply_partial(&mut args, p("$.path", "src/"));
        apply_partial(&mut args, p("$.path", "main.rs"));
        apply_partial(&mut args, p("$.opts.globs[1]", "*.rs"));
        apply_partial(
            &mut args,
            PartialArg {
                json_path: "$.n".into(),
                string_value: None,
                number_value: Some(3.0),
                bool_value: None,
                null_value: None,
            },
        );
        assert_eq!(
            args,
            json!({"path": "src/main.rs", "opts": {"globs": [null, "*.rs"]}, "n": 3.0})
        );
    }

    #[test]
    fn blocked_prompt_and_safety_finish_are_reported() {
        let mut d = Decoder::default();
        let e = d
            .push(r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#)
            .unwrap_err();
        assert!(e.to_string().contains("blocked the prompt (SAFETY)"), "{e}");
        let mut d = Decoder::default();
        d.push(r#"{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}]}"#)
            .unwrap();
        assert_eq!(d.blocked_categories(), ["HARM_CATEGORY_HARASSMENT"]);
        assert_eq!(
            d.finish().last(),
            Some(&StreamEvent::Finished {
                reason: Some(FinishReason::ContentFilter(
                    "SAFETY: HARM_CATEGORY_HARASSMENT".into()
                ))
            })
        );
    }
}
