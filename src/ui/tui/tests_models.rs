//! The `/model` listing and reasoning in the TUI: reasoning is dimmed and apart from the
//! answer, the same live and restored; the listing marks the current provider and a
//! missing key.

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

use super::tests::Harness;
use crate::message::Message;
use crate::protocol::{Event, KeyState, ProviderInfo, TurnEndReason};

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

/// The style of the first cell of the first row (scrollback, then screen) holding `text`.
fn style_of(h: &Harness, text: &str) -> (Option<Color>, Modifier) {
    let b = h.screen.backend();
    let find = |buf: &Buffer| {
        let rows = super::tests::buffer_lines(buf);
        let y = rows.iter().position(|r| r.contains(text))?;
        let x = rows[y].find(text)?;
        // The row's text up to `x` is one cell per char here (no wide chars before it).
        let col = rows[y][..x].chars().count();
        let c = &buf[(col as u16, y as u16)];
        Some((Some(c.fg), c.modifier))
    };
    find(b.scrollback())
        .or_else(|| find(b.buffer()))
        .unwrap_or_else(|| panic!("{text} not shown:\n{}", h.text()))
}

#[test]
fn reasoning_is_dimmed_apart_from_the_answer_live_and_restored() {
    let mut h = Harness::new(70, 24, &[]);
    session(&mut h, vec![]);
    h.typed("why is the sky blue?").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::ReasoningDelta {
        text: "Rayleigh scattering, ".into(),
    });
    h.ev(Event::ReasoningDelta {
        text: "shorter wavelengths.".into(),
    });
    h.ev(Event::TextDelta {
        text: "Because blue light scatters most.".into(),
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    // The same exchange restored from the store.
    session(
        &mut h,
        vec![
            Message::user("and at sunset?"),
            Message::reasoning(
                "Longer path through air.",
                "anthropic",
                serde_json::json!({"signature": "s"}),
            ),
            Message::assistant("Red light gets through."),
        ],
    );
    h.draw();
    let text = h.text();
    insta::assert_snapshot!(text);
    for thought in ["Rayleigh scattering", "Longer path through air."] {
        let (fg, modifier) = style_of(&h, thought);
        assert_eq!(fg, Some(Color::DarkGray), "{thought} dimmed");
        assert!(modifier.contains(Modifier::ITALIC), "{thought} in italics");
    }
    for answer in ["Because blue light", "Red light gets through."] {
        let (fg, _) = style_of(&h, answer);
        assert_ne!(fg, Some(Color::DarkGray), "{answer} is not dimmed");
        let line = text.lines().find(|l| l.contains(answer)).unwrap();
        assert!(!line.contains("scattering") && !line.contains("path"), "{line}");
    }
}

fn provider(name: &str, current: bool, key: KeyState, models: &[&str], error: Option<&str>) -> ProviderInfo {
    ProviderInfo {
        name: name.into(),
        kind: if name == "anthropic" {
            "anthropic"
        } else {
            "openai-chat"
        }
        .into(),
        model: format!("{name}-model"),
        current,
        key,
        key_env: match key {
            KeyState::NotNeeded => String::new(),
            _ => format!("{}_API_KEY", name.to_uppercase()),
        },
        models: models.iter().map(|m| m.to_string()).collect(),
        error: error.map(str::to_string),
    }
}

#[test]
fn the_model_listing_marks_the_current_provider_and_a_missing_key() {
    let mut h = Harness::new(90, 20, &[]);
    session(&mut h, vec![]);
    h.typed("/model").enter();
    assert_eq!(h.app.take_ops(), vec![crate::protocol::Op::ListModels]);
    h.ev(Event::Providers {
        providers: vec![
            provider("openai", true, KeyState::Set, &["gpt-5", "gpt-5-mini"], None),
            provider("anthropic", false, KeyState::Missing, &[], None),
            provider(
                "ollama",
                false,
                KeyState::NotNeeded,
                &[],
                Some("cannot connect to http://127.0.0.1:11434/v1"),
            ),
        ],
    });
    h.draw();
    insta::assert_snapshot!(h.text());
    assert_eq!(style_of(&h, "* openai").0, Some(Color::Cyan));
    assert_eq!(
        style_of(&h, "no key: set $ANTHROPIC_API_KEY").0,
        Some(Color::Yellow)
    );
    assert_eq!(style_of(&h, "models: gpt-5, gpt-5-mini").0, Some(Color::DarkGray));
    assert_eq!(style_of(&h, "cannot list models").0, Some(Color::Yellow));
}

#[test]
fn a_switch_updates_the_status_line() {
    let mut h = Harness::new(90, 12, &[]);
    session(&mut h, vec![]);
    h.ev(Event::ModelChanged {
        model: "claude-sonnet-4-5".into(),
        provider: "anthropic".into(),
    });
    h.draw();
    let text = h.text();
    let screen = text.split("═══ screen ═══").nth(1).unwrap();
    assert!(screen.contains("anthropic/claude-sonnet-4-5"), "{screen}");
}
