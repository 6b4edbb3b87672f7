//! One session, one writer, with the real binary: a second process that continues a
//! session another live process holds forks it instead of writing into it (the A/B
//! race), and 16 processes continuing one session at once leave only valid histories,
//! each of which resumes. Store-level: the hold itself on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::history::{self, Session};
use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::store::{self, Record, SessionMeta, Target};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The binary in `home`, against `fake`, storing in `db` (None: the default SQLite file).
fn ikigai(home: &Path, fake: &FakeProvider, db: Option<&str>) -> Command {
    let mut c = common::ikigai(home);
    c.args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null());
    if let Some(url) = db {
        c.env("IKIGAI_DATABASE_URL", url);
    }
    c
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn wait_for_file(p: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !p.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sqlite_url(home: &Path) -> String {
    format!(
        "sqlite://{}",
        home.join(".local/share/ikigai/ikigai.db").display()
    )
}

/// Every stored session is valid, and `--resume` of each one succeeds.
fn all_valid_and_resumable(home: &Path, fake: &FakeProvider, db: Option<&str>, url: &str) -> Vec<Session> {
    let sessions = history::sessions(url);
    for s in &sessions {
        let bad = history::violations(s);
        assert!(bad.is_empty(), "session {}: {bad:?}\n{:#?}", s.id, s.messages());
    }
    for s in &sessions {
        fake.push(Reply::text("resumed fine"));
        let out = ikigai(home, fake, db)
            .args(["--resume", &s.id, "-p", "still valid?"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "resume {}: {}",
            s.id,
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "resumed fine\n");
    }
    sessions
}

/// A runs `-p` with a tool call that waits; while it waits, B runs `-c` in the same
/// folder. B forks (and says so); A's events stay whole and in order in A's session.
fn a_b_race(db: Option<&str>, url: &dyn Fn(&Path) -> String) {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Waiting.",
        &[(
            "call_wait",
            "bash",
            r#"{"command":"touch started; while [ ! -f go ]; do sleep 0.05; done; echo finished"}"#,
        )],
    ));
    let a = spawn(ikigai(h, &fake, db).args(["-p", "task A"]));
    wait_for_file(&h.join("started"));
    // A's writer saves in the background: wait until its call is stored.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !history::try_sessions(&url(h))
        .unwrap_or_default()
        .iter()
        .any(|s| s.events.iter().any(|e| e.kind == "tool_call"))
    {
        assert!(Instant::now() < deadline, "A's tool call was never stored");
        std::thread::sleep(Duration::from_millis(20));
    }

    fake.push(Reply::text("B answer"));
    let b = ikigai(h, &fake, db)
        .args(["-c", "-p", "task B"])
        .output()
        .unwrap();
    assert_eq!(b.status.code(), Some(0), "{}", text(&b.stderr));
    assert_eq!(text(&b.stdout), "B answer\n");
    let b_err = text(&b.stderr);
    assert!(
        b_err.contains("in use by another ikigai process") && b_err.contains("forked"),
        "{b_err}"
    );
    // B's request carried a valid history: A's open call answered as interrupted.
    let req = fake.requests().pop().unwrap();
    let roles: Vec<&str> = req
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);

    std::fs::write(h.join("go"), "").unwrap();
    fake.push(Reply::text("A done"));
    let a: Output = a.wait_with_output().unwrap();
    assert_eq!(a.status.code(), Some(0), "{}", text(&a.stderr));
    assert!(text(&a.stdout).ends_with("A done\n"), "{}", text(&a.stdout));

    let sessions = history::sessions(&url(h));
    assert_eq!(sessions.len(), 2, "{sessions:#?}");
    let orig = sessions.iter().find(|s| s.forked_from.is_none()).unwrap();
    let fork = sessions.iter().find(|s| s.forked_from.is_some()).unwrap();
    assert_eq!(fork.forked_from.as_deref(), Some(orig.id.as_str()));
    assert_eq!(
        orig.messages(),
        [
            "user:task A",
            "assistant:Waiting.",
            &orig.messages()[2], // the call's summary
            &orig.messages()[3], // its real result
            "assistant:A done",
        ]
    );
    let result = orig.events.iter().find(|e| e.kind == "tool_result").unwrap();
    assert_eq!(
        result.data["success"], true,
        "A's real result, not a repair: {result:?}"
    );
    assert!(result.data["output"].as_str().unwrap().contains("finished"));
    let fork_msgs = fork.messages();
    assert_eq!(fork_msgs[0], "user:task A");
    assert!(fork_msgs[3].starts_with("tool_result:"), "{fork_msgs:?}");
    let repair = fork.events.iter().find(|e| e.kind == "tool_result").unwrap();
    assert_eq!(repair.data["success"], false, "the copy is repaired in the fork");
    assert_eq!(&fork_msgs[4..], ["user:task B", "assistant:B answer"]);

    all_valid_and_resumable(h, &fake, db, &url(h));
}

