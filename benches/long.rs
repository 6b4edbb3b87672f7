//! Long sessions (`make bench`): how the per-call and per-turn costs grow with history.
//! - `request_build/N`: the budget step's pure part for an N-message conversation
//!   (estimate, elision plan, the wire view) plus encoding the Chat Completions body
//!   as a large one is (a counting pass for its length, then the bytes).
//!   Target at 10,000 messages: ≤ 5 ms. `request_build_responses`, `_anthropic` and
//!   `_google`: the same for the other wire formats (every one writes its body while it
//!   is sent).
//! - `tool_call/N`: from `tool_call_started` to `tool_call_finished` as a front end sees
//!   them, for a tool that does no work, with N messages of history. Target: ≤ 1 ms and
//!   independent of N.
//! - `turn/N`: one whole turn with one tool round trip against the loopback fake vendor
//!   (two requests carrying the whole history). Reported, should grow at most linearly.
//! - `restore/10000`: loading a 10,000-event session from SQLite and rebuilding the
//!   conversation. Target: ≤ 100 ms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::fake_provider::{FakeProvider, Reply};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ikigai::agent::budget::Budget;
use ikigai::agent::{AgentHandle, AgentSetup, Resume, Resumed, context};
use ikigai::config::{Config, Secret};
use ikigai::message::{Conversation, Message};
use ikigai::protocol::{Event, Op};
use ikigai::provider::anthropic::Messages;
use ikigai::provider::google::Gemini;
use ikigai::provider::openai::{Chat, OpenAiChat};
use ikigai::provider::responses::Responses;
use ikigai::provider::wire::Wire;
use ikigai::provider::{Request, Spec};
use ikigai::store::{Record, SessionMeta, Sessions};
use ikigai::tools::Registry;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// `n` messages of bash turns: user, call, a 400-byte result, answer.
fn history(n: usize) -> Vec<Message> {
    let out = "x".repeat(400);
    let mut m = Vec::with_capacity(n);
    let mut t = 0;
    while m.len() < n {
        let id = format!("call_{t}");
        m.push(Message::user(format!("turn {t}: run echo")));
        m.push(Message::tool_call(
            &id,
            "bash",
            format!(r#"{{"command":"echo {t}"}}"#),
        ));
        let env = serde_json::json!({"tool_success": true, "result": {"output": format!("{t}\n{out}")}});
        m.push(Message::tool_result(&id, "bash", "exit 0", env.to_string(), true));
        m.push(Message::assistant(format!("Done with turn {t}.")));
        t += 1;
    }
    m.truncate(n);
    m
}

/// Encodes `req` as wire format `W` does when the body is large: a counting pass for
/// its length, then the bytes.
fn encode<W: Wire>(wire: &W, spec: &Spec, req: Request<'_>) -> (u64, Vec<u8>) {
    let body = wire.body(spec, req).unwrap();
    (body.byte_count().unwrap(), body.to_vec().unwrap())
}

fn request_build(c: &mut Criterion) {
    let config = Config::default(); // gpt-5-mini: a 400k window; 10k messages pass 70 %.
    let spec = ikigai::provider::resolve(&config, &|_| None).unwrap().spec;
    build_group(c, "long/request_build", &spec, &Chat);
    build_group(c, "long/request_build_responses", &spec, &Responses);
    build_group(c, "long/request_build_anthropic", &spec, &Messages);
    build_group(c, "long/request_build_google", &spec, &Gemini);
}

fn build_group<W: Wire>(c: &mut Criterion, name: &str, spec: &Spec, wire: &W) {
    let schemas = Registry::builtin().schemas();
    let config = Config::default();
    let mut g = c.benchmark_group(name);
    for n in SIZES {
        let msgs = history(n);
        let mut budget = Budget::from_config(&config, spec, &spec.model);
        budget.set_fixed("You are a test.", &schemas);
        budget.sync(&msgs);
        g.bench_with_input(BenchmarkId::from_parameter(n), &msgs, |b, msgs| {
            b.iter(|| {
                budget.sync(msgs);
                let plan = context::request_plan(&budget, msgs);
                let view = context::wire(msgs, &plan);
                let req = Request {
                    model: "m",
                    system: "You are a test.",
                    messages: &view,
                    tools: &schemas,
                    stop: &[],
                    environment: "",
                    max_output_tokens: None,
                };
                encode(wire, spec, req)
            })
        });
    }
    g.finish();
}

struct Live {
    handle: AgentHandle,
    events: UnboundedReceiver<Event>,
}

fn start(fake: &FakeProvider, n: usize, dir: &std::path::Path) -> Live {
    let config = Config {
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new("k")),
        model: Some("fake-model".into()),
        max_tool_turns: u32::MAX,
        // The whole history goes out with every request: the worst case.
        providers: window_section(100_000_000),
        ..Config::default()
    };
    let (tx, events) = unbounded_channel();
    let resumed = Resumed {
        id: "bench".into(),
        conversation: Conversation { messages: history(n) },
        model: None,
        provider: None,
        repairs: Vec::new(),
        usage: (0, 0),
        spend: Default::default(),
        forked_from: None,
        records: n,
        interrupted: Vec::new(),
        checkpoints: Vec::new(),
        began: String::new(),
    };
    let setup = AgentSetup {
        config: config.clone(),
        provider: Arc::new(OpenAiChat::new(&config).unwrap()),
        registry: Registry::builtin(),
        sessions: None,
        cwd: dir.to_path_buf(),
        system_prompt: "You are a test.".into(),
        environment: String::new(),
        instructions: Vec::new(),
        skills: Default::default(),
        mode: None,
        resumed: Some(resumed),
        follow_tree: true,
    };
    Live {
        handle: ikigai::agent::spawn(setup, tx),
        events,
    }
}

