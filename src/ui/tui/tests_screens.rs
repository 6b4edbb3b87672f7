//! Screen snapshots of what issue 9 added: aligned tables, file changes as diffs, a long
//! paste folded in the input, and a restored interrupted tool call.

use crossterm::event::{Event as TermEvent, KeyCode, KeyModifiers};
use serde_json::json;

use super::tests::Harness;
use crate::message::Message;
use crate::protocol::{Event, Op, TurnEndReason};

fn session(h: &mut Harness, history: Vec<Message>) {
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "gpt-5-mini".into(),
        history: history.into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
}

#[test]
fn table_and_strikethrough() {
    let mut h = Harness::new(70, 20, &[]);
    session(&mut h, vec![]);
    h.typed("compare").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::TextDelta {
        text: "| tool | calls | note |\n|:--|--:|:-:|\n| glob | 3 | fast |\n| file_edit | 12 | ~~slow~~ ok |\n\nDone."
            .into(),
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    insta::assert_snapshot!(h.text());
}

#[test]
fn file_edit_and_file_write_show_the_change() {
    let mut h = Harness::new(70, 30, &[]);
    session(&mut h, vec![]);
    h.typed("rename it").enter();
    h.ev(Event::TurnStarted);
    let edit = json!({
        "path": "src/lib.rs",
        "old_string": "fn old_name() {\n    work();\n}\n",
        "new_string": "fn new_name() {\n    work();\n}\n",
    });
    h.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "file_edit".into(),
        arguments: edit.to_string(),
    });
    h.ev(Event::ToolCallFinished {
        id: "c1".into(),
        summary: "1 replacement".into(),
        output: json!({"tool_success": true, "result": {"output": "1 replacement"}}).to_string(),
        success: true,
    });
    let content: String = (1..=300).map(|i| format!("line {i}\n")).collect();
    let write = json!({"path": "notes.txt", "content": content});
    h.ev(Event::ToolCallStarted {
        id: "c2".into(),
        name: "file_write".into(),
        arguments: write.to_string(),
    });
    h.ev(Event::ToolCallFinished {
        id: "c2".into(),
        summary: "wrote 2592 bytes".into(),
        output: json!({"tool_success": true, "result": {"output": "wrote 2592 bytes"}}).to_string(),
        success: true,
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    let text = h.text();
    assert!(!text.contains("line 300"), "only the first lines:\n{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn a_long_paste_is_folded_and_sent_whole() {
    let mut h = Harness::new(60, 14, &[]);
    session(&mut h, vec![]);
    h.typed("explain: ");
    let pasted: String = (1..=40).map(|i| format!("log line {i}\n")).collect();
    h.app.on_terminal_event(TermEvent::Paste(pasted.clone()), h.t0);
    h.draw();
    insta::assert_snapshot!(h.text());
    h.key(KeyCode::Enter, KeyModifiers::NONE);
    let ops = h.app.take_ops();
    assert_eq!(ops.len(), 1);
    match &ops[0] {
        Op::Submit(text) => assert_eq!(text, &format!("explain: {pasted}")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_restored_interrupted_tool_call_looks_as_it_did_live() {
    let history = vec![
        Message::system("sys"),
        Message::user("run it"),
        Message::tool_call("c1", "bash", r#"{"command":"sleep 100"}"#),
        crate::tool_vocab::envelope::interrupted_result("c1", "bash", None),
        Message::user("next"),
        Message::assistant("ok"),
    ];
    let mut restored = Harness::new(60, 20, &[]);
    session(&mut restored, history);
    restored.draw();
    let text = restored.text();
    insta::assert_snapshot!(text);

    // Live: the same call, interrupted.
    let mut live = Harness::new(60, 20, &[]);
    session(&mut live, vec![]);
    live.typed("run it").enter();
    live.ev(Event::TurnStarted);
    live.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"sleep 100"}"#.into(),
    });
    live.ev(Event::TurnEnded {
        reason: TurnEndReason::Interrupted,
    });
    live.draw();
    let live_text = live.text();
    let part = |t: &str| {
        let from = t.find("› run it").unwrap();
        let to = t[from..].find("■ interrupted").unwrap() + from;
        t[from..to].to_string()
    };
    assert_eq!(part(&text), part(&live_text));
}

#[test]
fn mcp_progress_shows_on_the_running_calls_line_and_mcp_lists_servers() {
    let mut h = Harness::new(90, 20, &[]);
    session(&mut h, vec![]);
    h.typed("wait").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "every__trigger-long-running-operation".into(),
        arguments: r#"{"duration":5,"steps":5}"#.into(),
    });
    h.ev(Event::ToolCallProgress {
        id: "c1".into(),
        text: "3/5 (60%) \x1b[31mstep".into(),
    });
    h.draw();
    let running = h.text();
    let line = running
        .lines()
        .find(|l| l.contains("every__trigger-long-running-operation("))
        .unwrap_or_else(|| panic!("{running}"));
    assert!(
        line.contains("3/5 (60%) ␛[31mstep"),
        "sanitised, on the call's line: {running}"
    );
    h.ev(Event::ToolCallFinished {
        id: "c1".into(),
        summary: "1 line".into(),
        output: json!({"tool_success": true, "result": {"output": "done"}}).to_string(),
        success: true,
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    assert!(
        !h.text().contains("3/5 (60%)"),
        "a finished call shows its result instead"
    );
    h.typed("/mcp").enter().draw();
    assert!(h.text().contains("No MCP servers are configured"), "{}", h.text());
}
