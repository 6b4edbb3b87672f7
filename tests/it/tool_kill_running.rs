//! `process::kill_running` (for SIGTERM/SIGHUP in the front ends) kills a tool call in
//! flight with everything it started, and the call then finishes. Alone in its own test
//! binary, since it kills every call of the process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::tools_util::*;
use serde_json::json;

#[tokio::test]
async fn kill_running_stops_the_call_in_flight_and_its_descendants() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let pidfile = d.path().join("pids");
    let cmd = format!(
        "setsid sleep 100 & echo $! > {p}.tmp; echo $$ >> {p}.tmp; mv {p}.tmp {p}; sleep 100",
        p = pidfile.display()
    );
    let call = tokio::spawn(async move { run("bash", json!({"command": cmd}), &c).await });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !pidfile.exists() {
        assert!(std::time::Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ikigai::tools::process::kill_running(), 1);
    let e = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call finishes once killed")
        .unwrap();
    assert_eq!(result(&e)["exit_code"], 137, "{}", e.envelope);
    let pids: Vec<i32> = std::fs::read_to_string(&pidfile)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    for pid in pids {
        assert!(eventually(|| process_gone(pid)), "{pid} survived");
    }
    assert_eq!(
        ikigai::tools::process::kill_running(),
        0,
        "nothing left in flight"
    );
}
