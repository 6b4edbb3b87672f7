//! Agent overhead per tool round trip against the loopback fake vendor (`make bench`).
//! `text_turn` is one request answered with text; `one_tool_round_trip` adds a response
//! with one tool call (to an unknown tool, so no tool time) and the follow-up request.
//! The difference is the whole cost of a round trip: our decode, dispatch, envelope,
//! the next request's encoding and the loopback HTTP exchange. Target: < 1 ms median.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::Duration;

use common::agent::{TestAgent, config_for};
use common::fake_provider::{FakeProvider, Reply};
use criterion::{Criterion, criterion_group, criterion_main};
use ikigai::protocol::Op;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config_for(&fake);
    cfg.max_tool_turns = u32::MAX;
    let mut agent = rt.block_on(async { TestAgent::start(cfg, dir.path()) });
    let text = Reply::text("All done here.");
    let call = Reply::tool_calls(&[("call_1", "no_such_tool", r#"{"path":"."}"#)]);

    let mut g = c.benchmark_group("agent");
    g.measurement_time(Duration::from_secs(8));
    g.bench_function("text_turn", |b| {
        b.iter(|| {
            // A fresh conversation each time, so requests do not grow across iterations.
            agent.send(Op::NewSession);
            fake.push(text.clone());
            rt.block_on(agent.turn("hi"))
        })
    });
    g.bench_function("one_tool_round_trip", |b| {
        b.iter(|| {
            agent.send(Op::NewSession);
            fake.push(call.clone());
            fake.push(text.clone());
            rt.block_on(agent.turn("hi"))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
