//! TUI rendering costs: a 1,000-message conversation, a 1 MB tool output, one frame of the
//! live area, and streaming deltas (each applied and drawn) to find the tokens/s capacity.
#![allow(clippy::expect_used)]

use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ratatui::backend::TestBackend;

use ikigai::config::Config;
use ikigai::message::Message;
use ikigai::protocol::Event;
use ikigai::tools::Registry;
use ikigai::ui::tui::TuiContext;
use ikigai::ui::tui::app::App;
use ikigai::ui::tui::history::History;
use ikigai::ui::tui::screen::Screen;
use ikigai::ui::tui::theme::Theme;

const ANSWER: &str = "## Result\n\nThe function `parse` reads **each** line and returns a list:\n\n\
- first item with some words\n- second item, a little longer so that it wraps at eighty columns or so\n\n\
```rust\nfn parse(s: &str) -> Vec<String> {\n    s.lines().map(str::to_string).collect()\n}\n```\n\nThat is all.";

fn app() -> App {
    let ctx = TuiContext {
        provider: ikigai::provider::spec_for(&Config::default(), "openai", None, &|_| None)
            .expect("the default provider resolves"),
        config: Config::default(),
        registry: Registry::empty(),
        cwd: "/work/project".into(),
        welcome_notes: vec![],
        sessions: None,
    };
    App::new(ctx, Theme::new(true), History::load(None), "~/project".into())
}

fn conversation(n: usize) -> Vec<Message> {
    let out = serde_json::json!({"tool_success": true, "result": {"output": "a.rs\nb.rs\nc.rs"}}).to_string();
    let mut h = Vec::with_capacity(n);
    let mut i = 0;
    while h.len() < n {
        h.push(Message::user(format!("question number {i}: what does parse do?")));
        h.push(Message::tool_call(
            format!("c{i}"),
            "glob",
            r#"{"pattern":"*.rs"}"#,
        ));
        h.push(Message::tool_result(
            format!("c{i}"),
            "glob",
            "3 files",
            out.clone(),
            true,
        ));
        h.push(Message::assistant(ANSWER));
        i += 1;
    }
    h.truncate(n);
    h
}

fn benches(c: &mut Criterion) {
    let history = conversation(1000);
    c.bench_function("conversation_1000_messages_to_scrollback", |b| {
        b.iter(|| {
            let mut a = app();
            a.on_agent_event(
                Event::SessionStarted {
                    id: Some("s".into()),
                    model: "m".into(),
                    history: history.clone().into(),
                    tokens: 0,
                    cost: None,
                    interrupted: vec![],
                },
                Instant::now(),
            );
            let mut screen = Screen::new(TestBackend::new(100, 40), 3).unwrap_or_else(|e| panic!("{e}"));
            screen
                .render(&mut a, Instant::now())
                .unwrap_or_else(|e| panic!("{e}"));
        })
    });

    let big: String = (0..16_000)
        .map(|i| format!("{i:>8} some tool output text here\n"))
        .collect();
    let mb = serde_json::json!({"tool_success": true, "result": {"output": big}}).to_string();
    let mut g = c.benchmark_group("tool_output");
    g.throughput(Throughput::Bytes(mb.len() as u64));
    g.sample_size(20);
    g.bench_function("tool_output_1mb_to_scrollback", |b| {
        b.iter(|| {
            let mut a = app();
            a.on_agent_event(
                Event::ToolCallStarted {
                    id: "c".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                },
                Instant::now(),
            );
            a.on_agent_event(
                Event::ToolCallFinished {
                    id: "c".into(),
                    summary: "exit 0".into(),
                    output: mb.clone(),
                    success: true,
                },
                Instant::now(),
            );
            let mut screen = Screen::new(TestBackend::new(100, 40), 3).unwrap_or_else(|e| panic!("{e}"));
            screen
                .render(&mut a, Instant::now())
                .unwrap_or_else(|e| panic!("{e}"));
        })
    });
    g.finish();

    // One frame of the live area: a long message streaming (about 2,000 tokens so far).
    let long: String = std::iter::repeat_n(ANSWER, 20).collect::<Vec<_>>().join("\n\n");
    let mut a = app();
    a.on_agent_event(Event::TurnStarted, Instant::now());
    a.on_agent_event(Event::TextDelta { text: long.clone() }, Instant::now());
    let mut screen = Screen::new(TestBackend::new(100, 40), 3).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("live_frame_100x40", |b| {
        b.iter(|| {
            a.on_agent_event(Event::TextDelta { text: "word ".into() }, Instant::now());
            screen
                .render(&mut a, Instant::now())
                .unwrap_or_else(|e| panic!("{e}"));
        })
    });

    // Streaming: one delta (a token) applied and a frame drawn, the worst case where every
    // token gets its own frame. Capacity in tokens/s = 1 / time per iteration.
    let mut g = c.benchmark_group("streaming");
    g.throughput(Throughput::Elements(1));
    g.bench_function("delta_and_frame", |b| {
        let mut a = app();
        a.on_agent_event(Event::TurnStarted, Instant::now());
        let mut screen = Screen::new(TestBackend::new(100, 40), 3).unwrap_or_else(|e| panic!("{e}"));
        let tokens: Vec<&str> = ANSWER.split_inclusive(' ').collect();
        let mut i = 0usize;
        b.iter(|| {
            a.on_agent_event(
                Event::TextDelta {
                    text: tokens[i % tokens.len()].to_string(),
                },
                Instant::now(),
            );
            i += 1;
            if i.is_multiple_of(2000) {
                a.on_agent_event(
                    Event::TurnEnded {
                        reason: ikigai::protocol::TurnEndReason::Done,
                    },
                    Instant::now(),
                );
                a.on_agent_event(Event::TurnStarted, Instant::now());
            }
            screen
                .render(&mut a, Instant::now())
                .unwrap_or_else(|e| panic!("{e}"));
        })
    });
    g.finish();
}

criterion_group!(tui, benches);
criterion_main!(tui);
