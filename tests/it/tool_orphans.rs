//! No tool process outlives ikigai: SIGKILL ikigai while a `bash` tool runs, with a
//! background `sleep`, a double-forked child, a `setsid` child and a `nohup` child under
//! it. The tool's own process dies at once (its death signal, set by the launcher); the
//! rest, recorded with the call, is killed by the next start of ikigai (`-c`). With the
//! small `ikigai-launch` beside the binary, and without it (the binary's own launcher mode).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::gone;

fn pid_in(dir: &Path, name: &str) -> u32 {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Waits (30 s at most) until `pred` holds.
fn eventually(what: &str, pred: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pred() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigkill_of_ikigai_kills_the_tool_at_once_and_the_next_start_kills_the_rest() {
    sigkill_scenario(&common::binary());
}

/// The same with the binary alone, without `ikigai-launch` beside it: its own launcher
/// mode does the job.
#[test]
fn without_the_small_launcher_the_binary_launches_its_tools_itself() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("ikigai");
    std::fs::copy(common::binary(), &alone).unwrap();
    sigkill_scenario(&alone);
}

fn sigkill_scenario(bin: &Path) {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("pids");
    std::fs::create_dir(&out).unwrap();
    let o = out.display();
    let script = format!(
        "echo $$ > {o}/bash.pid\n\
         sleep 300 & echo $! > {o}/background.pid\n\
         ( sleep 301 & echo $! > {o}/double.pid ) &\n\
         setsid sleep 302 & echo $! > {o}/setsid.pid\n\
         nohup sleep 303 > /dev/null 2>&1 & echo $! > {o}/nohup.pid\n\
         sleep 0.2; touch {o}/ready\n\
         sleep 304\n"
    );
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &serde_json::json!({ "command": script }).to_string(),
    )]));
    let mut child = common::ikigai_at(bin, home.path())
        .args(["-p", "start things", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the tool started everything", || out.join("ready").exists());
    let ikigai = child.id();
    let records = home.path().join(".local/share/ikigai/running");
    let record = records.join(format!("{ikigai}.json"));
    assert!(
        record.exists(),
        "the running call is recorded in {}",
        records.display()
    );
    let mode = std::fs::metadata(&record).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let bash = pid_in(&out, "bash.pid");
    let rest: Vec<(&str, u32)> = ["background", "double", "setsid", "nohup"]
        .into_iter()
        .map(|n| (n, pid_in(&out, &format!("{n}.pid"))))
        .collect();

    child.kill().unwrap();
    child.wait().unwrap();
    eventually("the tool's own process died with ikigai", || gone(bash));
    for (name, pid) in &rest {
        assert!(!gone(*pid), "{name} ({pid}) is left for the next start to kill");
    }

    fake.push(Reply::text("back again"));
    let next = common::ikigai_at(bin, home.path())
        .args(["-c", "-p", "next", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .output()
        .unwrap();
    assert_eq!(
        next.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    for (name, pid) in &rest {
        eventually(&format!("{name} ({pid}) was killed by the next start"), || {
            gone(*pid)
        });
    }
    assert!(!record.exists(), "the dead owner's record is removed");
}

#[test]
fn a_running_call_is_not_touched_by_another_ikigai_starting() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("pids");
    std::fs::create_dir(&out).unwrap();
    let o = out.display();
    let script = format!("sleep 300 & echo $! > {o}/bg.pid\ntouch {o}/ready\nsleep 300\n");
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &serde_json::json!({ "command": script }).to_string(),
    )]));
    let mut child = common::ikigai(home.path())
        .args(["-p", "run", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the tool started", || out.join("ready").exists());
    let bg = pid_in(&out, "bg.pid");
    let other = common::ikigai(home.path()).arg("sessions").output().unwrap();
    assert_eq!(other.status.code(), Some(0));
    assert!(!gone(bg), "a live owner's call was killed");
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = common::ikigai(home.path()).arg("sessions").output().unwrap();
    eventually("the background job is killed once its owner is gone", || gone(bg));
}
