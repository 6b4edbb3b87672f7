//! Canonical conversation → the turns the chat template renders, in the SYSTEM.EXEC text
//! protocol: a bash call is the tag the model wrote, its result the output block, both
//! inside the assistant turn they belong to. A conversation that ends in a tool result
//! ends in an open assistant turn, which the engine continues (its cached prefix already
//! holds everything up to the closing tag, so only the output block is decoded).
//! Pure: no model, no IO besides reading the working directory for the prompt.

use serde_json::Value;

use super::tag::{exec_block, output_block};
use crate::message::{Kind, Message};
use crate::provider::text_protocol::calls::{self, SHELL_TOOL};
use crate::tools::ToolSchema;

/// What the template needs: whole turns, then an optional open assistant turn.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChatPrompt {
    /// (role, content) pairs: system, user, assistant.
    pub turns: Vec<(String, String)>,
    /// Text of an assistant turn still being written (after a tool result), appended
    /// right after the template's assistant header.
    pub continuation: Option<String>,
}

/// The text-protocol part of the system prompt (kept short: every token costs on a CPU):
/// shell commands, and the other tools in the short `name(args)` form.
pub fn protocol_prompt(tools: &[ToolSchema]) -> String {
    let cwd = std::env::current_dir().map_or_else(|_| ".".into(), |d| d.display().to_string());
    let mut s = format!(
        "You can run shell commands. To run one, write <||SYSTEM.EXEC>command<SYSTEM.EXEC||> and stop. \
         The output comes back as <||SYSTEM.OUTPUT>\\n...\\n<SYSTEM.OUTPUT||>; wait for it before you continue. \
         OS: {}, working directory: {cwd}, shell: bash.",
        std::env::consts::OS
    );
    let others: Vec<String> = tools
        .iter()
        .filter(|t| t.name != SHELL_TOOL)
        .map(calls::signature)
        .collect();
    if !others.is_empty() {
        s.push_str(
            "\nThese tools work the same way, e.g. <||SYSTEM.EXEC>file_read(path=\"src/main.rs\")<SYSTEM.EXEC||>: ",
        );
        s.push_str(&others.join(", "));
    }
    s
}

/// Builds the turns from the system prompt and the canonical messages.
pub fn chat_prompt(system: &str, messages: &[Message], tools: &[ToolSchema]) -> ChatPrompt {
    chat_prompt_with(system, messages, tools, false)
}

/// The example exchange small models imitate (issue 22: with it the 0.5B model writes a
/// correct tag where, without it, it writes none): a question, then an answer that runs a
/// command, reads its output and answers in one line. Never shown, never stored.
pub const PRIMER: (&str, &str) = (
    "What is in README.md?",
    "<||SYSTEM.EXEC>cat README.md<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\n# demo\nA tiny demo project.\n<SYSTEM.OUTPUT||>\nREADME.md says: a tiny demo project.",
);

/// `chat_prompt`, with `PRIMER` as the first exchange after the system prompt when `primer`.
pub fn chat_prompt_with(
    system: &str,
    messages: &[Message],
    tools: &[ToolSchema],
    primer: bool,
) -> ChatPrompt {
    let mut out = ChatPrompt::default();
    let mut sys = system.trim_end().to_string();
    if !sys.is_empty() {
        sys.push_str("\n\n");
    }
    sys.push_str(&protocol_prompt(tools));
    out.turns.push(("system".into(), sys));
    if primer {
        out.turns.push(("user".into(), PRIMER.0.into()));
        out.turns.push(("assistant".into(), PRIMER.1.into()));
    }
    // The assistant turn being assembled, and whether it ends in a tool result.
    let mut assistant = String::new();
    let mut open = false;
    for m in messages {
        if m.kind == Kind::User || m.kind == Kind::System {
            close(&mut out, &mut assistant);
            open = false;
            let role = if m.kind == Kind::User { "user" } else { "system" };
            out.turns.push((role.into(), m.content.clone()));
        } else if m.kind == Kind::Assistant {
            assistant.push_str(&m.content);
            open = false;
        } else if let Some(call) = m.as_tool_call() {
            assistant.push_str(&call_text(&call.function.name, &call.function.arguments));
            open = false;
        } else if let Some(result) = m.as_tool_result() {
            // On lines of its own, as in the primer: right after a closing tag with no
            // newline to go on from, the 0.5B model ended its turn with an empty answer.
            assistant.push('\n');
            assistant.push_str(&output_block(&result_text(&result.output)));
            assistant.push('\n');
            open = true;
        }
    }
    if open {
        out.continuation = Some(assistant);
    } else {
        close(&mut out, &mut assistant);
    }
    out
}

fn close(out: &mut ChatPrompt, assistant: &mut String) {
    if !assistant.is_empty() {
        out.turns.push(("assistant".into(), std::mem::take(assistant)));
    }
}

/// A stored call as the model wrote it, inside the exec tag: a bash command verbatim (so
/// the text matches the cached tokens), `name(key="value", …)` for any other tool.
fn call_text(name: &str, arguments: &str) -> String {
    exec_block(&calls::to_command(name, arguments))
}

