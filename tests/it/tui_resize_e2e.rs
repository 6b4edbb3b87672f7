//! The real binary's TUI in tmux, resized in both directions (height and width, idle and
//! while an answer streams, held at chosen points or live with no pause): every finished
//! message stays in the scrollback exactly once, with no leftover copies of the input box,
//! status line or separator; narrowed 120 -> 80 while an answer, a code block, a paragraph
//! taller than the screen or reasoning streams (issue 25), no stale copy of a live row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::{Tmux, wait_exit};

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

    // The issue's repro: 30 rows -> 8 -> 30, and more, in both directions.
    let first = ["› first question", "FIRST-ANSWER-END"];
    for (w, h) in [(100, 8), (100, 30), (100, 12), (100, 30)] {
        t.resize(w, h);
        assert_history_intact(&settled(&t), &first, &format!("after {w}x{h}"));
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
    assert_history_intact(&settled(&t), &all, "before resizing");
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
        assert_history_intact(&settled(&t), &all, &format!("after {w}x{h}"));
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
fn resizing_while_an_answer_streams_keeps_it_whole() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let long: String = (1..=40).map(|i| format!("- streamed row {i} here\n")).collect();
    // ~250 words, 10 ms apart: a live answer that keeps drawing between the holds.
    fake.push(Reply::text(&format!("STREAM-START\n\n{long}\nSTREAM-END")).paced(Duration::from_millis(10)));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    fake.hold_before("\"content\":\"5 \"");
    t.wait_text("Ask anything");
    t.type_text("stream please");
    t.keys(&["Enter"]);
    t.wait_text("STREAM-START");
    // Each resize mid-answer: the stream is held before row `at` (so no frame is on its
    // way to the terminal while tmux resizes it), resized, redrawn, and let go on.
    for (at, (w, h)) in [(5, (100, 15)), (11, (80, 30)), (17, (100, 24)), (23, (100, 30))] {
        let done = format!("streamed row {} here", at - 1);
        t.wait_for("the stream to reach the hold", |s| {
            s.contains(&done) && s.lines().any(|l| l.trim_end() == "• streamed row")
        });
        t.resize(w, h);
        fake.hold_before(&format!("\"content\":\"{} \"", at + 6));
    }
    fake.release();
    assert_answer_whole(
        &t,
        "STREAM",
        |i| format!("streamed row {i} here"),
        40,
        "after resizing while streaming",
    );
}

/// The resizes come while the answer streams, with no pause: tmux resizes its own grid at
/// once and tells ikigai up to 250 ms later, so frames drawn for the old size keep arriving
/// on the resized grid (shrinking to 8 rows, growing back, narrowing, widening).
#[test]
fn resizing_while_an_answer_streams_live_loses_and_repeats_nothing() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let long: String = (1..=60).map(|i| format!("- live row {i} here\n")).collect();
    fake.push(Reply::text(&format!("LIVE-START\n\n{long}\nLIVE-END")).paced(Duration::from_millis(8)));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("stream please");
    t.keys(&["Enter"]);
    t.wait_text("LIVE-START");
    let sizes = [
        (100, 12),
        (100, 30),
        (100, 8),
        (100, 30),
        (80, 30),
        (100, 30),
        (60, 20),
        (120, 40),
        (100, 15),
        (100, 30),
    ];
    let mut resizes = 0;
    while !t.capture_screen().contains("LIVE-END") && resizes < 60 {
        let (w, h) = sizes[resizes % sizes.len()];
        t.resize_window(w, h);
        std::thread::sleep(Duration::from_millis(100));
        resizes += 1;
    }
    assert!(
        resizes >= 8,
        "the answer ended after {resizes} resizes: too few to test"
    );
    let when = format!("after {resizes} live resizes");
    assert_answer_whole(&t, "LIVE", |i| format!("live row {i} here\n"), 60, &when);
}

/// The whole history once the screen stopped changing (a frame for a late resize
/// notice can still be on its way; a capture in the middle of it sees half a frame).
fn settled(t: &Tmux) -> String {
    let mut last = t.capture_all();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(300));
        let now = t.capture_all();
        if now == last && now.contains("Ask anything") {
            return now;
        }
        last = now;
    }
    last
}

