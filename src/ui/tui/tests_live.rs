//! Screen tests of running work: a command's live output in its tool block (the last
//! lines, sanitised, cut at the width, gone when the result comes) and the model's plan
//! (in the scrollback when it changes, pinned above the input while the turn runs).

use serde_json::json;

use super::tests::Harness;
use crate::protocol::{Event, PlanStep, StepStatus, TurnEndReason};

fn start(h: &mut Harness) {
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "gpt-5-mini".into(),
        history: Vec::new().into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
    h.typed("build it").enter();
    h.ev(Event::TurnStarted);
}

fn step(s: &str, status: StepStatus) -> PlanStep {
    PlanStep {
        step: s.into(),
        status,
    }
}

#[test]
fn a_running_command_shows_its_last_lines_and_the_plan_is_pinned() {
    let mut h = Harness::new(60, 24, &[]);
    start(&mut h);
    h.ev(Event::ToolCallStarted {
        id: "p1".into(),
        name: "update_plan".into(),
        arguments: "{}".into(),
    });
    h.ev(Event::ToolCallFinished {
        id: "p1".into(),
        summary: "1/3 done".into(),
        output: json!({"tool_success": true, "result": {"output": "Plan updated"}}).to_string(),
        success: true,
    });
    h.ev(Event::PlanUpdated {
        steps: vec![
            step("read the code", StepStatus::Done),
            step("build", StepStatus::InProgress),
            step("test", StepStatus::Pending),
        ],
    });
    h.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "bash".into(),
        arguments: json!({"command": "make"}).to_string(),
    });
    for i in 1..=8 {
        h.ev(Event::ToolOutputDelta {
            id: "c1".into(),
            text: format!("compiling unit {i}\n"),
            skipped: 0,
        });
    }
    h.ev(Event::ToolOutputDelta {
        id: "c1".into(),
        text: format!("\x1b[31mwarning\x1b[0m: {}", "x".repeat(100)),
        skipped: 0,
    });
    h.draw();
    let running = h.text();
    insta::assert_snapshot!(running);
    let screen = running.split("═══ screen ═══").nth(1).unwrap();
    assert!(
        !screen.contains("compiling unit 4"),
        "five lines at most:\n{screen}"
    );
    assert!(screen.contains("│ compiling unit 5") && screen.contains("│ compiling unit 8"));
    assert!(screen.contains("␛[31mwarning"), "sanitised:\n{screen}");
    assert_eq!(running.matches("Plan (1/3 done)").count(), 2, "{running}");

    h.ev(Event::ToolCallFinished {
        id: "c1".into(),
        summary: "exit 0".into(),
        output: json!({"tool_success": true, "result": {"output": "built", "exit_code": 0}}).to_string(),
        success: true,
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    let done = h.text();
    assert!(
        !done.contains("│ compiling"),
        "the result replaces the live lines:\n{done}"
    );
    assert_eq!(
        done.matches("Plan (1/3 done)").count(),
        1,
        "no longer pinned once the turn ended:\n{done}"
    );
    assert!(done.contains("▸ build"), "{done}");
}

#[test]
fn a_resumed_session_shows_its_plans_as_they_were_shown_live() {
    use crate::message::Message;
    let args = json!({"steps": [
        {"step": "read the code", "status": "done"},
        {"step": "build", "status": "in_progress"}
    ]})
    .to_string();
    let ok = json!({"tool_success": true, "result": {"output": "Plan updated"}}).to_string();
    let history = vec![
        Message::user("build it".to_string()),
        Message::tool_call("p1", "update_plan", &args),
        Message::tool_result("p1", "update_plan", "1/2 done".to_string(), ok, true),
        Message::assistant("Building.".to_string()),
    ];
    let mut h = Harness::new(60, 24, &[]);
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "gpt-5-mini".into(),
        history: history.into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
    h.draw();
    let text = h.text();
    let plan = text.find("Plan (1/2 done)").unwrap_or_else(|| panic!("{text}"));
    assert!(text[plan..].contains("  ▸ build"), "{text}");
    assert!(
        text.find("update_plan(").unwrap() < plan,
        "after its call:\n{text}"
    );
    assert_eq!(h.app.plan.len(), 2, "the current plan is the restored one");
}
