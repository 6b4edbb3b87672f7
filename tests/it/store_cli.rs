//! `ikigai sessions` run as the real binary: the default database location, the table,
//! and a clear error (exit 1, password hidden) when the database cannot be reached.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers, not only #[test] fns

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::store::{self, Record, SessionMeta};

fn ikigai(home: &Path, envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ikigai"));
    // Every folder's sessions: the stored ones are not in the folder the test runs in.
    cmd.args(["sessions", "--all"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn first_run_creates_the_default_database_privately() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let out = ikigai(home.path(), &[("XDG_DATA_HOME", data.to_str().unwrap())]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("No sessions yet"),
        "{}",
        text(&out.stdout)
    );
    let db = data.join("ikigai").join("ikigai.db");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(db.parent().unwrap()), 0o700);

    // Without XDG_DATA_HOME: ~/.local/share/ikigai/ikigai.db.
    let out = ikigai(home.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(home.path().join(".local/share/ikigai/ikigai.db").is_file());
}

#[tokio::test]
async fn lists_sessions_newest_first() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("sessions.db");
    let config = Config {
        database_url: Some(Secret::new(db.display().to_string())),
        ..Default::default()
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let s = store::open(&config, tx);
    for (id, cwd, title) in [
        (
            "0193aaaa-0000-7000-8000-000000000001",
            "/srv/old",
            "first question",
        ),
        (
            "0193aaaa-0000-7000-8000-000000000002",
            home.path().to_str().unwrap(),
            "second question",
        ),
    ] {
        s.begin(SessionMeta {
            id: id.into(),
            cwd: cwd.into(),
            provider: "openai".into(),
            model: "gpt-5-mini".into(),
            parent: None,
        });
        s.record(id, Record::Message(Message::user(title)));
        s.record(id, Record::Message(Message::assistant("ok")));
        s.flush().await;
        tokio::time::sleep(std::time::Duration::from_millis(15)).await;
    }
    let out = ikigai(home.path(), &[("IKIGAI_DATABASE_URL", db.to_str().unwrap())]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with("ID") && lines[0].ends_with("TITLE"),
        "{stdout}"
    );
    // The ids differ only in the last character, so the whole id is shown.
    assert!(
        lines[1].starts_with("0193aaaa-0000-7000-8000-000000000002  "),
        "{stdout}"
    );
    assert!(
        lines[1].contains("  ~  ") && lines[1].ends_with("  2  second question"),
        "{stdout}"
    );
    assert!(
        lines[2].contains("/srv/old") && lines[2].ends_with("first question"),
        "{stdout}"
    );
    let title_col = lines[0].find("TITLE").unwrap();
    assert_eq!(lines[1].find("second").unwrap(), title_col, "aligned:\n{stdout}");
    assert_eq!(lines[2].find("first").unwrap(), title_col, "aligned:\n{stdout}");
}

#[test]
fn unreachable_database_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let out = ikigai(
        home.path(),
        &[("IKIGAI_DATABASE_URL", "postgres://me:hunter2@127.0.0.1:1/ikigai")],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("database unavailable") && err.contains("127.0.0.1:1"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    assert!(out.stdout.is_empty());

    // A database_url that cannot work is a configuration error at start (exit 2).
    for (url, says) in [
        ("mysql://u:hunter2@h/db", "unknown scheme"),
        (
            "postgres://u:hunter2@h/db?sslmode=sometimes",
            "sslmode `sometimes`",
        ),
        ("postgres://u:hunter2@[::1/db", "invalid"),
    ] {
        let out = ikigai(home.path(), &[("IKIGAI_DATABASE_URL", url)]);
        assert_eq!(out.status.code(), Some(2), "{url}");
        let err = text(&out.stderr);
        assert!(
            err.contains("invalid setting `database_url`") && err.contains(says),
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
    }
}
