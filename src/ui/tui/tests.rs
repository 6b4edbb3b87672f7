//! Screen tests: the real app state, view and `Screen` on a ratatui `TestBackend`, driven by
//! synthetic agent events and keys; insta snapshots of scrollback plus viewport. The
//! harness here is shared with `tests_input`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use serde_json::{Value, json};

use super::TuiContext;
use super::app::App;
use super::history::History;
use super::screen::Screen;
use super::theme::Theme;
use crate::config::Config;
use crate::message::Message;
use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};
use crate::tools::{ParamSpec, Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSchema, ToolSource};

pub(super) struct Probe(&'static str, Option<&'static str>);

#[async_trait]
impl Tool for Probe {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.0.to_string(),
            description: format!("The {} tool.\nSecond line.", self.0),
            parameters: vec![ParamSpec::new("pattern", "string", "What to look for", true)],
            json_schema: None,
        }
    }
    fn source(&self) -> ToolSource {
        match self.1 {
            Some(p) => ToolSource::External(p.into()),
            None => ToolSource::Builtin,
        }
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(json!({"output": ""}), ""))
    }
}

pub(super) fn context(notes: &[&str]) -> TuiContext {
    let registry = Registry::empty();
    registry.register(Arc::new(Probe("glob", None)));
    registry.register(Arc::new(Probe(
        "weather",
        Some("/home/u/.config/ikigai/tools/weather"),
    )));
    TuiContext {
        provider: crate::provider::spec_for(&Config::default(), "openai", None, &|_| None).unwrap(),
        config: Config::default(),
        registry,
        cwd: "/work/project".into(),
        welcome_notes: notes.iter().map(|s| s.to_string()).collect(),
        sessions: None,
    }
}

pub(super) struct Harness {
    pub(super) screen: Screen<TestBackend>,
    pub(super) app: App,
    pub(super) t0: Instant,
}

impl Harness {
    pub(super) fn new(w: u16, h: u16, notes: &[&str]) -> Self {
        let app = App::new(
            context(notes),
            Theme::new(true),
            History::load(None),
            "~/project".into(),
        );
        let screen = Screen::new(TestBackend::new(w, h), 3).unwrap();
        Harness {
            screen,
            app,
            t0: Instant::now(),
        }
    }

    pub(super) fn at(&self, secs: u64) -> Instant {
        self.t0 + Duration::from_secs(secs)
    }

    pub(super) fn ev(&mut self, e: Event) -> &mut Self {
        let now = self.at(1);
        self.app.on_agent_event(e, now);
        self
    }

    pub(super) fn key(&mut self, code: KeyCode, m: KeyModifiers) -> &mut Self {
        let now = self.at(1);
        self.app.on_key(KeyEvent::new(code, m), now);
        self
    }

    pub(super) fn typed(&mut self, s: &str) -> &mut Self {
        for c in s.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
        self
    }

    pub(super) fn enter(&mut self) -> &mut Self {
        self.key(KeyCode::Enter, KeyModifiers::NONE)
    }

    pub(super) fn draw(&mut self) -> &mut Self {
        let now = self.at(3);
        self.screen.render(&mut self.app, now).unwrap();
        self
    }