/// The text inside the output block: the tool's output and a nonzero exit code, or the
/// error for a failed call, after a note on the arguments (`note: ignored unknown
/// parameter "pattern"`). Falls back to the raw envelope.
pub fn result_text(envelope: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(envelope) else {
        return envelope.to_string();
    };
    match v.get("note").and_then(Value::as_str) {
        Some(note) => format!("note: {note}\n{}", result_body(&v)),
        None => result_body(&v),
    }
}

/// `result_text` without the note on the arguments.
fn result_body(v: &Value) -> String {
    if v.get("tool_success") == Some(&Value::Bool(false)) {
        let err = v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("the tool failed");
        let partial = v.get("partial_output").and_then(Value::as_str).unwrap_or("");
        return if partial.is_empty() {
            format!("error: {err}")
        } else {
            format!("{partial}\nerror: {err}")
        };
    }
    let result = v.get("result").unwrap_or(v);
    let mut text = match result.get("output") {
        Some(Value::String(s)) => s.trim_end_matches('\n').to_string(),
        Some(other) => other.to_string(),
        None => match result.get("error").and_then(Value::as_str) {
            Some(e) => format!("error: {e}"),
            None => result.to_string(),
        },
    };
    if let Some(code) = result
        .get("exit_code")
        .and_then(Value::as_i64)
        .filter(|c| *c != 0)
    {
        text.push_str(&format!("\n[exit code {code}]"));
    }
    if let Some(msg) = v.get("limit_message").and_then(Value::as_str) {
        text.push_str(&format!("\n[{msg}]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_round_ends_in_an_open_assistant_turn_with_the_tag_and_the_output() {
        let msgs = vec![
            Message::user("run it"),
            Message::assistant("Sure. "),
            Message::tool_call("c1", "bash", r#"{"command":"echo hi"}"#),
            Message::tool_result(
                "c1",
                "bash",
                "ok",
                r#"{"tool_success":true,"result":{"output":"hi\n","exit_code":0}}"#,
                true,
            ),
        ];
        let p = chat_prompt("Be brief.", &msgs, &[]);
        assert_eq!(p.turns.len(), 2);
        assert!(
            p.turns[0]
                .1
                .starts_with("Be brief.\n\nYou can run shell commands.")
        );
        assert_eq!(p.turns[1], ("user".into(), "run it".into()));
        assert_eq!(
            p.continuation.as_deref(),
            Some("Sure. <||SYSTEM.EXEC>echo hi<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\nhi\n<SYSTEM.OUTPUT||>\n")
        );
    }

    #[test]
    fn a_finished_round_is_one_assistant_turn() {
        let msgs = vec![
            Message::user("run it"),
            Message::tool_call("c1", "bash", r#"{"command":"false"}"#),
            Message::tool_result(
                "c1",
                "bash",
                "exit 1",
                r#"{"tool_success":true,"result":{"output":"","exit_code":1}}"#,
                true,
            ),
            Message::assistant("It failed."),
            Message::user("ok"),
        ];
        let p = chat_prompt("", &msgs, &[]);
        assert_eq!(p.continuation, None);
        assert_eq!(
            p.turns[2].1,
            "<||SYSTEM.EXEC>false<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\n\n[exit code 1]\n<SYSTEM.OUTPUT||>\nIt failed."
        );
        assert_eq!(p.turns[3], ("user".into(), "ok".into()));
    }

    #[test]
    fn failures_show_the_error() {
        let t = result_text(
            r#"{"tool_success":false,"error":"timed out","error_code":"TOOL_TIMEOUT","partial_output":"a"}"#,
        );
        assert_eq!(t, "a\nerror: timed out");
    }

    #[test]
    fn other_tools_are_offered_and_rendered_back_in_the_short_form() {
        let tools = crate::tools::Registry::builtin().schemas();
        let prompt = protocol_prompt(&tools);
        assert!(prompt.contains("file_read(path, offset?, limit?)"), "{prompt}");
        assert!(!prompt.contains("bash("), "{prompt}");
        let msgs = vec![
            Message::user("read it"),
            Message::tool_call("c1", "file_read", r#"{"path":"a.txt"}"#),
            Message::tool_result(
                "c1",
                "file_read",
                "ok",
                r#"{"tool_success":true,"result":{"output":"hello"}}"#,
                true,
            ),
        ];
        let p = chat_prompt("", &msgs, &tools);
        assert_eq!(
            p.continuation.as_deref(),
            Some(
                "<||SYSTEM.EXEC>file_read(path=\"a.txt\")<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\nhello\n<SYSTEM.OUTPUT||>\n"
            )
        );
    }

    #[test]
    fn the_primer_is_one_exchange_after_the_system_prompt() {
        let msgs = vec![Message::user("How many lines has a.txt?")];
        let p = chat_prompt_with("", &msgs, &[], true);
        assert_eq!(p.turns.len(), 4);
        assert_eq!(p.turns[0].0, "system");
        assert_eq!(p.turns[1], ("user".to_string(), PRIMER.0.to_string()));
        assert_eq!(p.turns[2], ("assistant".to_string(), PRIMER.1.to_string()));
        assert_eq!(
            p.turns[3],
            ("user".to_string(), "How many lines has a.txt?".to_string())
        );
        // It writes the tag exactly as the engine reads it.
        assert!(
            PRIMER
                .1
                .starts_with(&crate::provider::local::tag::exec_block("cat README.md"))
        );
        assert_eq!(chat_prompt_with("", &msgs, &[], false).turns.len(), 2);
    }
}
