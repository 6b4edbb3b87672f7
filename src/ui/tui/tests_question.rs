//! The approval question on a `TestBackend` (insta snapshots): a command is shown from its
//! first line with its size, blank lines and long runs of spaces counted, hidden
//! characters shown; a long one says how much is left and scrolls while its head and keys
//! stay on the screen.

use crossterm::event::{KeyCode, KeyModifiers};
use serde_json::json;

use super::tests::Harness;
use crate::protocol::Event;

fn ask(h: &mut Harness, command: &str) {
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "gpt-5-mini".into(),
        history: vec![].into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
    h.typed("go").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::ApprovalRequested {
        id: "c1".into(),
        name: "bash".into(),
        arguments: json!({ "command": command }).to_string(),
        reason: format!("the command `{command}` is not on the read-only list"),
        always: vec!["bash(python3 *)".into()],
        outside_sandbox: false,
    });
}

#[test]
fn a_head_hidden_above_blank_lines_is_shown_first() {
    let mut h = Harness::new(80, 24, &[]);
    ask(
        &mut h,
        &format!("python3 -c 'open(\"PWNED\",\"w\")'{}ls -la", "\n".repeat(61)),
    );
    h.draw();
    let text = h.text();
    assert!(text.contains("$ python3 -c 'open(\"PWNED\",\"w\")'"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn every_hidden_character_is_shown() {
    let mut h = Harness::new(80, 24, &[]);
    let forms = [
        "ls\rrm -rf x",
        "echo \u{202E}txt.exe\u{2066} x\u{200B}y\u{FEFF}",
        &format!("ls{}; rm -rf ~", " ".repeat(300)),
        "printf 'a\u{0}b' \u{1b}]0;T\u{7}\u{1b}[2J",
        "rm\u{00A0}-rf\u{3000}/\u{E0041}",
    ]
    .join("\n");
    ask(&mut h, &forms);
    h.draw();
    insta::assert_snapshot!(h.text());
}

#[test]
fn a_long_command_says_how_much_is_left_and_scrolls() {
    let mut h = Harness::new(80, 24, &[]);
    let lines: Vec<String> = (1..=60).map(|i| format!("echo step-{i:02}")).collect();
    ask(&mut h, &lines.join("\n"));
    h.draw();
    let top = h.text();
    assert!(
        top.contains("$ echo step-01") && !top.contains("step-60"),
        "{top}"
    );
    insta::assert_snapshot!("long_command_top", top);
    h.key(KeyCode::End, KeyModifiers::NONE).draw();
    let end = h.text();
    assert!(
        end.contains("$ echo step-60") && !end.contains("$ echo step-01"),
        "{end}"
    );
    assert!(
        end.contains("command: 60 lines") && end.contains("y yes · n no"),
        "{end}"
    );
    insta::assert_snapshot!("long_command_end", end);
    h.key(KeyCode::PageUp, KeyModifiers::NONE).draw();
    assert!(h.text().contains("more below"), "{}", h.text());
    h.key(KeyCode::Home, KeyModifiers::NONE).draw();
    assert_eq!(h.text(), top);
}
