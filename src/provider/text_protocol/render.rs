//! The request side of the text protocol: the short system prompt that teaches the tags,
//! and canonical history rewritten as tagged text (tool calls as exec blocks, results as
//! output blocks), continued by assistant prefill or by a user message. Pure: no IO.

use serde_json::Value;

use super::calls::{signature, to_command};
use super::tags::{exec_block, output_block};
use crate::message::{Kind, Message};
use crate::tool_vocab::ToolSchema;

/// How the model sees a command's output (`text_protocol_continue`).
pub use crate::config::Continuation;

/// The tag instructions appended to the system prompt in place of native tool schemas.
/// Short on purpose: a small model on a CPU pays for every token. With `example` the
/// example exchange (`primer`) shows a file read, written whole and tested, so the
/// whole-file form is named without its own example and the list of useful commands
/// is left out (the first request stays within 80 tokens of what it was before the form).
pub fn instructions(tools: &[ToolSchema], example: bool) -> String {
    let writes = tools
        .iter()
        .any(|t| t.name == crate::tool_vocab::meta::FILE_WRITE.name);
    let mut s = String::from(
        "\n\n# Running commands\n\
         To run a shell command, write exactly <||SYSTEM.EXEC>command<SYSTEM.EXEC||> and stop.\n\
         Its output comes back as <||SYSTEM.OUTPUT>\\n…\\n<SYSTEM.OUTPUT||>. \
         Wait for it before you go on; never write the output yourself. One command at a time.\n",
    );
    let shown = example && writes;
    if !shown {
        s.push_str("Useful commands: cat FILE, ls DIR, wc -l FILE, grep -rn TEXT ., grep -c TEXT FILE.\n");
    }
    if writes {
        s.push_str(if shown {
            super::write::PROMPT_LINE_SHOWN
        } else {
            super::write::PROMPT_LINE
        });
    }
    let others: Vec<String> = tools
        .iter()
        .filter(|t| t.name != super::calls::SHELL_TOOL)
        .map(signature)
        .collect();
    if !others.is_empty() {
        s.push_str("These tools work the same way, e.g. <||SYSTEM.EXEC>file_read(path=\"src/main.rs\")<SYSTEM.EXEC||>: ");
        s.push_str(&others.join(", "));
        s.push('\n');
    }
    s
}

/// The canonical history as plain user/assistant messages with tagged text.
pub fn rewrite(messages: &[Message], how: Continuation) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut assistant = String::new();
    let flush = |out: &mut Vec<Message>, assistant: &mut String| {
        if !assistant.is_empty() {
            out.push(Message::assistant(std::mem::take(assistant)));
        }
    };
    for m in messages {
        match m.kind {
            Kind::Assistant => assistant.push_str(&m.content),
            Kind::ToolCall => {
                if let Some(call) = m.as_tool_call() {
                    join(
                        &mut assistant,
                        &exec_block(&to_command(&call.function.name, &call.function.arguments)),
                    );
                }
            }
            Kind::ToolResult => {
                let block = m.as_tool_result().map(|r| output_block(&plain_output(&r.output)));
                let Some(block) = block else { continue };
                match how {
                    Continuation::Prefill => {
                        join(&mut assistant, &block);
                        assistant.push('\n');
                    }
                    Continuation::User => {
                        flush(&mut out, &mut assistant);
                        out.push(Message::user(block));
                    }
                }
            }
            Kind::User | Kind::System => {
                flush(&mut out, &mut assistant);
                out.push(m.clone());
            }
            Kind::Compaction => {
                flush(&mut out, &mut assistant);
                out.push(Message::user(crate::message::compaction_text(&m.content)));
            }
            // Reasoning belongs to native providers; the tagged history has no place for it.
            _ => {}
        }
    }
    flush(&mut out, &mut assistant);
    out
}

/// Appends `block` on a line of its own.
fn join(text: &mut String, block: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(block);
}

/// What the model reads of a result envelope: a tool's `output` as plain text, an error
/// as `error: …`, anything else as compact JSON; a `note` on the arguments comes first
/// (`note: ignored unknown parameter "pattern"`).
pub fn plain_output(envelope: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(envelope) else {
        return envelope.to_string();
    };
    let note = match v["note"].as_str() {
        Some(n) => format!("note: {n}\n"),
        None => String::new(),
    };
    if v["tool_success"] == Value::Bool(false) {
        let error = v["error"].as_str().unwrap_or("the tool failed");
        return match v["partial_output"].as_str().filter(|p| !p.is_empty()) {
            Some(partial) => format!("{note}{}\nerror: {error}", partial.trim_end_matches('\n')),
            None => format!("{note}error: {error}"),
        };
    }
    let result = &v["result"];
    let mut text = match (&result["output"], &result["error"]) {
        (Value::String(s), _) => with_exit_code(s, &result["exit_code"]),
        (_, Value::String(e)) => format!("error: {e}"),
        _ if result.is_null() => v.to_string(),
        _ => result.to_string(),
    };
    // The call-limit warning the agent adds to a result ("3 tool calls left").
    if let Some(limit) = v["limit_message"].as_str() {
        text = format!("{}\n[{limit}]", text.trim_end_matches('\n'));
    }
    note + &text
}

