//! The session store against real SQLite files and a real PostgreSQL server: one story
//! test for both, two concurrent writers on one session, a schema newer than the binary,
//! and the API key never reaching the database.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers, not only #[test] fns

use std::sync::Arc;
use std::time::Duration;

use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::protocol::{Event, NoticeLevel};
use ikigai::store::{self, Record, SessionMeta, Sessions, StoreError};
use ikigai::tools::envelope::INTERRUPTED_TOOL_ERROR;
use serde_json::json;
use sqlx::{Connection, Row};
use tokio::sync::mpsc;

use crate::common::pg;

const API_KEY: &str = "sk-test-DO-NOT-STORE-4f1c";

/// A database under test and how to look at it directly.
enum Db {
    Sqlite {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
    },
    Postgres(String),
}

impl Db {
    fn sqlite() -> Db {
        let dir = tempfile::tempdir().unwrap();
        // A folder that does not exist yet: the store creates it.
        let path = dir.path().join("nested").join("deeper").join("ikigai.db");
        Db::Sqlite { _dir: dir, path }
    }

    async fn postgres(hint: &str) -> Db {
        Db::Postgres(pg::shared().database(hint).await)
    }

    fn url(&self) -> String {
        match self {
            Db::Sqlite { path, .. } => format!("sqlite://{}", path.display()),
            Db::Postgres(url) => url.clone(),
        }
    }

    fn config(&self) -> Config {
        Config {
            database_url: Some(Secret::new(self.url())),
            api_key: Some(Secret::new(API_KEY)),
            ..Default::default()
        }
    }

    fn open(&self) -> (Arc<dyn Sessions>, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (store::open(&self.config(), tx), rx)
    }

    /// Runs one statement and returns the first column of every row as text.
    async fn column(&self, sql: &str) -> Vec<String> {
        match self {
            Db::Sqlite { path, .. } => {
                let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                    .await
                    .unwrap();
                let rows = sqlx::query(sql).fetch_all(&mut c).await.unwrap();
                rows.iter()
                    .map(|r| r.try_get::<Option<String>, _>(0).unwrap().unwrap_or_default())
                    .collect()
            }
            Db::Postgres(url) => {
                let mut c = sqlx::PgConnection::connect(url).await.unwrap();
                let rows = sqlx::query(sql).fetch_all(&mut c).await.unwrap();
                rows.iter()
                    .map(|r| r.try_get::<Option<String>, _>(0).unwrap().unwrap_or_default())
                    .collect()
            }
        }
    }

    async fn execute(&self, sql: &str) {
        match self {
            Db::Sqlite { path, .. } => {
                let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                    .await
                    .unwrap();
                sqlx::query(sql).execute(&mut c).await.unwrap();
            }
            Db::Postgres(url) => {
                let mut c = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query(sql).execute(&mut c).await.unwrap();
            }
        }
    }

    fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres(_))
    }
}

fn meta(id: &str, cwd: &str, model: &str) -> SessionMeta {
    SessionMeta {
        id: id.into(),
        cwd: cwd.into(),
        provider: "openai".into(),
        model: model.into(),
        parent: None,
    }
}

fn marker(kind: &str, data: serde_json::Value) -> Record {
    Record::Marker {
        kind: kind.into(),
        data,
    }
}

/// A short pause so the next records get a later millisecond timestamp than the last.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(15)).await;
}

const A: &str = "0193aaaa-1111-7000-8000-00000000000a";
const B: &str = "0193aaaa-2222-7000-8000-00000000000b";
const C: &str = "0193bbbb-3333-7000-8000-00000000000c";