    pub(super) fn text(&self) -> String {
        let b = self.screen.backend();
        let mut out = String::new();
        for line in buffer_lines(b.scrollback()) {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str("═══ screen ═══\n");
        for line in buffer_lines(b.buffer()) {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

pub(super) fn buffer_lines(b: &Buffer) -> Vec<String> {
    let w = usize::from(b.area.width);
    let mut out = Vec::new();
    for y in 0..b.area.height {
        let mut s = String::new();
        let mut skip = 0;
        for x in 0..w {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = b[(x as u16, y)].symbol();
            skip = super::wrap::str_width(sym).saturating_sub(1);
            s.push_str(sym);
        }
        out.push(s.trim_end().to_string());
    }
    out
}

fn session(h: &mut Harness) {
    h.ev(Event::SessionStarted {
        id: Some("0193f2a4-aaaa-bbbb".into()),
        model: "gpt-5-mini".into(),
        history: vec![].into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
}

fn tool_output(text: &str) -> String {
    json!({"tool_success": true, "result": {"output": text, "exit_code": 0}}).to_string()
}

#[test]
fn welcome_screen() {
    let mut h = Harness::new(
        80,
        24,
        &["No API key: set OPENAI_API_KEY or base_url in ~/.config/ikigai/config.toml"],
    );
    session(&mut h);
    h.draw();
    insta::assert_snapshot!(h.text());
}

#[test]
fn streaming_markdown_with_code_block() {
    let mut h = Harness::new(80, 24, &[]);
    session(&mut h);
    h.typed("how do I print?").enter();
    assert_eq!(h.app.take_ops(), [Op::Submit("how do I print?".into())]);
    h.ev(Event::TurnStarted);
    for chunk in [
        "## Printing\n\nUse **`println!`** for *formatted* output:\n\n",
        "- one line\n- with a [link](https://doc.rust-lang.org)\n\n",
        "```rust\nfn main() {\n    println!(\"hi {}\", 1);\n",
    ] {
        h.ev(Event::TextDelta { text: chunk.into() });
    }
    h.draw();
    insta::assert_snapshot!(h.text());
}

#[test]
fn tool_call_with_result() {
    let mut h = Harness::new(80, 24, &[]);
    session(&mut h);
    h.typed("run the tests").enter().draw();
    h.ev(Event::TurnStarted);
    h.ev(Event::TextDelta {
        text: "Running them now.".into(),
    });
    h.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"cargo test","timeout":60}"#.into(),
    });
    h.draw();
    let running = h.text();
    assert!(running.contains("Running bash… 2s"), "{running}");
    h.ev(Event::ToolCallFinished {
        id: "c1".into(),
        summary: "exit 0".into(),
        output: tool_output("running 2 tests\ntest a ... ok\ntest b ... ok\n\ntest result: ok. 2 passed"),
        success: true,
    });
    h.ev(Event::Usage {
        input: 1200,
        output: 345,
        cached: 0,
        context_pct: None,
        cost: None,
    });
    h.ev(Event::TextDelta {
        text: "All **2 tests** pass.".into(),
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    insta::assert_snapshot!(h.text());
}

#[test]
fn error_screen() {
    let mut h = Harness::new(80, 24, &[]);
    session(&mut h);
    h.typed("/modle gpt-5").enter();
    h.typed("hello").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::Retrying {
        attempt: 1,
        in_secs: 2.0,
        reason: "HTTP 503 from the provider".into(),
    });
    h.ev(Event::notice(
        NoticeLevel::Error,
        "authentication failed (HTTP 401): check OPENAI_API_KEY",
    ));
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Error,
    });
    h.ev(Event::ToolCallFinished {
        id: "x".into(),
        summary: "TOOL_TIMEOUT: timed out after 30s".into(),
        output: json!({"tool_success": false, "error": "timed out after 30s", "error_code": "TOOL_TIMEOUT", "partial_output": "partial line"}).to_string(),
        success: false,
    });
    h.draw();
    insta::assert_snapshot!(h.text());
}

#[test]
fn help_screen() {
    let mut h = Harness::new(80, 40, &[]);
    session(&mut h);
    h.typed("/help").enter().draw();
    insta::assert_snapshot!(h.text());
}

#[test]
fn tools_tool_and_config_commands() {
    let mut h = Harness::new(80, 40, &[]);
    session(&mut h);
    h.typed("/tools").enter();
    h.typed("/tool glob").enter();
    h.typed("/tool glbo").enter();
    h.typed("/config").enter();
    h.draw();
    let t = h.text();
    assert!(
        t.contains("weather  [/home/u/.config/ikigai/tools/weather]"),
        "{t}"
    );
    assert!(t.contains("glob  [built-in]"), "{t}");
    assert!(t.contains("\"pattern\": {"), "{t}");
    assert!(t.contains("No tool named glbo. Did you mean glob?"), "{t}");
    assert!(t.contains("tool_result_lines"), "{t}");
    assert!(t.contains("not set ($OPENAI_API_KEY)"), "{t}");
}

#[test]
fn narrow_terminal() {
    let mut h = Harness::new(40, 24, &[]);
    session(&mut h);
    h.typed("find the rust files please").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "glob".into(),
        arguments: r#"{"pattern":"**/*.rs","path":"src"}"#.into(),
    });
    h.ev(Event::ToolCallFinished {
        id: "c1".into(),
        summary: "2 files".into(),
        output: tool_output("src/main.rs\nsrc/a/very/long/path/that/does/not/fit/in/forty/columns.rs"),
        success: true,
    });
    h.ev(Event::TextDelta {
        text: "Found **two** files; the second has a rather long path. 日本語の説明も折り返します 🦀🦀"
            .into(),
    });
    h.draw();
    h.typed("and a queued follow-up").enter();
    h.draw();
    insta::assert_snapshot!(h.text());
    for line in h.text().lines() {
        assert!(super::wrap::str_width(line) <= 40, "{line:?}");
    }
}

#[test]
fn interrupted_turn_and_queue() {
    let mut h = Harness::new(80, 24, &[]);
    session(&mut h);
    h.typed("long job").enter();
    h.app.take_ops();
    h.ev(Event::TurnStarted);
    h.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"sleep 100"}"#.into(),
    });
    h.typed("next question").enter();
    assert!(h.app.take_ops().is_empty(), "queued, not sent");
    h.draw();
    assert!(h.text().contains("↳ queued: next question"), "{}", h.text());
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(h.app.take_ops(), [Op::Cancel]);
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Interrupted,
    });
    // Not sent: back in the input box, to send or edit.
    assert!(h.app.take_ops().is_empty());
    assert_eq!(h.app.editor.text(), "next question");
    h.draw();
    insta::assert_snapshot!(h.text());
    h.enter();
    assert_eq!(h.app.take_ops(), [Op::Submit("next question".into())]);
}

