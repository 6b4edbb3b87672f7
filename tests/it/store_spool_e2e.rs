//! Nothing is lost when the database goes away, with the real binary: PostgreSQL killed
//! mid-session and not back at exit (the run spools; the next start replays it, in order,
//! once), PostgreSQL unreachable from the start (spooled at once), and the SQLite file
//! deleted mid-session (noticed at the next write, recreated with the whole session).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::history;
use crate::common::pg::Cluster;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

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

fn spool_dir(home: &Path) -> PathBuf {
    home.join(".local/state/ikigai/spool")
}

fn spool_files(home: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(spool_dir(home)) {
        Ok(d) => d.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Waits until the stored session holds a tool call.
fn wait_for_stored_call(url: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !history::try_sessions(url)
        .unwrap_or_default()
        .iter()
        .any(|s| s.events.iter().any(|e| e.kind == "tool_call"))
    {
        assert!(Instant::now() < deadline, "the tool call was never stored");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const WAIT_TOOL: &str =
    r#"{"command":"touch started; while [ ! -f go ]; do sleep 0.05; done; echo tool finished"}"#;

fn wait_for_file(p: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !p.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn postgres_killed_mid_session_spools_and_the_next_start_replays_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut cluster = Cluster::init();
    cluster.start();
    let url = rt.block_on(cluster.database("spool"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", "bash", WAIT_TOOL)]));
    let a = ikigai(h, &fake, Some(&url))
        .args(["-p", "remember this"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&h.join("started"));
    wait_for_stored_call(&url);

    cluster.stop();
    fake.push(Reply::text("all done"));
    std::fs::write(h.join("go"), "").unwrap();
    let out = a.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text(&out.stdout).ends_with("all done\n"), "{}", text(&out.stdout));
    assert!(
        err.contains("could not be saved") && err.contains("kept in"),
        "{err}"
    );
    let files = spool_files(h);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&spool_dir(h)), 0o700);
    let spooled = std::fs::read(&files[0]).unwrap();

    // The next start of any kind, with the database back, replays it and says so.
    cluster.start();
    let out = ikigai(h, &fake, Some(&url)).arg("sessions").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("saved") && err.contains("spool"), "{err}");
    assert!(spool_files(h).is_empty(), "{:?}", spool_files(h));
    let sessions = history::sessions(&url);
    assert_eq!(sessions.len(), 1);
    let expected = sessions[0].messages();
    assert_eq!(expected.len(), 4, "{expected:?}");
    assert_eq!(expected[0], "user:remember this");
    assert!(expected[1].starts_with("tool_call:"), "{expected:?}");
    assert!(expected[2].starts_with("tool_result:"), "{expected:?}");
    assert_eq!(expected[3], "assistant:all done");
    assert!(history::violations(&sessions[0]).is_empty());
    let result = sessions[0]
        .events
        .iter()
        .find(|e| e.kind == "tool_result")
        .unwrap();
    assert!(result.data["output"].as_str().unwrap().contains("tool finished"));

    // Replaying the same file again changes nothing (idempotent by event id).
    std::fs::write(spool_dir(h).join("0000000000001-1-again.jsonl"), &spooled).unwrap();
    let out = ikigai(h, &fake, Some(&url)).arg("sessions").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(spool_files(h).is_empty());
    assert_eq!(history::sessions(&url)[0].messages(), expected);

    fake.push(Reply::text("continued"));
    let out = ikigai(h, &fake, Some(&url))
        .args(["-c", "-p", "and?"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn unreachable_postgres_spools_at_exit_without_waiting() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    fake.push(Reply::text("hello"));
    // A data folder left world-readable by an older ikigai is made private.
    let data = h.join(".local/share/ikigai");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let url = "postgres://me:hunter2@127.0.0.1:1/ikigai";
    let out = ikigai(h, &fake, Some(url)).args(["-p", "hi"]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "hello\n");
    assert!(err.contains("kept in"), "{err}");
    assert!(!err.contains("not saved yet"), "no grace wait: {err}");
    assert!(!err.contains("hunter2"), "{err}");
    let files = spool_files(h);
    assert_eq!(files.len(), 1, "{files:?}");
    let body = std::fs::read_to_string(&files[0]).unwrap();
    assert!(body.contains("\"hi\"") && body.contains("\"hello\""), "{body}");
    assert!(
        !body.contains("hunter2"),
        "the spool names the database without its password"
    );
    // The data folder is private even though SQLite is not used.
    assert_eq!(mode(&data), 0o700);
}

#[test]
fn sqlite_file_deleted_mid_session_is_recreated_with_the_whole_session() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let db = h.join(".local/share/ikigai/ikigai.db");
    let url = format!("sqlite://{}", db.display());
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", "bash", WAIT_TOOL)]));
    let a = ikigai(h, &fake, None)
        .args(["-p", "keep everything"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&h.join("started"));
    wait_for_stored_call(&url);

    std::fs::remove_file(&db).unwrap();
    fake.push(Reply::text("still here"));
    std::fs::write(h.join("go"), "").unwrap();
    let out = a.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("deleted or replaced") && err.contains("created again"),
        "{err}"
    );
    assert!(db.is_file());
    assert_eq!(mode(&db), 0o600);
    let sessions = history::sessions(&url);
    assert_eq!(sessions.len(), 1);
    let m = sessions[0].messages();
    assert_eq!(m.len(), 4, "{m:?}");
    assert_eq!(m[0], "user:keep everything");
    assert_eq!(m[3], "assistant:still here");
    assert!(history::violations(&sessions[0]).is_empty());

    fake.push(Reply::text("continued"));
    let out = ikigai(h, &fake, None)
        .args(["-c", "-p", "and?"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let req = fake.requests().pop().unwrap();
    assert_eq!(req.messages().len(), 1 + 4 + 1, "the whole history was kept");
}
