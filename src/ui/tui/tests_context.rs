//! The context budget in the TUI: the share of the window in the status line and the
//! notice a compaction leaves in the scrollback.

use super::tests::Harness;
use crate::protocol::{Event, TurnEndReason};

#[test]
fn context_share_in_the_status_line_and_the_compaction_notice() {
    let mut h = Harness::new(80, 16, &[]);
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "gpt-5-mini".into(),
        history: vec![].into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
    h.typed("keep going").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::Compacted {
        before: 6963,
        after: 1210,
    });
    h.ev(Event::Usage {
        input: 1310,
        output: 40,
        cached: 0,
        context_pct: Some(16),
        cost: None,
    });
    h.ev(Event::TextDelta {
        text: "Continuing from the summary.".into(),
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    let text = h.text();
    assert!(text.contains("(16% ctx)"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn cached_input_tokens_show_in_the_status_line() {
    let mut h = Harness::new(100, 12, &[]);
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "claude-sonnet-4-5".into(),
        history: vec![].into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
    h.typed("hello").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::Usage {
        input: 12_000,
        output: 300,
        cached: 11_500,
        context_pct: Some(6),
        cost: None,
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    let text = h.text();
    assert!(text.contains("12.3k tok (11.5k cached, 6% ctx)"), "{text}");
    // Without a context share the cached part still shows.
    h.ev(Event::Usage {
        input: 1000,
        output: 0,
        cached: 500,
        context_pct: None,
        cost: None,
    });
    h.draw();
    assert!(
        h.text().contains("13.3k tok (12.0k cached, 6% ctx)"),
        "{}",
        h.text()
    );
}

#[test]
fn the_session_cost_shows_in_the_status_line_only_when_priced() {
    let mut h = Harness::new(120, 12, &[]);
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "gpt-5-mini".into(),
        history: vec![].into(),
        tokens: 100,
        cost: Some(1.5),
        interrupted: vec![],
    });
    h.draw();
    assert!(h.text().contains("$1.50"), "resumed cost: {}", h.text());
    h.ev(Event::Usage {
        input: 1000,
        output: 10,
        cached: 0,
        context_pct: None,
        cost: Some(0.25),
    });
    h.draw();
    assert!(h.text().contains("$1.75"), "{}", h.text());

    let mut h = Harness::new(120, 12, &[]);
    h.ev(Event::Usage {
        input: 1000,
        output: 10,
        cached: 0,
        context_pct: None,
        cost: None,
    });
    h.draw();
    assert!(!h.text().contains('$'), "no price, no cost: {}", h.text());
}