#[test]
fn a_b_race_forks_on_sqlite() {
    a_b_race(None, &sqlite_url);
}

#[test]
fn a_b_race_forks_on_postgres() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = rt.block_on(common::pg::shared().database("abrace"));
    a_b_race(Some(&url), &|_| url.clone());
}

/// 16 processes run `-c` on one session at the same moment: whoever gets it holds it,
/// the others fork; no session ends up with interleaved events.
fn sixteen_at_once(db: Option<&str>, url: &dyn Fn(&Path) -> String) {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    fake.push(Reply::text("started"));
    let out = ikigai(h, &fake, db).args(["-p", "start"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    for _ in 0..16 {
        fake.push(Reply::text("ok"));
    }
    let children: Vec<Child> = (0..16)
        .map(|i| spawn(ikigai(h, &fake, db).args(["-c", "-p", &format!("turn {i}")])))
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "ok\n");
    }
    let sessions = all_valid_and_resumable(h, &fake, db, &url(h));
    let forks = sessions.iter().filter(|s| s.forked_from.is_some()).count();
    eprintln!(
        "16 concurrent -c: {} sessions, {forks} of them forks",
        sessions.len()
    );
    // Every turn is stored exactly once as its own (user, answer) pair somewhere.
    for i in 0..16 {
        let turn = format!("user:turn {i}");
        let owners: Vec<&Session> = sessions
            .iter()
            .filter(|s| {
                let m = s.messages();
                m.iter()
                    .enumerate()
                    .any(|(k, x)| *x == turn && m.get(k + 1).map(String::as_str) == Some("assistant:ok"))
            })
            .collect();
        assert!(!owners.is_empty(), "turn {i} answered nowhere");
    }
}

#[test]
fn sixteen_continue_at_once_on_sqlite() {
    sixteen_at_once(None, &sqlite_url);
}

#[test]
fn sixteen_continue_at_once_on_postgres() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = rt.block_on(common::pg::shared().database("sixteen"));
    sixteen_at_once(Some(&url), &|_| url.clone());
}

/// Store level: a session held by one store is forked by another; once the holder is
/// gone, the next claim holds it. Deleting a held session is refused.
async fn hold_then_fork(url: &str) {
    let config = Config {
        database_url: Some(Secret::new(url)),
        ..Default::default()
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let a = store::open(&config, tx.clone());
    let id = "0193bbbb-0000-7000-8000-00000000000a";
    a.begin(SessionMeta {
        id: id.into(),
        cwd: "/w".into(),
        provider: "openai".into(),
        model: "m".into(),
        parent: None,
    });
    a.record(id, Record::Message(Message::user("hello")));
    a.record(id, Record::Message(Message::tool_call("c1", "bash", "{}")));
    let _ = a.list().await.unwrap(); // written (and held) by now

    let b = store::open(&config, tx.clone());
    let claimed = b.claim(Target::Id(id)).await.unwrap();
    assert_eq!(claimed.forked_from.as_deref(), Some(id));
    assert_ne!(claimed.info.id, id);
    assert_eq!(claimed.info.forked_from.as_deref(), Some(id));
    assert_eq!(claimed.records, 2, "the fork is a copy");
    // Its conversation is rebuilt from the copy: the orphan call gets its repair.
    let msgs = &claimed.restored.conversation.messages;
    assert_eq!(msgs[0], Message::user("hello"));
    assert_eq!(msgs[1].as_tool_call().unwrap().id, "c1");
    assert_eq!(claimed.restored.repairs.len(), 1);
    match b.delete(id).await {
        Err(ikigai::store::StoreError::Held(h)) => assert_eq!(h, id),
        other => panic!("expected Held, got {other:?}"),
    }
    // The original is untouched by the fork.
    let (_, records) = b.load(id).await.unwrap();
    assert_eq!(records.len(), 2);

    drop(a);
    // The holder's writer lets go once its last handle is gone; wait until it has.
    let c = store::open(&config, tx);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = c.claim(Target::Id(id)).await.unwrap();
        if got.forked_from.is_none() {
            assert_eq!(got.info.id, id);
            break;
        }
        assert!(Instant::now() < deadline, "the hold was never released");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hold_then_fork_postgres() {
    let url = common::pg::shared().database("hold").await;
    hold_then_fork(&url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hold_then_fork_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    hold_then_fork(&format!("sqlite://{}", dir.path().join("s.db").display())).await;
}
