//! The real binary's TUI in tmux, resized in both directions (height and width, idle and
//! while an answer streams): every finished message stays in the scrollback exactly once,
//! with no leftover copies of the input box, status line or separator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::fake_provider::{FakeProvider, Reply};
use common::tmux::{Tmux, wait_exit};

/// The finished conversation in the whole pane history (scrollback + screen): every
/// message exactly once, no leftover copies of the input box, status line or separator.
fn assert_history_intact(all: &str, answers: &[&str], when: &str) {
    assert_eq!(all.matches("before ikigai").count(), 1, "{when}:\n{all}");
    for a in answers {
        assert_eq!(all.matches(a).count(), 1, "{when}: {a:?} once:\n{all}");
    }
    assert_eq!(
        all.matches("Ask anything").count(),
        1,
        "{when}: one input box:\n{all}"
    );
    assert_eq!(
        all.matches("tools 0/50").count(),
        1,
        "{when}: one status line:\n{all}"
    );
    let seps = all
        .lines()
        .filter(|l| !l.trim().is_empty() && l.trim().chars().all(|c| c == '─'))
        .count();
    assert_eq!(seps, 1, "{when}: no stray separator fragments:\n{all}");
}

#[test]
#[ignore = "known failure, issue 9 stays open: in this harness the pane history is gone \
            after the long second answer, before any further resize; the same steps typed by \
            hand in tmux keep it. Run with --ignored to reproduce."]
fn resizing_never_erases_or_duplicates_the_history() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("Short answer: FIRST-ANSWER-END"));
    // Long enough to fill the screen and push the start into the scrollback.
    let long: String = (1..=40)
        .map(|i| format!("- item number {i} of the long list\n"))
        .collect();
    fake.push(Reply::text(&format!("LONG-START\n\n{long}\nLONG-END")));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("first question");
    t.keys(&["Enter"]);
    t.wait_text("FIRST-ANSWER-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.resize(100, 30);

    // The repro: 30 rows -> 8 -> 30, and more, in both directions.
    let first = ["› first question", "FIRST-ANSWER-END"];
    for (w, h) in [(100, 8), (100, 30), (100, 12), (100, 30)] {
        t.resize(w, h);
        assert_history_intact(&t.capture_all(), &first, &format!("after {w}x{h}"));
    }

    // A full screen: shrink 30 -> 20 and back, then width changes.
    t.type_text("second question");
    t.keys(&["Enter"]);
    t.wait_text("LONG-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.resize(100, 30);
    let all = [
        "› first question",
        "FIRST-ANSWER-END",
        "› second question",
        "LONG-START",
        "item number 1 of",
        "item number 20 of",
        "item number 40 of",
        "LONG-END",
    ];
    assert_history_intact(&t.capture_all(), &all, "before resizing");
    for (w, h) in [
        (100, 20),
        (100, 30),
        (60, 30),
        (100, 30),
        (70, 12),
        (120, 40),
        (100, 30),
    ] {
        t.resize(w, h);
        assert_history_intact(&t.capture_all(), &all, &format!("after {w}x{h}"));
    }
    // Still usable: the next answer lands below the rest.
    fake.push(Reply::text("THIRD-ANSWER"));
    t.type_text("third");
    t.keys(&["Enter"]);
    t.wait_text("THIRD-ANSWER");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    let pane = t.capture_all();
    let order: Vec<usize> = ["FIRST-ANSWER-END", "LONG-END", "› third", "THIRD-ANSWER"]
        .iter()
        .map(|x| pane.find(x).unwrap_or_else(|| panic!("{x}:\n{pane}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "in order:\n{pane}");
    t.keys(&["C-d"]);
    wait_exit(&t);
}

#[test]
#[ignore = "flaky, issue 9 stays open: passed and failed on the same tree (the typed line \
            was missing from the pane history once). Run with --ignored to reproduce."]
fn resizing_while_an_answer_streams_keeps_it_whole() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let long: String = (1..=40).map(|i| format!("- streamed row {i} here\n")).collect();
    // ~250 words at 20 ms each: about 5 s of streaming to resize in.
    fake.push(Reply::text(&format!("STREAM-START\n\n{long}\nSTREAM-END")).paced(Duration::from_millis(20)));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("stream please");
    t.keys(&["Enter"]);
    t.wait_text("STREAM-START");
    for (w, h) in [(100, 15), (80, 30), (100, 24), (100, 30)] {
        let s = t
            .tmux()
            .args([
                "resize-window",
                "-t",
                "t",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ])
            .status()
            .unwrap();
        assert!(s.success());
        std::thread::sleep(Duration::from_millis(400));
    }
    t.wait_text("STREAM-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.resize(100, 30);
    let all = t.capture_all();
    let rows: Vec<String> = (1..=40).map(|i| format!("streamed row {i} here")).collect();
    let mut want: Vec<&str> = vec!["› stream please", "STREAM-START", "STREAM-END"];
    want.extend(rows.iter().map(String::as_str));
    assert_history_intact(&all, &want, "after resizing while streaming");
    t.keys(&["C-d"]);
    wait_exit(&t);
}
