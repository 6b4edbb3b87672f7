//! The store when its database is away: unreachable at start and lost mid-session. The
//! user gets one warning per outage, the session goes on in memory, and the queued
//! events land in order when the database is back (one info notice).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers, not only #[test] fns

use std::time::Duration;

use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::protocol::{Event, NoticeLevel};
use ikigai::store::{self, Options, Record, SessionMeta, StoreError};
use tokio::sync::mpsc;

use crate::common::pg::Cluster;

/// Quick retries; the spool goes to `spool` (never the developer's own state folder).
fn fast_in(spool: &std::path::Path) -> Options {
    Options {
        retry_min: Duration::from_millis(50),
        retry_max: Duration::from_millis(300),
        connect_timeout: Duration::from_secs(2),
        flush_grace: Duration::from_millis(300),
        spool_dir: Some(spool.to_path_buf()),
        ..Options::default()
    }
}

fn config(url: &str) -> Config {
    Config {
        database_url: Some(Secret::new(url)),
        ..Default::default()
    }
}

fn meta(id: &str) -> SessionMeta {
    SessionMeta {
        id: id.into(),
        cwd: "/w".into(),
        provider: "openai".into(),
        model: "m".into(),
        parent: None,
    }
}

fn user(text: &str) -> Record {
    Record::Message(Message::user(text))
}

/// The next notice (fails the test after a minute instead of hanging).
async fn next_notice(rx: &mut mpsc::UnboundedReceiver<Event>) -> (NoticeLevel, String) {
    match tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
        Ok(Some(Event::Notice { level, text })) => (level, text),
        other => panic!("expected a notice, got {other:?}"),
    }
}

/// Waits for the recovery notice; returns how many warnings came before it.
async fn warnings_until_back(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<String> {
    let mut warnings = Vec::new();
    loop {
        match next_notice(rx).await {
            (NoticeLevel::Info, text) => {
                assert!(text.contains("reachable again"), "{text}");
                return warnings;
            }
            (_, text) => warnings.push(text),
        }
    }
}

fn contents(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| match r {
            Record::Message(m) => m.content.clone(),
            Record::Marker { kind, .. } => format!("[{kind}]"),
        })
        .collect()
}

/// SQLite whose folder cannot be created yet (a file is in the way): one warning, the
/// session goes on, and once the obstacle is gone every event lands, in order.
#[tokio::test]
async fn sqlite_unreachable_at_start_then_back() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "in the way").unwrap();
    let path = blocker.join("ikigai.db");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let spool = dir.path().join("spool");
    let store = store::open_with(&config(&path.display().to_string()), tx, fast_in(&spool));
    store.begin(meta("s1"));
    for i in 0..5 {
        store.record("s1", user(&format!("m{i}")));
    }
    let (level, text) = next_notice(&mut rx).await;
    assert_eq!(level, NoticeLevel::Warning);
    assert!(
        text.contains("cannot save the session") && text.contains(&blocker.display().to_string()),
        "{text}"
    );
    // Reads say so; flush does not wait on the dead database: it spools at once.
    match store.list().await {
        Err(StoreError::Unavailable(why)) => assert!(why.contains("blocker"), "{why}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    store.flush().await;
    let (level, text) = next_notice(&mut rx).await;
    assert_eq!(level, NoticeLevel::Warning);
    assert!(
        text.contains("5 events could not be saved") && text.contains("kept in"),
        "{text}"
    );
    let files: Vec<_> = std::fs::read_dir(&spool).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one spool file");
    for i in 5..8 {
        store.record("s1", user(&format!("m{i}")));
    }
    std::fs::remove_file(&blocker).unwrap();
    let more = warnings_until_back(&mut rx).await;
    assert!(more.is_empty(), "{more:?}");
    // The spooled writes come first, then the newer ones; the spool says it was saved.
    let (level, text) = next_notice(&mut rx).await;
    assert_eq!(level, NoticeLevel::Info);
    assert!(
        text.contains("saved 5 events") && text.contains("spool"),
        "{text}"
    );
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0, "spool emptied");
    store.flush().await;
    let (_, records) = store.load("s1").await.unwrap();
    let expected: Vec<String> = (0..8).map(|i| format!("m{i}")).collect();
    assert_eq!(contents(&records), expected);
    assert!(rx.try_recv().is_err(), "no further notices");
}