/// One turn with one (no-op) tool call: (started → finished as received, whole turn).
async fn turn(live: &mut Live, fake: &FakeProvider) -> (Duration, Duration) {
    fake.push(Reply::tool_calls(&[("call_x", "no_such_tool", "{}")]));
    fake.push(Reply::text("ok"));
    let t0 = Instant::now();
    live.handle.ops.send(Op::Submit("go".into())).unwrap();
    let mut started = t0;
    let mut tool = Duration::ZERO;
    loop {
        match live.events.recv().await.unwrap() {
            Event::ToolCallStarted { .. } => started = Instant::now(),
            Event::ToolCallFinished { .. } => tool = started.elapsed(),
            Event::TurnEnded { .. } => return (tool, t0.elapsed()),
            _ => {}
        }
    }
}

fn agent(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    for (group, pick) in [("long/tool_call", 0usize), ("long/turn", 1)] {
        let mut g = c.benchmark_group(group);
        g.sample_size(10).measurement_time(Duration::from_secs(6));
        for n in SIZES {
            g.bench_function(BenchmarkId::from_parameter(n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut live = rt.block_on(async { start(&fake, n, dir.path()) });
                    for i in 0..iters {
                        // Keep the history near N: start over every 25 turns (untimed).
                        if i % 25 == 24 {
                            let _ = live.handle.ops.send(Op::Shutdown);
                            live = rt.block_on(async { start(&fake, n, dir.path()) });
                        }
                        let (tool, whole) = rt.block_on(turn(&mut live, &fake));
                        total += if pick == 0 { tool } else { whole };
                    }
                    let _ = live.handle.ops.send(Op::Shutdown);
                    total
                })
            });
        }
        g.finish();
    }
}

fn restore(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        database_url: Some(Secret::new(dir.path().join("s.db").display().to_string())),
        ..Config::default()
    };
    let (tx, _rx) = unbounded_channel();
    let store: Arc<dyn Sessions> = rt.block_on(async { ikigai::store::open(&config, tx) });
    rt.block_on(async {
        store.begin(SessionMeta {
            id: "long".into(),
            cwd: "/bench".into(),
            provider: "openai".into(),
            model: "m".into(),
            parent: None,
        });
        for m in history(10_000) {
            store.record("long", Record::Message(m));
        }
        store.flush().await;
    });
    let mut g = c.benchmark_group("long/restore");
    g.sample_size(10);
    g.bench_function("10000", |b| {
        b.iter(|| {
            rt.block_on(ikigai::agent::resume::load(
                store.as_ref(),
                &Resume::Id("long".into()),
                std::path::Path::new("/bench"),
            ))
            .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, request_build, agent, restore);
criterion_main!(benches);

/// `[providers.openai] context_window = window`.
fn window_section(window: u64) -> std::collections::BTreeMap<String, ikigai::config::ProviderSection> {
    let section = ikigai::config::ProviderSection {
        context_window: Some(window),
        ..Default::default()
    };
    [("openai".to_string(), section)].into()
}
