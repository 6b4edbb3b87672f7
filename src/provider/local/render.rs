//! Canonical conversation → the turns the chat template renders, in the SYSTEM.EXEC text
//! protocol, exactly as the text protocol writes it for a server (`text_protocol::render`:
//! the same instructions, primer, tags and output blocks; one prompt for both, so what
//! the suite measures over llama-server holds in process). A conversation that ends in a
//! tool result ends in an open assistant turn, which the engine continues (its cached
//! prefix already holds everything up to the closing tag, so only the output block is
//! decoded). Pure: no model, no IO.

use crate::message::{Kind, Message};
/// What the model reads of a result envelope (the text protocol's).
pub use crate::provider::text_protocol::render::plain_output;
use crate::provider::text_protocol::render::{Continuation, instructions, rewrite};
use crate::provider::text_protocol::wrapper::{coding_example, primer};
use crate::tool_vocab::ToolSchema;

/// What the template needs: whole turns, then an optional open assistant turn.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChatPrompt {
    /// (role, content) pairs: system, user, assistant.
    pub turns: Vec<(String, String)>,
    /// Text of an assistant turn still being written (after a tool result), appended
    /// right after the template's assistant header.
    pub continuation: Option<String>,
}

/// Builds the turns from the system prompt and the canonical messages.
pub fn chat_prompt(system: &str, messages: &[Message], tools: &[ToolSchema]) -> ChatPrompt {
    chat_prompt_with(system, messages, tools, false)
}

/// `chat_prompt`, with the text protocol's example exchange (`text_protocol::primer`) as
/// the first exchange after the system prompt when `primer`.
pub fn chat_prompt_with(
    system: &str,
    messages: &[Message],
    tools: &[ToolSchema],
    primer_on: bool,
) -> ChatPrompt {
    let coding = primer_on && coding_example(tools, messages);
    let sys = format!("{}{}", system.trim_end(), instructions(tools, coding));
    let mut out = ChatPrompt {
        turns: vec![("system".into(), sys.trim_start().to_string())],
        continuation: None,
    };
    let rewritten = if primer_on {
        rewrite(
            &[primer(coding), messages.to_vec()].concat(),
            Continuation::Prefill,
        )
    } else {
        rewrite(messages, Continuation::Prefill)
    };
    for m in rewritten {
        let role = match m.kind {
            Kind::User => "user",
            Kind::Assistant => "assistant",
            _ => "system",
        };
        out.turns.push((role.into(), m.content));
    }
    // After a tool result the last assistant turn is still being written.
    let open = messages
        .iter()
        .rev()
        .find(|m| !matches!(m.kind, Kind::Reasoning))
        .is_some_and(|m| m.kind == Kind::ToolResult);
    if open && out.turns.last().is_some_and(|(role, _)| role == "assistant") {
        out.continuation = out.turns.pop().map(|(_, text)| text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(output: &str, code: i32) -> String {
        serde_json::json!({"tool_success": true, "result": {"output": output, "exit_code": code}}).to_string()
    }

    #[test]
    fn a_tool_round_ends_in_an_open_assistant_turn_with_the_tag_and_the_output() {
        let msgs = vec![
            Message::user("run it"),
            Message::assistant("Sure."),
            Message::tool_call("c1", "bash", r#"{"command":"echo hi"}"#),
            Message::tool_result("c1", "bash", "ok", ok("hi\n", 0), true),
        ];
        let p = chat_prompt("Be brief.", &msgs, &[]);
        assert_eq!(p.turns.len(), 2);
        assert!(
            p.turns[0].1.starts_with("Be brief.\n\n# Running commands\n"),
            "{}",
            p.turns[0].1
        );
        assert_eq!(p.turns[1], ("user".into(), "run it".into()));
        assert_eq!(
            p.continuation.as_deref(),
            Some("Sure.\n<||SYSTEM.EXEC>echo hi<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\nhi\n<SYSTEM.OUTPUT||>\n")
        );
    }

    #[test]
    fn a_finished_round_is_one_assistant_turn() {
        let msgs = vec![
            Message::user("run it"),
            Message::tool_call("c1", "bash", r#"{"command":"false"}"#),
            Message::tool_result("c1", "bash", "exit 1", ok("", 1), true),
            Message::assistant("It failed."),
            Message::user("ok"),
        ];
        let p = chat_prompt("", &msgs, &[]);
        assert_eq!(p.continuation, None);
        assert!(
            p.turns[0].1.starts_with("# Running commands\n"),
            "{}",
            p.turns[0].1
        );
        assert_eq!(
            p.turns[2].1,
            "<||SYSTEM.EXEC>false<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\n(no output)\n[exit code 1]\n<SYSTEM.OUTPUT||>\nIt failed."
        );
        assert_eq!(p.turns[3], ("user".into(), "ok".into()));
    }

    #[test]
    fn the_prompt_is_the_text_protocols_for_a_server() {
        // One prompt for both: the engine's turns are the text protocol's messages.
        let tools = crate::tools::Registry::builtin().schemas();
        let msgs = vec![
            Message::user("read it"),
            Message::tool_call("c1", "file_read", r#"{"path":"a.txt"}"#),
            Message::tool_result(
                "c1",
                "file_read",
                "ok",
                r#"{"tool_success":false,"error":"timed out","partial_output":"a\n"}"#,
                true,
            ),
        ];
        let p = chat_prompt_with("S", &msgs, &tools, true);
        assert_eq!(p.turns[0].1, format!("S{}", instructions(&tools, true)));
        let server = rewrite(
            &[primer(coding_example(&tools, &msgs)), msgs.clone()].concat(),
            Continuation::Prefill,
        );
        let mut engine: Vec<String> = p.turns[1..].iter().map(|(_, t)| t.clone()).collect();
        engine.extend(p.continuation.clone());
        let server: Vec<String> = server.into_iter().map(|m| m.content).collect();
        assert_eq!(engine, server);
        assert_eq!(
            p.continuation.as_deref(),
            Some(
                "<||SYSTEM.EXEC>file_read(path=\"a.txt\")<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\na\nerror: timed out\n<SYSTEM.OUTPUT||>\n"
            )
        );
    }

    #[test]
    fn the_primer_is_one_exchange_after_the_system_prompt_and_a_summary_is_kept() {
        let msgs = vec![
            Message::compaction("Earlier: the user asked about a.txt.", 3, 0),
            Message::user("How many lines has a.txt?"),
        ];
        let p = chat_prompt_with("", &msgs, &[], true);
        let roles: Vec<&str> = p.turns.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user", "user"]);
        assert_eq!(p.turns[1].1, "Which file defines load_config?");
        assert!(
            p.turns[2].1.starts_with(
                "<||SYSTEM.EXEC>grep -rn \"def load_config\" .<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\n"
            ),
            "{}",
            p.turns[2].1
        );
        assert!(
            p.turns[3].1.contains("Earlier: the user asked about a.txt."),
            "{}",
            p.turns[3].1
        );
        assert_eq!(p.turns[4].1, "How many lines has a.txt?");
        assert_eq!(chat_prompt_with("", &msgs, &[], false).turns.len(), 3);
    }
}