/// Beyond `max_queued` unsaved events, newer ones are dropped with one warning; the
/// ones kept land when the database is back.
#[tokio::test]
async fn queue_is_bounded_while_down() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "").unwrap();
    let path = blocker.join("ikigai.db");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let options = Options {
        max_queued: 4,
        ..fast_in(dir.path())
    };
    let store = store::open_with(&config(&path.display().to_string()), tx, options);
    store.begin(meta("s1"));
    for i in 0..10 {
        store.record("s1", user(&format!("m{i}")));
    }
    let mut texts = Vec::new();
    while texts.len() < 2 {
        texts.push(next_notice(&mut rx).await.1);
    }
    assert_eq!(
        texts.iter().filter(|t| t.contains("will not be saved")).count(),
        1,
        "{texts:?}"
    );
    std::fs::remove_file(&blocker).unwrap();
    warnings_until_back(&mut rx).await;
    store.flush().await;
    let (_, records) = store.load("s1").await.unwrap();
    assert_eq!(contents(&records), ["m0", "m1", "m2"]);
}

/// PostgreSQL not running at start, then killed mid-session and restarted on the same
/// port: one warning per outage, one info per recovery, every event in order.
#[tokio::test]
async fn postgres_down_at_start_and_mid_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::init();
    let url = cluster.url("postgres");
    let url_with_password = url.replace("postgres@", "postgres:hunter2@");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let store = store::open_with(&config(&url_with_password), tx, fast_in(dir.path()));
    store.begin(meta("p1"));
    store.record("p1", user("before start"));

    // Down at start.
    let (level, text) = next_notice(&mut rx).await;
    assert_eq!(level, NoticeLevel::Warning);
    assert!(text.contains(&format!("127.0.0.1:{}", cluster.port())), "{text}");
    assert!(!text.contains("hunter2"), "password shown: {text}");
    assert!(matches!(store.load("p1").await, Err(StoreError::Unavailable(_))));
    store.record("p1", user("still down"));
    cluster.start();
    let warnings = warnings_until_back(&mut rx).await;
    assert!(warnings.is_empty(), "one warning per outage: {warnings:?}");
    store.record("p1", user("up"));
    store.flush().await;
    let (_, records) = store.load("p1").await.unwrap();
    assert_eq!(contents(&records), ["before start", "still down", "up"]);

    // Down mid-session: the server dies; events keep coming.
    cluster.stop();
    store.record("p1", user("during outage 1"));
    let (level, text) = next_notice(&mut rx).await;
    assert_eq!(level, NoticeLevel::Warning);
    assert!(text.contains("cannot save the session"), "{text}");
    for i in 2..=6 {
        store.record("p1", user(&format!("during outage {i}")));
    }
    store.record(
        "p1",
        Record::Marker {
            kind: "interrupted".into(),
            data: serde_json::json!({}),
        },
    );
    cluster.start();
    let warnings = warnings_until_back(&mut rx).await;
    assert!(warnings.is_empty(), "one warning per outage: {warnings:?}");
    store.record("p1", user("after"));
    store.flush().await;
    let (_, records) = store.load("p1").await.unwrap();
    let mut expected: Vec<String> = ["before start", "still down", "up"].map(String::from).to_vec();
    expected.extend((1..=6).map(|i| format!("during outage {i}")));
    expected.push("[interrupted]".into());
    expected.push("after".into());
    assert_eq!(contents(&records), expected);
    assert!(rx.try_recv().is_err(), "no further notices");
}
