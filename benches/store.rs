//! The store writer saving a backlog (`make bench`): 10,000 events queued at once (as
//! after an outage, or a burst of tool output) and flushed to a fresh SQLite file,
//! written in batches of one transaction each. Target: ≤ 1 s for the 10k.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::store::{self, Options, Record, SessionMeta};

const EVENTS: usize = 10_000;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("store");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("save_10k_queued_events_sqlite", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().unwrap();
                let config = Config {
                    database_url: Some(Secret::new(dir.path().join("b.db").display().to_string())),
                    ..Default::default()
                };
                let options = Options {
                    spool_dir: Some(dir.path().join("spool")),
                    ..Options::default()
                };
                total += rt.block_on(async {
                    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
                    let s = store::open_with(&config, tx, options);
                    // Connected and migrated before the clock starts.
                    s.list().await.unwrap();
                    let id = "bench-session";
                    let start = Instant::now();
                    s.begin(SessionMeta {
                        id: id.into(),
                        cwd: "/w".into(),
                        provider: "openai".into(),
                        model: "m".into(),
                        parent: None,
                    });
                    for i in 0..EVENTS {
                        let text = format!("message {i}: some ordinary text of a typical length");
                        s.record(id, Record::Message(Message::assistant(text)));
                    }
                    s.flush().await;
                    let took = start.elapsed();
                    let (_, records) = s.load(id).await.unwrap();
                    assert_eq!(records.len(), EVENTS);
                    took
                });
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
