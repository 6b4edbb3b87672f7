//! Every field of every event the agent can send, each holding hostile text
//! (`crate::hostile`), through the real app, view and screen onto the real terminal
//! backend: no byte written for the terminal acts on it or hides text.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::app::App;
use super::history::History;
use super::screen::{Screen, TrackedBackend};
use super::tests::context;
use super::theme::Theme;
use crate::hostile::{self, TEXT};
use crate::protocol::Event;

/// Calls whose arguments and results are JSON holding the hostile text: a command, a
/// file write and edit (previews), a tool with hostile keys, and an envelope with hostile
/// output, error and partial output.
pub(crate) fn json_shaped() -> Vec<Event> {
    let args = [
        ("bash", serde_json::json!({"command": TEXT})),
        ("file_write", serde_json::json!({"path": TEXT, "content": TEXT})),
        (
            "file_edit",
            serde_json::json!({"path": TEXT, "old_string": TEXT, "new_string": TEXT}),
        ),
        (TEXT, serde_json::json!({ TEXT: TEXT, "n": 1 })),
        (
            "update_plan",
            serde_json::json!({"plan": [{"step": TEXT, "status": "pending"}]}),
        ),
    ];
    let envelopes = [
        serde_json::json!({"tool_success": true, "result": {"output": TEXT, "note": TEXT}}),
        serde_json::json!({"tool_success": false, "error": TEXT, "error_code": "TOOL_CRASHED", "partial_output": TEXT}),
        serde_json::json!({"tool_success": true, "result": {"error": TEXT}, "limit_reached": true, "limit_message": TEXT}),
    ];
    let mut out = Vec::new();
    for (i, (name, a)) in args.iter().enumerate() {
        let id = format!("j{i}");
        out.push(Event::ApprovalRequested {
            id: id.clone(),
            name: name.to_string(),
            arguments: a.to_string(),
            reason: TEXT.into(),
            always: vec![TEXT.into()],
            outside_sandbox: i % 2 == 0,
        });
        out.push(Event::ToolCallStarted {
            id: id.clone(),
            name: name.to_string(),
            arguments: a.to_string(),
        });
        out.push(Event::ToolCallFinished {
            id,
            summary: TEXT.into(),
            output: envelopes[i % envelopes.len()].to_string(),
            success: i % 2 == 0,
        });
    }
    out
}

#[test]
fn no_field_of_any_event_reaches_the_terminal_as_it_is() {
    let captured = Arc::new(Mutex::new(Vec::new()));
    let mut screen = Screen::new(TrackedBackend::capturing(100, 40, captured.clone()), 3).unwrap();
    let mut app = App::new(
        context(&[]),
        Theme::new(true),
        History::load(None),
        "~/project".into(),
    );
    let now = Instant::now();
    let mut events = Event::every_variant_hostile();
    events.extend(json_shaped());
    let n = events.len();
    for ev in events {
        app.on_agent_event(ev, now);
        screen.render(&mut app, now).unwrap();
    }
    app.on_agent_event(
        Event::TurnEnded {
            reason: crate::protocol::TurnEndReason::Done,
        },
        now,
    );
    screen.render(&mut app, now).unwrap();
    screen.finish(&mut app).unwrap();
    let out = captured.lock().unwrap().clone();
    let bad = hostile::violations(&out, true);
    assert!(
        bad.is_empty(),
        "{n} events: {bad:?}\n{}",
        String::from_utf8_lossy(&out)
    );
    // And they were shown, visibly.
    assert!(hostile::shown(&out) > 10, "{}", String::from_utf8_lossy(&out));
}
