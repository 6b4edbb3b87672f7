//! A whole `chat.completion` JSON body (a server that ignored `stream: true`) read as the
//! answer: its message becomes one delta through the stream accumulator. Pure: no IO.

use serde_json::{Value, json};

use super::stream::Accumulator;
use crate::provider::decode::Decoder as _;
use crate::provider::{ProviderError, StreamEvent};
use crate::text::shorten;

/// The events of one non-streamed completion, ending with `Finished` (or an error).
pub fn events(body: &str, max_bytes: usize) -> Vec<Result<StreamEvent, ProviderError>> {
    let v: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => {
            return vec![Err(ProviderError::Stream(format!(
                "the server answered with JSON that is not a completion ({e}): {}",
                shorten(body, 200)
            )))];
        }
    };
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return vec![Err(super::error::in_stream(err))];
    }
    let Some(choices) = v.get("choices").and_then(Value::as_array) else {
        return vec![Err(ProviderError::Stream(format!(
            "the server answered with JSON that is not a completion: {}",
            shorten(body, 200)
        )))];
    };
    // The message of each choice is a delta holding everything at once.
    let choices: Vec<Value> = choices
        .iter()
        .map(|c| {
            let mut delta = c.get("message").cloned().unwrap_or(Value::Null);
            if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for (i, call) in calls.iter_mut().enumerate() {
                    if call.get("index").is_none() {
                        call["index"] = json!(i);
                    }
                }
            }
            json!({"delta": delta, "finish_reason": c.get("finish_reason").cloned().unwrap_or(json!("stop"))})
        })
        .collect();
    let chunk = json!({"choices": choices, "usage": v.get("usage").cloned().unwrap_or(Value::Null)});
    let mut acc = Accumulator::with_limit(max_bytes);
    match acc.push(&chunk.to_string()) {
        Ok(mut out) => {
            out.extend(acc.finish());
            out.into_iter().map(Ok).collect()
        }
        Err(e) => vec![Err(e)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::FinishReason;

    #[test]
    fn a_plain_completion_is_the_answer() {
        let body = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",
            "choices":[{"index":0,"message":{"role":"assistant","content":"Hello there.",
            "tool_calls":[{"id":"call_a","type":"function","function":{"name":"glob","arguments":"{\"pattern\":\"*\"}"}}]},
            "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#;
        let ev: Vec<StreamEvent> = events(body, 1 << 20).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            ev,
            vec![
                StreamEvent::TextDelta("Hello there.".into()),
                StreamEvent::ToolCall {
                    id: "call_a".into(),
                    name: "glob".into(),
                    arguments: r#"{"pattern":"*"}"#.into()
                },
                StreamEvent::Usage {
                    input: 9,
                    output: 3,
                    cached: 0
                },
                StreamEvent::Finished {
                    reason: Some(FinishReason::ToolCalls)
                },
            ]
        );
    }

    #[test]
    fn error_bodies_and_other_json_are_errors() {
        let e = events(
            r#"{"error":{"message":"nope","type":"invalid_request_error"}}"#,
            100,
        );
        assert!(matches!(&e[0], Err(ProviderError::Api(m)) if m.contains("nope")));
        let e = events(r#"{"hello":1}"#, 100);
        assert!(matches!(&e[0], Err(ProviderError::Stream(m)) if m.contains("not a completion")));
    }
}