/// A command's output as the model reads it: "(no output)" rather than an empty block
/// (which small models fill with output of their own), and a nonzero exit code after it.
fn with_exit_code(output: &str, code: &Value) -> String {
    let mut text = if output.trim().is_empty() {
        "(no output)".to_string()
    } else {
        output.to_string()
    };
    if let Some(code) = code.as_i64().filter(|c| *c != 0) {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[exit code {code}]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;
    use serde_json::json;

    fn history() -> Vec<Message> {
        vec![
            Message::user("list the files"),
            Message::assistant("Let me look."),
            Message::tool_call("c1", "bash", json!({"command": "ls"}).to_string()),
            Message::tool_result(
                "c1",
                "bash",
                "2 lines",
                json!({"tool_success": true, "result": {"output": "a.rs\nb.rs\n", "exit_code": 0}})
                    .to_string(),
                true,
            ),
        ]
    }

    #[test]
    fn prefill_keeps_the_assistant_message_open_with_the_output_appended() {
        let got = rewrite(&history(), Continuation::Prefill);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], Message::user("list the files"));
        assert_eq!(got[1].kind, Kind::Assistant);
        assert_eq!(
            got[1].content,
            "Let me look.\n<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\na.rs\nb.rs\n<SYSTEM.OUTPUT||>\n"
        );
    }

    #[test]
    fn user_mode_sends_the_output_as_the_next_user_message() {
        let mut h = history();
        h.push(Message::assistant("Two files."));
        h.push(Message::user("thanks"));
        let got = rewrite(&h, Continuation::User);
        let kinds: Vec<Kind> = got.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            vec![
                Kind::User,
                Kind::Assistant,
                Kind::User,
                Kind::Assistant,
                Kind::User
            ]
        );
        assert_eq!(got[1].content, "Let me look.\n<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>");
        assert_eq!(got[2].content, "<||SYSTEM.OUTPUT>\na.rs\nb.rs\n<SYSTEM.OUTPUT||>");
        assert_eq!(got[3].content, "Two files.");
    }

    #[test]
    fn other_tools_and_failures_render_as_the_model_would_read_them() {
        let h = vec![
            Message::tool_call("c2", "file_read", json!({"path": "x.rs"}).to_string()),
            Message::tool_result(
                "c2",
                "file_read",
                "error",
                json!({"tool_success": false, "error": "bad", "error_code": "INVALID_PARAMS"}).to_string(),
                false,
            ),
        ];
        let got = rewrite(&h, Continuation::Prefill);
        assert_eq!(
            got[0].content,
            "<||SYSTEM.EXEC>file_read(path=\"x.rs\")<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\nerror: bad\n<SYSTEM.OUTPUT||>\n"
        );
        assert_eq!(
            plain_output(r#"{"tool_success":true,"result":{"error":"no such file"}}"#),
            "error: no such file"
        );
        // Nothing printed is said in words; a failing command's exit code follows.
        assert_eq!(
            plain_output(r#"{"tool_success":true,"result":{"output":"","exit_code":1}}"#),
            "(no output)\n[exit code 1]"
        );
        assert_eq!(
            plain_output(r#"{"tool_success":true,"result":{"output":"x\n","exit_code":2}}"#),
            "x\n[exit code 2]"
        );
        assert_eq!(
            plain_output(r#"{"tool_success":true,"result":{"output":"","exit_code":0}}"#),
            "(no output)"
        );
    }

    #[test]
    fn the_instructions_name_the_tags_and_the_other_tools_briefly() {
        let s = instructions(&Registry::builtin().schemas(), false);
        assert!(s.contains("<||SYSTEM.EXEC>command<SYSTEM.EXEC||>"));
        assert!(s.contains("<SYSTEM.OUTPUT||>"));
        assert!(s.contains("glob(pattern, path?)"), "{s}");
        assert!(!s.contains("bash("));
        // Far smaller than the native schemas it replaces.
        let native: usize = Registry::builtin()
            .schemas()
            .iter()
            .map(|t| t.to_json_schema().to_string().len() + t.description.len())
            .sum();
        assert!(s.len() * 2 <= native, "{} vs {native}", s.len());
    }
}