/// Once the answer `{tag}-START … {tag}-END` of `n` rows has ended (and the window is back
/// at 100x30): the whole history holds the question, both ends and every row once, no
/// copy of the live viewport, then ikigai exits.
fn assert_answer_whole(t: &Tmux, tag: &str, row: impl Fn(usize) -> String, n: usize, when: &str) {
    let (start, end) = (format!("{tag}-START"), format!("{tag}-END"));
    t.wait_text(&end);
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.resize(100, 30);
    // The redraw after the last resize has come (under load it can lag the resize), and
    // no later one is under way: two captures a moment apart agree.
    t.wait_for("the input box after the resize", |s| {
        s.contains("Ask anything") && s.contains("tools 0/50")
    });
    let all = settled(t);
    let rows: Vec<String> = (1..=n).map(row).collect();
    let mut want: Vec<&str> = vec!["› stream please", &start, &end];
    want.extend(rows.iter().map(String::as_str));
    assert_history_intact(&all, &want, when);
    assert!(
        !all.contains("Esc to interrupt"),
        "{when}: no copy of the live viewport:\n{all}"
    );
    t.keys(&["C-d"]);
    wait_exit(t);
}

/// Issue 25: narrowed from 120 to 80 columns while a long answer streams (30 lines of ~150
/// characters, one word per chunk). The terminal re-flows what is on its screen when it
/// narrows; whatever part of the answer sat in the live viewport then came back as a
/// 120-column copy above the final answer. Every line is in the history once, with its end.
#[test]
fn narrowing_while_a_long_answer_streams_leaves_no_stale_copy() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let para = |i: usize| {
        format!(
            "Paragraph {i}: this line of the streamed answer is long enough to wrap on a narrow \
             terminal, and it keeps going a little longer until its own end p{i}-end"
        )
    };
    let text: Vec<String> = (1..=30).map(para).collect();
    let answer = format!("WIDE-START\n{}\nWIDE-END", text.join("\n"));
    fake.push(Reply::text(&answer).paced(Duration::from_millis(5)));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.resize(120, 30);
    t.type_text("stream please");
    t.keys(&["Enter"]);
    t.wait_for("paragraph 12 on screen", |_| {
        t.capture_screen().contains("Paragraph 12:")
    });
    t.resize_window(80, 30);
    t.wait_text("WIDE-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    let all = settled(&t);
    for i in 1..=30 {
        for part in [format!("Paragraph {i}:"), format!("p{i}-end")] {
            assert_eq!(all.matches(&part).count(), 1, "{part:?} once:\n{all}");
        }
    }
    assert_history_intact(
        &all,
        &["› stream please", "WIDE-START", "WIDE-END"],
        "after narrowing",
    );
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// A fenced code block streaming across the same narrowing: its lines go into the history
/// as they are finished (highlighted as code, not as text), each once, and the text after
/// the block follows it.
#[test]
fn narrowing_while_a_code_block_streams_keeps_every_code_line_once() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let code: Vec<String> = (1..=40)
        .map(|i| format!("    let code_line_{i:02} = compute(\"a value wide enough to wrap at eighty\", {i}); // c{i:02}-end"))
        .collect();
    let answer = format!(
        "CODE-START\nHere is the program:\n\n```rust\nfn main() {{\n{}\n}}\n```\n\nAfter the block: CODE-END",
        code.join("\n")
    );
    fake.push(Reply::text(&answer).paced(Duration::from_millis(5)));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.resize(120, 30);
    t.type_text("stream please");
    t.keys(&["Enter"]);
    t.wait_for("code line 12 on screen", |_| {
        t.capture_screen().contains("code_line_12")
    });
    t.resize_window(80, 30);
    t.wait_text("CODE-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    let all = settled(&t);
    for i in 1..=40 {
        for part in [format!("code_line_{i:02} "), format!("c{i:02}-end")] {
            assert_eq!(all.matches(&part).count(), 1, "{part:?} once:\n{all}");
        }
    }
    assert!(!all.contains("```"), "the fence is rendered, not shown:\n{all}");
    let order: Vec<usize> = [
        "Here is the program:",
        "fn main() {",
        "c40-end",
        "After the block",
    ]
    .iter()
    .map(|x| all.find(x).unwrap_or_else(|| panic!("{x}:\n{all}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "in order:\n{all}");
    assert_history_intact(
        &all,
        &["› stream please", "CODE-START", "CODE-END"],
        "after narrowing",
    );
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// The same narrowing while the model's reasoning streams (30 long lines), then its answer:
/// every reasoning line once, marked `∴` once, and the answer below it.
#[test]
fn narrowing_while_reasoning_streams_leaves_no_stale_copy() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let line = |i: usize| {
        format!(
            "Thought {i}: this line of the model's reasoning is long enough to wrap on a narrow \
             terminal, and it keeps going a little longer until its own end t{i}-end"
        )
    };
    let thinking: Vec<String> = (1..=30).map(line).collect();
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let mut payloads = vec![chunk(
        serde_json::json!({"role": "assistant"}),
        serde_json::Value::Null,
    )];
    for word in thinking.join("\n").split_inclusive(' ') {
        payloads.push(chunk(
            serde_json::json!({"reasoning_content": word}),
            serde_json::Value::Null,
        ));
    }
    payloads.push(chunk(
        serde_json::json!({"content": "The answer: THINK-END"}),
        serde_json::Value::Null,
    ));
    payloads.push(chunk(serde_json::json!({}), serde_json::json!("stop")));
    payloads.push("[DONE]".into());
    fake.push(Reply::payloads(&payloads).paced(Duration::from_millis(5)));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.resize(120, 30);
    t.type_text("stream please");
    t.keys(&["Enter"]);
    t.wait_for("thought 12 on screen", |_| {
        t.capture_screen().contains("Thought 12:")
    });
    t.resize_window(80, 30);
    t.wait_text("THINK-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    let all = settled(&t);
    for i in 1..=30 {
        for part in [format!("Thought {i}:"), format!("t{i}-end")] {
            assert_eq!(all.matches(&part).count(), 1, "{part:?} once:\n{all}");
        }
    }
    assert_eq!(all.matches("∴ Thought 1:").count(), 1, "marked once:\n{all}");
    assert!(
        all.find("t30-end") < all.find("THINK-END"),
        "the answer below:\n{all}"
    );
    assert_history_intact(&all, &["› stream please", "THINK-END"], "after narrowing");
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// A paragraph of one line longer than the screen is tall (~3000 characters), narrowed
/// while it streams: its unfinished rows are live, in a third of the screen at most, so they
/// still fit on it once the terminal has re-flowed them; every word is in the history once.
#[test]
fn narrowing_in_a_paragraph_taller_than_the_screen_leaves_no_stale_copy() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let para = |i: usize| {
        let words: String = (1..=400).map(|w| format!("w{i}x{w} ")).collect();
        format!("Para {i}: {words}p{i}-end")
    };
    let text: Vec<String> = (1..=3).map(para).collect();
    let answer = format!("LONG-START\n\n{}\n\nLONG-END", text.join("\n\n"));
    fake.push(Reply::text(&answer).paced(Duration::from_millis(5)));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.resize(120, 30);
    t.type_text("stream please");
    t.keys(&["Enter"]);
    t.wait_for("paragraph 2 far along", |_| {
        t.capture_screen().contains("w2x300 ")
    });
    t.resize_window(80, 30);
    t.wait_text("LONG-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    let all = settled(&t);
    for i in 1..=3 {
        for w in 1..=400 {
            let word = format!("w{i}x{w}");
            let n = all.split_whitespace().filter(|x| *x == word).count();
            assert_eq!(n, 1, "{word:?} once:\n{all}");
        }
        for part in [format!("Para {i}:"), format!("p{i}-end")] {
            assert_eq!(all.matches(&part).count(), 1, "{part:?} once:\n{all}");
        }
    }
    assert_history_intact(
        &all,
        &["› stream please", "LONG-START", "LONG-END"],
        "after narrowing",
    );
    t.keys(&["C-d"]);
    wait_exit(&t);
}