#[test]
fn resumed_history_is_shown() {
    let mut h = Harness::new(80, 30, &[]);
    h.ev(Event::SessionStarted {
        id: Some("0193aaaa".into()),
        model: "gpt-5".into(),
        history: vec![
            Message::system("you are helpful"),
            Message::user("list files"),
            Message::tool_call("c1", "list_dir", r#"{"path":"."}"#),
            Message::tool_result(
                "c1",
                "list_dir",
                "2 entries",
                tool_output("Cargo.toml\nsrc/"),
                true,
            ),
            Message::assistant("There are **2** entries."),
        ]
        .into(),
        tokens: 0,
        cost: None,
        interrupted: vec![],
    });
    h.draw();
    let t = h.text();
    assert!(t.contains("Resumed session 0193aaaa (4 messages)"), "{t}");
    assert!(t.contains("● list_dir(path=\".\")"), "{t}");
    assert!(t.contains("    Cargo.toml"), "{t}");
    assert!(t.contains("There are 2 entries."), "{t}");
    assert!(t.contains("openai/gpt-5 · 0193aaaa"), "{t}");
}

#[test]
fn a_long_live_message_goes_to_the_scrollback_line_by_line() {
    let mut h = Harness::new(60, 12, &[]);
    session(&mut h);
    h.typed("count").enter();
    h.ev(Event::TurnStarted);
    h.draw();
    let small = h.screen.viewport_height();
    h.ev(Event::TextDelta {
        text: "line one\nline t".into(),
    });
    h.draw();
    // The viewport holds `line t` (right under `line one`, finished and in the scrollback).
    assert_eq!(h.screen.viewport_height(), small + 1, "{}", h.text());
    assert!(h.text().contains("line one\nline t\n"), "{}", h.text());
    let text: String = (1..=29).map(|i| format!("para {i}\n\n")).collect();
    h.ev(Event::TextDelta {
        text: format!("wo\n\n{text}para 30"),
    });
    h.draw();
    // Only the unfinished line is live (after a blank line: a new paragraph).
    assert_eq!(h.screen.viewport_height(), small + 2, "{}", h.text());
    // An unfinished line taller than the room shows its last rows (in half the room).
    let words: String = (1..=40).map(|i| format!(" word{i}")).collect();
    h.ev(Event::TextDelta { text: words });
    h.draw();
    assert_eq!(h.screen.viewport_height(), 8);
    assert_eq!(super::screen::viewport_room(12), 8);
    let screen = h.text();
    let visible = screen.split("═══ screen ═══").nth(1).unwrap();
    assert!(visible.contains("word40"), "{visible}");
    assert!(!visible.contains("word1 "), "{visible}");
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    assert!(h.screen.viewport_height() < 8);
    let all = h.text();
    for part in ["line two", "para 1\n", "para 29\n", "word1 ", "word40"] {
        assert_eq!(all.matches(part).count(), 1, "{part:?} once: {all}");
    }
}

#[test]
fn escape_sequences_and_bidi_controls_are_shown_not_performed() {
    let mut h = Harness::new(80, 20, &[]);
    session(&mut h);
    h.typed("go").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::TextDelta {
        text: "title \u{1b}]0;T\u{7} clear \u{1b}[2J flip \u{202E}gnp.exe\n".into(),
    });
    h.ev(Event::ToolCallStarted {
        id: "c1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"cat x"}"#.into(),
    });
    h.ev(Event::ToolCallFinished {
        id: "c1".into(),
        summary: "exit 0".into(),
        output: tool_output("out \u{1b}]52;c;Y2xpcA==\u{7} \u{2066}x\u{2069}"),
        success: true,
    });
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.draw();
    let all = h.text();
    assert!(
        all.contains("title ␛]0;T␇ clear ␛[2J flip <U+202E>gnp.exe"),
        "{all}"
    );
    assert!(all.contains("out ␛]52;c;Y2xpcA==␇ <U+2066>x<U+2069>"), "{all}");
    assert!(
        !all.chars()
            .any(|c| c == '\u{1b}' || c == '\u{7}' || crate::text::is_bidi_control(c)),
        "{all}"
    );
}

#[test]
fn a_retry_is_one_notice_and_a_countdown_on_the_status_line() {
    let mut h = Harness::new(80, 20, &[]);
    session(&mut h);
    h.typed("go").enter();
    h.ev(Event::TurnStarted);
    for left in [30.0, 29.0, 28.0] {
        h.ev(Event::Retrying {
            attempt: 1,
            in_secs: left,
            reason: "rate limited (429)".into(),
        });
    }
    h.draw();
    let all = h.text();
    assert_eq!(all.matches("rate limited (429); retrying in").count(), 1, "{all}");
    // Drawn two seconds after the last event (the harness's clock): 26 s left.
    assert!(all.contains("Retrying in 26s (attempt 1)"), "{all}");
}