/// Create, append every kind, interrupt, repair, list, resume — the same on both backends.
async fn story(db: &Db) {
    let (store, mut notices) = db.open();
    assert!(store.list().await.unwrap().is_empty());
    assert!(store.latest_in("/work/a").await.unwrap().is_none());

    // Session A: every message kind and every marker, then a tool call cut off by a crash.
    store.begin(meta(A, "/work/a", "m1"));
    // A NUL inside the envelope is JSON-escaped; one in plain text is a real U+0000.
    let nul = "bytes\0after a NUL";
    let a_records = vec![
        marker("model", json!({"model": "m1"})),
        Record::Message(Message::system("You are ikigai.")),
        Record::Message(Message::user("\n  Fix the parser  \nit breaks on tabs")),
        Record::Message(Message::assistant("Looking at it.")),
        Record::Message(Message::tool_call(
            "c1",
            "grep",
            r#"{"pattern":"\\t","path":"src"}"#,
        )),
        Record::Message(Message::tool_result(
            "c1",
            "grep",
            "1 match",
            json!({"tool_success": true, "result": {"output": nul, "count": 1}}).to_string(),
            true,
        )),
        marker("usage", json!({"input": 1200, "output": 80})),
        Record::Message(Message::assistant("Partial answ\0")),
        marker("interrupted", json!({})),
        marker("model", json!({"model": "m2", "provider": "anthropic"})),
        Record::Message(Message::user("try again")),
        Record::Message(Message::tool_call("c2", "bash", r#"{"command":"cargo test"}"#)),
    ];
    for r in &a_records {
        store.record(A, r.clone());
    }
    store.flush().await;
    tick().await;

    // Session B in the same folder, with a `new` divider; C elsewhere.
    store.begin(meta(B, "/work/a", "m1"));
    for r in [
        Record::Message(Message::user("old topic")),
        Record::Message(Message::assistant("old answer")),
        marker("new", json!({})),
        Record::Message(Message::user("new topic")),
    ] {
        store.record(B, r);
    }
    store.flush().await;
    tick().await;
    store.begin(meta(C, "/work/c", "m3"));
    store.record(C, Record::Message(Message::user("hello from c")));
    store.flush().await;
    tick().await;

    // Resume A by a unique prefix: exactly what was recorded, in order.
    let (info, records) = store.load("0193aaaa-1").await.unwrap();
    assert_eq!(info.id, A);
    let mut expected = a_records.clone();
    if db.is_postgres() {
        // PostgreSQL text cannot hold U+0000; it comes back as U+FFFD.
        expected[7] = Record::Message(Message::assistant("Partial answ\u{FFFD}"));
    }
    assert_eq!(records, expected);

    // Rebuild repairs the cut-off call; the caller stores the repair.
    let restored = store::rebuild(&records);
    assert_eq!(restored.model.as_deref(), Some("m2"));
    assert_eq!(restored.provider.as_deref(), Some("anthropic"));
    assert_eq!(restored.usage, (1200, 80));
    assert_eq!(restored.repairs.len(), 1);
    let repair = restored.repairs[0].as_tool_result().unwrap();
    assert_eq!((repair.tool_call_id.as_str(), repair.success), ("c2", false));
    assert_eq!(restored.repairs[0].content, INTERRUPTED_TOOL_ERROR);
    assert_eq!(restored.conversation.len(), 9);
    for m in &restored.repairs {
        store.record(A, Record::Message(m.clone()));
    }
    store.flush().await;

    // A resume from another process (a second handle) sees the repaired session.
    let (other, _n) = db.open();
    let (_, again) = other.load(A).await.unwrap();
    let again = store::rebuild(&again);
    assert!(again.repairs.is_empty());
    assert_eq!(again.conversation, restored.conversation);

    // B: only what follows the `new` marker is the conversation.
    let (_, b) = other.load(B).await.unwrap();
    assert_eq!(
        store::rebuild(&b).conversation.messages,
        vec![Message::user("new topic")]
    );

    // List: newest activity first, with title, model and message count.
    let list = other.list().await.unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [A, C, B]);
    let a = &list[0];
    assert_eq!(a.title.as_deref(), Some("Fix the parser"));
    assert_eq!(a.model, "m2", "the last model marker wins");
    assert_eq!(a.cwd, "/work/a");
    assert_eq!(a.provider, "anthropic", "a switch names the provider too");
    assert_eq!(
        a.messages, 9,
        "messages, not markers, are counted (repair included)"
    );
    assert!(a.updated_at > a.created_at, "{a:?}");
    assert_eq!(list[2].title.as_deref(), Some("old topic"));
    assert_eq!(list[2].messages, 3);
    for s in &list {
        chrono::DateTime::parse_from_rfc3339(&s.created_at).unwrap();
        chrono::DateTime::parse_from_rfc3339(&s.updated_at).unwrap();
    }

    // --continue: the newest session of a folder.
    assert_eq!(other.latest_in("/work/a").await.unwrap().unwrap().id, A);
    assert_eq!(other.latest_in("/work/c").await.unwrap().unwrap().id, C);
    assert!(other.latest_in("/work").await.unwrap().is_none());

    // Prefixes: ambiguous, unknown, empty, and LIKE wildcards taken literally.
    match other.load("0193aaaa").await {
        Err(StoreError::Ambiguous { prefix, count }) => assert_eq!((prefix.as_str(), count), ("0193aaaa", 2)),
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    let e = other.load("0193aaaa").await.unwrap_err().to_string();
    assert!(e.contains("0193aaaa") && e.contains("2 sessions"), "{e}");
    assert!(matches!(other.load("ffff").await, Err(StoreError::NotFound(_))));
    assert!(matches!(other.load("  ").await, Err(StoreError::NotFound(_))));
    assert!(matches!(other.load("0193%").await, Err(StoreError::NotFound(_))));
    assert!(matches!(
        other.load("0193aaaa_1").await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(other.load(&format!(" {C} ")).await.unwrap().0.id, C);

    // Continuing a resumed session from the second handle appends after the repair.
    other.begin(meta(A, "/work/a", "m2"));
    other.record(A, Record::Message(Message::user("and now?")));
    other.flush().await;
    let (_, records) = store.load(A).await.unwrap();
    assert_eq!(records.len(), a_records.len() + 2);
    assert_eq!(records.last(), Some(&Record::Message(Message::user("and now?"))));
    let seqs = db
        .column(&format!(
            "SELECT CAST(seq AS TEXT) FROM events WHERE session_id = '{A}' ORDER BY events.seq"
        ))
        .await;
    let expected: Vec<String> = (1..=records.len()).map(|i| i.to_string()).collect();
    assert_eq!(seqs, expected);

    // Nothing went wrong, so nobody was warned.
    assert!(notices.try_recv().is_err());

    // The API key given in config is nowhere in the database.
    for sql in [
        "SELECT content FROM events",
        "SELECT CAST(data AS TEXT) FROM events",
        "SELECT id || cwd || provider || model || coalesce(title, '') FROM sessions",
    ] {
        for text in db.column(sql).await {
            assert!(!text.contains(API_KEY), "{sql}: {text}");
        }
    }
    if let Db::Sqlite { path, .. } = db {
        for suffix in ["", "-wal", "-shm"] {
            let file = format!("{}{suffix}", path.display());
            if let Ok(bytes) = std::fs::read(&file) {
                assert!(
                    !bytes.windows(API_KEY.len()).any(|w| w == API_KEY.as_bytes()),
                    "{file}"
                );
            }
        }
    }
}

#[tokio::test]
async fn story_sqlite() {
    let db = Db::sqlite();
    story(&db).await;
    let Db::Sqlite { path, .. } = &db else {
        unreachable!()
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the database file is private");
    assert_eq!(db.column("PRAGMA journal_mode").await, ["wal"]);
}

#[tokio::test]
async fn story_postgres() {
    let db = Db::postgres("story").await;
    story(&db).await;
    assert_eq!(db.column("SELECT data_type FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'data'").await, ["jsonb"]);
}

/// Two handles (as two ikigai processes resuming one session) append at once: no event
/// is lost, positions are contiguous, and each writer's events keep their order.
async fn two_writers(db: &Db) {
    const N: usize = 60;
    let (one, _n1) = db.open();
    let (two, _n2) = db.open();
    let id = "0193cccc-0000-7000-8000-000000000001";
    one.begin(meta(id, "/w", "m"));
    one.flush().await;
    two.begin(meta(id, "/w", "m"));
    let write = |s: Arc<dyn Sessions>, who: &'static str| {
        tokio::spawn(async move {
            for i in 0..N {
                s.record(id, Record::Message(Message::user(format!("{who} {i}"))));
                if i % 7 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            s.flush().await;
        })
    };
    let (a, b) = (write(one.clone(), "one"), write(two.clone(), "two"));
    a.await.unwrap();
    b.await.unwrap();
    let (_, records) = one.load(id).await.unwrap();
    assert_eq!(records.len(), 2 * N);
    for who in ["one", "two"] {
        let mine: Vec<String> = records
            .iter()
            .filter_map(|r| match r {
                Record::Message(m) if m.content.starts_with(who) => Some(m.content.clone()),
                _ => None,
            })
            .collect();
        let expected: Vec<String> = (0..N).map(|i| format!("{who} {i}")).collect();
        assert_eq!(mine, expected, "{who}'s events in its own order");
    }
    let seqs = db
        .column(&format!(
            "SELECT CAST(seq AS TEXT) FROM events WHERE session_id = '{id}' ORDER BY events.seq"
        ))
        .await;
    let expected: Vec<String> = (1..=2 * N).map(|i| i.to_string()).collect();
    assert_eq!(seqs, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_sqlite() {
    two_writers(&Db::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_postgres() {
    two_writers(&Db::postgres("writers").await).await;
}

/// A database migrated by a newer ikigai is refused, clearly, and left untouched.
async fn too_new(db: &Db) {
    let (store, _n) = db.open();
    store.begin(meta(A, "/w", "m"));
    store.record(A, Record::Message(Message::user("keep me")));
    store.flush().await;
    assert_eq!(store.list().await.unwrap().len(), 1);
    let blob = if db.is_postgres() {
        "'\\x00'::bytea"
    } else {
        "x'00'"
    };
    db.execute(&format!(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (20991231000000, 'from the future', true, {blob}, 0)"
    ))
    .await;

    let (newer, mut notices) = db.open();
    match newer.list().await {
        Err(StoreError::TooNew { found, known }) => {
            assert_eq!(found, 20991231000000);
            assert_eq!(known, 3);
        }
        other => panic!("expected TooNew, got {other:?}"),
    }
    let text = newer.load(A).await.unwrap_err().to_string();
    assert!(
        text.contains("newer ikigai") && text.contains("upgrade"),
        "{text}"
    );
    match notices.recv().await {
        Some(Event::Notice {
            level: NoticeLevel::Warning,
            text,
        }) => assert!(
            text.contains("will not be saved") && text.contains("newer ikigai"),
            "{text}"
        ),
        other => panic!("expected one warning, got {other:?}"),
    }
    // Records go nowhere; flush does not hang; the old data is intact.
    newer.record(A, Record::Message(Message::user("lost")));
    newer.flush().await;
    assert_eq!(
        db.column(&format!("SELECT content FROM events WHERE session_id = '{A}'"))
            .await,
        ["keep me"]
    );
    assert_eq!(
        db.column("SELECT CAST(max(version) AS TEXT) FROM _sqlx_migrations")
            .await,
        ["20991231000000"]
    );
}

#[tokio::test]
async fn too_new_sqlite() {
    too_new(&Db::sqlite()).await;
}

#[tokio::test]
async fn too_new_postgres() {
    too_new(&Db::postgres("toonew").await).await;
}

/// A database an older ikigai made (schema 2: sessions without a parent) opens: it is
/// migrated without loss, its sessions keep their events and have no parent, and a
/// sub-agent's session is then stored as its parent's child, never the folder's latest.
async fn old_schema(db: &Db) {
    let kind = if db.is_postgres() { "postgres" } else { "sqlite" };
    let old = tempfile::tempdir().unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(kind);
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name();
        let n = name.to_string_lossy().to_string();
        if n.starts_with("0001") || n.starts_with("0002") {
            std::fs::copy(dir.join(&name), old.path().join(&name)).unwrap();
        }
    }
    let migrator = sqlx::migrate::Migrator::new(old.path()).await.unwrap();
    assert_eq!(migrator.iter().count(), 2);
    match db {
        Db::Sqlite { path, .. } => {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let opts = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true);
            let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
            migrator.run(&mut c).await.unwrap();
        }
        Db::Postgres(url) => {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            migrator.run(&mut c).await.unwrap();
        }
    }
    let at = "2026-01-02T03:04:05.000Z";
    db.execute(&format!(
        "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, title) \
         VALUES ('{A}', '{at}', '{at}', '/w', 'openai', 'm', 'old words')"
    ))
    .await;
    db.execute(&format!(
        "INSERT INTO events (id, session_id, seq, kind, content, created_at) \
         VALUES ('e1', '{A}', 1, 'user', 'old words', '{at}')"
    ))
    .await;

    let (store, _n) = db.open();
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].parent.as_deref(), listed[0].messages), (None, 1));
    let (_, records) = store.load(A).await.unwrap();
    assert_eq!(records, [Record::Message(Message::user("old words"))]);
    store.begin(SessionMeta {
        parent: Some(store::Parent {
            session: A.into(),
            call: "call_7".into(),
        }),
        ..meta(B, "/w", "m")
    });
    store.record(B, Record::Message(Message::user("sub-agent task")));
    store.flush().await;
    let listed = store.list().await.unwrap();
    let child = listed.iter().find(|s| s.id == B).unwrap();
    assert_eq!(child.parent.as_deref(), Some(A));
    assert_eq!(child.parent_call.as_deref(), Some("call_7"));
    // Newer, but a sub-agent's: `--continue` takes the parent.
    assert_eq!(store.latest_in("/w").await.unwrap().unwrap().id, A);
    assert_eq!(
        db.column("SELECT CAST(max(version) AS TEXT) FROM _sqlx_migrations")
            .await,
        ["3"]
    );
}

#[tokio::test]
async fn old_schema_sqlite() {
    old_schema(&Db::sqlite()).await;
}

#[tokio::test]
async fn old_schema_postgres() {
    old_schema(&Db::postgres("oldschema").await).await;
}

/// Records the database refuses (their session was never begun) are reported once and
/// skipped; the events after it are written.
#[tokio::test]
async fn refused_record_is_reported_and_skipped() {
    let db = Db::sqlite();
    let (store, mut notices) = db.open();
    store.record("never-begun", Record::Message(Message::user("orphan")));
    store.record("never-begun", Record::Message(Message::user("orphan 2")));
    store.begin(meta(C, "/w", "m"));
    store.record(C, Record::Message(Message::user("fine")));
    store.flush().await;
    match notices.try_recv() {
        Ok(Event::Notice {
            level: NoticeLevel::Warning,
            text,
        }) => assert!(text.contains("could not be saved"), "{text}"),
        other => panic!("expected a warning, got {other:?}"),
    }
    assert!(
        notices.try_recv().is_err(),
        "one warning, not one per refused event"
    );
    let (_, records) = store.load(C).await.unwrap();
    assert_eq!(records, [Record::Message(Message::user("fine"))]);
    assert!(matches!(store.load("never").await, Err(StoreError::NotFound(_))));
}

/// A file that is not a database is a clear, final error, and it is not overwritten.
#[tokio::test]
async fn not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    let text = "this is not a database, it is my notes\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    let config = Config {
        database_url: Some(Secret::new(path.display().to_string())),
        ..Default::default()
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    let store = store::open(&config, tx);
    let e = store.list().await.unwrap_err();
    assert!(matches!(e, StoreError::Other(_)), "{e:?}");
    assert!(e.to_string().contains("not a database"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

/// Another process holds SQLite's write lock past the busy timeout while this one
/// writes: the write fails for a moment and the writer retries. A read queued behind
/// that write waits for the retry instead of answering "database is locked" (seen once
/// under load in `two_writers_sqlite`), and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_behind_a_write_that_met_a_lock_waits_for_the_retry() {
    let db = Db::sqlite();
    let (store, _n) = db.open();
    store.begin(meta(A, "/w", "m"));
    store.record(A, Record::Message(Message::user("before")));
    store.flush().await;
    let Db::Sqlite { path, .. } = &db else {
        panic!("an SQLite database has a file")
    };
    let mut other = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.unwrap();
    store.record(A, Record::Message(Message::user("during")));
    // Held past the store's busy timeout (5 s), then let go.
    let holder = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(5_600)).await;
        sqlx::query("COMMIT").execute(&mut other).await.unwrap();
        other
    });
    let (_, records) = store.load(A).await.expect("the read waits for the retried write");
    let texts: Vec<String> = records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["before", "during"]);
    drop(holder.await.unwrap());
}
