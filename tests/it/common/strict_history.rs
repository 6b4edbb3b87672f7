//! The history checks a strict vendor applies before it answers, on the wire shape of
//! Chat Completions messages. Another fake vendor reuses the idea by mapping its own wire
//! messages to the `Turn`s below and calling `check_turns`.
#![allow(dead_code)]

use std::collections::HashSet;

use serde_json::Value;

/// One wire message, reduced to what the rules look at.
#[derive(Debug)]
pub enum Turn {
    /// A user or system message.
    User,
    /// An assistant message and the calls it makes: (id, arguments text).
    Assistant(Vec<(String, String)>),
    /// A tool result answering `id`.
    ToolResult(String),
}

/// What a strict vendor rejects with 400: a result whose id matches no call, a call with
/// no result before the next user or assistant message, an id used twice, and arguments
/// that are not valid JSON.
pub fn check_turns(turns: &[Turn]) -> Result<(), String> {
    let mut all_ids: HashSet<String> = HashSet::new();
    let mut open: Vec<String> = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        match t {
            Turn::User | Turn::Assistant(_) if !open.is_empty() => {
                return Err(format!(
                    "message {i}: tool call(s) {open:?} have no result before the next message"
                ));
            }
            Turn::User => {}
            Turn::Assistant(calls) => {
                for (id, args) in calls {
                    if id.is_empty() {
                        return Err(format!("message {i}: a tool call has an empty id"));
                    }
                    if !all_ids.insert(id.clone()) {
                        return Err(format!("message {i}: duplicate tool call id {id}"));
                    }
                    if let Err(e) = serde_json::from_str::<Value>(args) {
                        return Err(format!(
                            "message {i}: tool call {id}: arguments are not valid JSON ({e})"
                        ));
                    }
                    open.push(id.clone());
                }
            }
            Turn::ToolResult(id) => match open.iter().position(|o| o == id) {
                Some(p) => {
                    open.remove(p);
                }
                None => {
                    return Err(format!(
                        "message {i}: tool result for {id} matches no open tool call"
                    ));
                }
            },
        }
    }
    Ok(())
}

/// `check_turns` on a Chat Completions `messages` array.
pub fn check_chat(messages: &[Value]) -> Result<(), String> {
    let turns: Vec<Turn> = messages
        .iter()
        .map(|m| match m["role"].as_str() {
            Some("assistant") => Turn::Assistant(
                m["tool_calls"]
                    .as_array()
                    .map(|calls| {
                        calls
                            .iter()
                            .map(|c| {
                                (
                                    c["id"].as_str().unwrap_or("").to_string(),
                                    c["function"]["arguments"].as_str().unwrap_or("").to_string(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Some("tool") => Turn::ToolResult(m["tool_call_id"].as_str().unwrap_or("").to_string()),
            _ => Turn::User,
        })
        .collect();
    check_turns(&turns)
}

/// `check_turns` on a Responses API `input` array: consecutive `function_call` items
/// belong to one assistant turn; reasoning items are not turns.
pub fn check_responses(input: &[Value]) -> Result<(), String> {
    let mut turns: Vec<Turn> = Vec::new();
    for item in input {
        match (item["type"].as_str(), item["role"].as_str()) {
            (Some("function_call"), _) => {
                let call = (
                    item["call_id"].as_str().unwrap_or("").to_string(),
                    item["arguments"].as_str().unwrap_or("").to_string(),
                );
                match turns.last_mut() {
                    Some(Turn::Assistant(calls)) => calls.push(call),
                    _ => turns.push(Turn::Assistant(vec![call])),
                }
            }
            (Some("function_call_output"), _) => turns.push(Turn::ToolResult(
                item["call_id"].as_str().unwrap_or("").to_string(),
            )),
            (Some("reasoning"), _) => {
                if item.get("encrypted_content").is_none() {
                    return Err("a reasoning item without encrypted_content (store is false)".into());
                }
            }
            (_, Some("assistant")) => turns.push(Turn::Assistant(Vec::new())),
            _ => turns.push(Turn::User),
        }
    }
    check_turns(&turns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, args: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "glob", "arguments": args}})
    }

    #[test]
    fn each_rule_rejects_and_a_good_history_passes() {
        let good = vec![
            json!({"role": "user", "content": "x"}),
            json!({"role": "assistant", "content": null, "tool_calls": [call("a", "{}"), call("b", "{}")]}),
            json!({"role": "tool", "tool_call_id": "b", "content": "1"}),
            json!({"role": "tool", "tool_call_id": "a", "content": "1"}),
            json!({"role": "assistant", "content": "done"}),
        ];
        assert_eq!(check_chat(&good), Ok(()));
        let mut orphan = good.clone();
        orphan.remove(3);
        assert!(check_chat(&orphan).unwrap_err().contains("no result"));
        let mut stray = good.clone();
        stray.insert(1, json!({"role": "tool", "tool_call_id": "z", "content": ""}));
        assert!(check_chat(&stray).unwrap_err().contains("matches no"));
        let mut dup = good.clone();
        dup[1] = json!({"role": "assistant", "tool_calls": [call("a", "{}"), call("a", "{}")]});
        assert!(check_chat(&dup).unwrap_err().contains("duplicate"));
        let mut bad = good.clone();
        bad[1] = json!({"role": "assistant", "tool_calls": [call("a", "{\"x"), call("b", "{}")]});
        assert!(check_chat(&bad).unwrap_err().contains("not valid JSON"));
    }
}
