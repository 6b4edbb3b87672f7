//! The session subcommands as the real binary: `ikigai sessions --json`, `sessions rm`
//! (refused while another process holds the session), `export` as a Markdown transcript
//! or raw JSON lines, and titles cut to the terminal's width.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ikigai(home: &Path, fake: &FakeProvider) -> Command {
    let mut c = common::ikigai(home);
    c.args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null());
    c
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

/// One finished `-p` turn with a bash call; returns the session id.
fn session_with_a_tool_call(home: &Path, fake: &FakeProvider, prompt: &str) -> String {
    fake.push(Reply::tool_calls(&[(
        "call_echo",
        "bash",
        r#"{"command":"echo hello from the tool"}"#,
    )]));
    fake.push(Reply::text("The tool said hello."));
    let out = run(ikigai(home, fake).args(["-p", prompt]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list = run(ikigai(home, fake).args(["sessions", "--json"]));
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == prompt)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn sessions_json_lists_every_field() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let id = session_with_a_tool_call(home.path(), &fake, "first question");
    let out = run(ikigai(home.path(), &fake).args(["sessions", "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 1);
    let s = &list[0];
    assert_eq!(s["id"], id.as_str());
    assert_eq!(s["title"], "first question");
    assert_eq!(s["messages"], 4, "user, call, result, answer");
    assert_eq!(s["cwd"], home.path().display().to_string());
    assert_eq!(s["provider"], "openai");
    assert!(s["forked_from"].is_null());
    for k in ["created_at", "updated_at", "model"] {
        assert!(s[k].is_string(), "{k}: {s}");
    }
}

#[test]
fn export_md_is_a_readable_transcript_and_jsonl_the_raw_events() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let id = session_with_a_tool_call(home.path(), &fake, "say hello");
    let out = run(ikigai(home.path(), &fake).args(["export", &id[..8]]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = text(&out.stdout);
    assert!(md.starts_with("# say hello\n"), "{md}");
    assert!(md.contains(&format!("- session: `{id}`")), "{md}");
    let user = md.find("## User\n\nsay hello").expect(&md);
    let call = md.find("### Tool call: bash (`call_echo`)").expect(&md);
    let args = md.find("\"command\": \"echo hello from the tool\"").expect(&md);
    let result = md.find("### Tool result: bash (`call_echo`) ok").expect(&md);
    let output = md.find("\nhello from the tool\n").expect(&md);
    let answer = md.find("## Assistant\n\nThe tool said hello.").expect(&md);
    assert!(user < call && call < args && args < result && result < output && output < answer);

    let out = run(ikigai(home.path(), &fake).args(["export", &id, "--format", "jsonl"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1, "{e}");
        assert!(e["id"].is_string() && e["created_at"].is_string(), "{e}");
    }
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .filter(|k| ["user", "assistant", "tool_call", "tool_result"].contains(k))
        .collect();
    assert_eq!(kinds, ["user", "tool_call", "tool_result", "assistant"]);
    let call = events.iter().find(|e| e["kind"] == "tool_call").unwrap();
    assert_eq!(call["data"]["function"]["name"], "bash");
    assert_eq!(call["data"]["id"], "call_echo");

    let out = run(ikigai(home.path(), &fake).args(["export", "nope"]));
    assert_eq!(out.status.code(), Some(2), "an unknown id is a usage error");
    assert!(text(&out.stderr).contains("nope"), "{}", text(&out.stderr));
    let out = run(ikigai(home.path(), &fake).args(["export", &id, "--format", "pdf"]));
    assert_eq!(out.status.code(), Some(2), "a usage error");
}

#[test]
fn sessions_rm_deletes_by_prefix_and_refuses_a_held_session() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    let done = session_with_a_tool_call(h, &fake, "old one");

    // A live process holds a second session while its tool waits.
    fake.push(Reply::tool_calls(&[(
        "call_wait",
        "bash",
        r#"{"command":"touch started; while [ ! -f go ]; do sleep 0.05; done"}"#,
    )]));
    let live = ikigai(h, &fake)
        .args(["-p", "busy one"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let busy = loop {
        assert!(Instant::now() < deadline, "the live session never showed up");
        let out = run(ikigai(h, &fake).args(["sessions", "--json"]));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let found = v.as_array().and_then(|l| {
            l.iter()
                .find(|s| s["title"] == "busy one")
                .map(|s| s["id"].as_str().unwrap().to_string())
        });
        if let Some(id) = found
            && h.join("started").exists()
        {
            break id;
        }
        std::thread::sleep(Duration::from_millis(30));
    };
    let out = run(ikigai(h, &fake).args(["sessions", "rm", &busy]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("in use by another ikigai process"),
        "{}",
        text(&out.stderr)
    );

    let out = run(ikigai(h, &fake).args(["sessions", "rm", &done[..8]]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("deleted session {done}")),
        "{}",
        text(&out.stdout)
    );
    let out = run(ikigai(h, &fake).args(["sessions", "rm", &done]));
    assert_eq!(out.status.code(), Some(2), "an unknown id is a usage error");
    assert!(
        text(&out.stderr).contains("no session matches"),
        "{}",
        text(&out.stderr)
    );

    fake.push(Reply::text("finished"));
    std::fs::write(h.join("go"), "").unwrap();
    let status = { live }.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    // Once its process is gone, the session can be deleted.
    let out = run(ikigai(h, &fake).args(["sessions", "rm", &busy]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(ikigai(h, &fake).args(["sessions", "--json"]));
    assert_eq!(text(&out.stdout).trim(), "[]");
}

/// An id that names no session is a usage error (exit 2) wherever it is given.
#[test]
fn an_unknown_id_exits_2_everywhere() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    for args in [
        &["sessions", "rm", "nope"][..],
        &["export", "nope"],
        &["--resume", "nope", "-p", "hi"],
    ] {
        let out = run(ikigai(home.path(), &fake).args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("nope"), "{}", text(&out.stderr));
    }
}

#[test]
fn titles_are_cut_to_the_terminal_width() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    let long = "a rather long first question that will not fit in a narrow terminal at all";
    fake.push(Reply::text("ok"));
    let out = run(ikigai(h, &fake).args(["-p", long]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // Not a terminal: the whole title.
    let out = run(ikigai(h, &fake).arg("sessions"));
    assert!(text(&out.stdout).contains(long), "{}", text(&out.stdout));

    // An 80-column terminal (a pseudo-terminal from script(1)).
    let mut script = Command::new("script");
    common::env::isolate(&mut script, h);
    let cmd = format!("stty cols 80; {} sessions", env!("CARGO_BIN_EXE_ikigai"));
    let out = script
        .current_dir(h)
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script(1) from util-linux is needed for this test");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let screen = text(&out.stdout);
    let lines: Vec<&str> = screen.lines().map(|l| l.trim_end_matches('\r')).collect();
    assert_eq!(lines.len(), 2, "{screen}");
    for l in &lines {
        assert!(l.chars().count() <= 80, "{} columns: {l}", l.chars().count());
    }
    assert!(
        lines[1].ends_with('…') && lines[1].contains("a rather long") && !lines[1].contains(long),
        "{screen}"
    );
}

/// `ikigai sessions` lists this folder's sessions, then how many other folders hold;
/// `--all` lists every folder's, `--here` only this one's, `--limit N` at most N, and
/// `--json` follows the same choice.
#[test]
fn sessions_lists_this_folder_first_with_all_here_and_limit() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let other = h.join("other");
    std::fs::create_dir(&other).unwrap();
    let fake = FakeProvider::start();
    for (dir, prompt) in [(h, "here one"), (h, "here two"), (other.as_path(), "over there")] {
        fake.push(Reply::text("ok"));
        let out = run(ikigai(h, &fake).current_dir(dir).args(["-p", prompt]));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let list = |args: &[&str]| {
        let out = run(ikigai(h, &fake).arg("sessions").args(args));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let table = list(&[]);
    assert!(
        table.contains("here one") && table.contains("here two"),
        "{table}"
    );
    assert!(!table.contains("over there"), "{table}");
    assert!(
        table.ends_with("1 session in other folders (--all lists them)\n"),
        "{table}"
    );
    let all = list(&["--all"]);
    assert!(all.contains("over there") && all.contains("here one"), "{all}");
    assert!(!all.contains("other folders"), "{all}");
    let here: Value = serde_json::from_str(&list(&["--here", "--json"])).unwrap();
    let titles: Vec<&str> = here
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["here two", "here one"], "newest first");
    let one = list(&["--all", "--limit", "1"]);
    assert!(one.contains("over there") && !one.contains("here two"), "{one}");
    assert!(one.contains("… 2 more (--limit 2 shows more"), "{one}");
    let out = run(ikigai(h, &fake).args(["sessions", "--all", "--here"]));
    assert_eq!(out.status.code(), Some(2), "a usage error");
}
