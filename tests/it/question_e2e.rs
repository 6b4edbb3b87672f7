//! The approval question never hides part of what would run (the real TUI in tmux, the
//! fake vendor): a command is shown from its first line with its size; blank lines and
//! long runs of spaces are counted; CR, bidirectional controls, zero-width and other
//! invisible characters, NUL and escape sequences are shown; what does not fit says how
//! much more there is and scrolls into view; a file write shows its path and content the
//! same way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

fn bash(cmd: &str) -> String {
    json!({ "command": cmd }).to_string()
}

fn send(t: &Tmux, text: &str) {
    t.wait_text("Ask anything");
    t.type_text(text);
    t.keys(&["Enter"]);
}

#[test]
fn a_command_is_shown_from_its_first_line_with_what_hides_in_it() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    // The reported form: the head that does the harm, 60 blank lines, a harmless tail.
    let hidden_head = format!("python3 -c 'open(\"PWNED\",\"w\")'{}ls -la", "\n".repeat(61));
    let forms = [
        ("c1", hidden_head.clone()),
        ("c2", "ls\rtouch CR-OVERWRITE".to_string()),
        ("c3", "touch \u{202E}txt.exe\u{2066} \u{200B}x".to_string()),
        ("c4", format!("ls{}; touch SPACED", " ".repeat(400))),
        ("c5", "touch 'a\u{0}b' \u{1b}]0;TITLE\u{7}".to_string()),
    ];
    let calls: Vec<(String, String, String)> = forms
        .iter()
        .map(|(id, cmd)| (id.to_string(), "bash".to_string(), bash(cmd)))
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    fake.push(Reply::tool_calls(&refs));
    fake.push(Reply::text("Turn over."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    send(&t, "go");
    let pane = t.wait_text("y yes · n no");
    assert!(
        pane.contains("$ python3 -c 'open(\"PWNED\",\"w\")'"),
        "the first line is shown:\n{pane}"
    );
    assert!(pane.contains("⟨60 blank lines⟩"), "{pane}");
    assert!(pane.contains("$ ls -la"), "{pane}");
    assert!(pane.contains("command: 62 lines, 97 B"), "its size:\n{pane}");
    t.keys(&["Escape"]);
    t.wait_for("the CR question", |s| s.contains("$ ls␍touch CR-OVERWRITE"));
    t.keys(&["Escape"]);
    t.wait_for("the bidi question", |s| {
        s.contains("$ touch <U+202E>txt.exe<U+2066> <U+200B>x")
    });
    t.keys(&["Escape"]);
    t.wait_for("the spaces question", |s| {
        s.contains("$ ls⟨400 spaces⟩; touch SPACED")
    });
    t.keys(&["Escape"]);
    t.wait_for("the NUL and ESC question", |s| {
        s.contains("$ touch 'a␀b' ␛]0;TITLE␇")
    });
    t.keys(&["Escape"]);
    t.wait_text("Turn over.");
    for f in ["PWNED", "CR-OVERWRITE", "SPACED"] {
        assert!(!home.path().join(f).exists(), "{f} ran");
    }
}

#[test]
fn what_does_not_fit_says_how_much_more_and_scrolls_into_view() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let mut lines: Vec<String> = (1..=80).map(|i| format!("echo line-{i:02}")).collect();
    lines.push("touch LAST-LINE-RAN".into());
    let long_line = format!("touch {}END-OF-LONG-LINE", "x".repeat(3000));
    let write =
        json!({"path": "notes\u{202E}txt.sh", "content": "#!/bin/sh\n\u{200B}rm -rf ~\n"}).to_string();
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", &bash(&lines.join("\n"))),
        ("c2", "bash", &bash(&long_line)),
        ("c3", "file_write", &write),
    ]));
    fake.push(Reply::text("Turn over."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    send(&t, "go");
    let pane = t.wait_text("y yes · n no");
    assert!(pane.contains("$ echo line-01"), "from its first line:\n{pane}");
    assert!(pane.contains("command: 81 lines"), "{pane}");
    assert!(pane.contains("more lines below"), "{pane}");
    assert!(!pane.contains("LAST-LINE-RAN"), "{pane}");
    t.keys(&["End"]);
    let pane = t.wait_for("the last line", |s| s.contains("$ touch LAST-LINE-RAN"));
    assert!(pane.contains("of 81"), "where it is:\n{pane}");
    t.keys(&["Home"]);
    t.wait_for("the top again", |s| {
        s.contains("$ echo line-01") && !s.contains("LAST-LINE-RAN")
    });
    t.keys(&["y"]);
    // A line wider than the screen many times over: wrapped, its end scrolled to.
    let pane = t.wait_for("the long line", |s| s.contains("$ touch xxxx"));
    assert!(home.path().join("LAST-LINE-RAN").exists(), "yes ran it");
    assert!(pane.contains("command: 1 line, 3.0 KB"), "{pane}");
    assert!(!pane.contains("END-OF-LONG-LINE"), "{pane}");
    for _ in 0..10 {
        t.keys(&["PageDown"]);
    }
    t.wait_for("the end of the long line", |s| s.contains("END-OF-LONG-LINE"));
    t.keys(&["Escape"]);
    let pane = t.wait_for("the write", |s| s.contains("notes<U+202E>txt.sh"));
    assert!(pane.contains("<U+200B>rm -rf ~"), "{pane}");
    t.keys(&["Escape"]);
    t.wait_text("Turn over.");
}
