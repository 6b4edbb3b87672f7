//! Processes that leave a bash call's group, found the way the binary finds them: this
//! test process is a child subreaper (as `main` makes ikigai), so escaped descendants are
//! looked for from our own children down instead of in every process (tools_bash covers
//! the other path, without a subreaper). Being a subreaper is process-wide, so the test
//! runs in a child copy of the suite binary, not beside the other tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::tools_util::*;
use serde_json::json;

/// A new session (`setsid`, waited for until it leads it), a job-control group, a
/// double-forked grandchild, then the shell's own pid.
const ESCAPES: &str = "setsid sleep 100 & p=$!; \
    until read -r _ _ _ _ _ s _ < /proc/$p/stat && [ \"$s\" = \"$p\" ]; do sleep 0.01; done; \
    echo $p; set -m; sleep 100 & echo $!; set +m; \
    ( sleep 100 & echo $! ) ; echo $$";

fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace().filter_map(|w| w.parse().ok()).collect()
}

/// Set in the child copy of the suite that runs the test for real.
const CHILD: &str = "IKIGAI_TEST_SUBREAPER_CHILD";

#[test]
fn escaped_processes_are_found_from_the_subreaper_and_killed_on_return_and_timeout() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let name = "tool_escapes_subreaper::in_a_subreaper";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            name,
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child ran no test: {text}");
}

/// The test itself, run only by the child copy (ignored in the suite's own run).
#[tokio::test]
#[ignore = "run by escaped_processes_are_found_from_the_subreaper_and_killed_on_return_and_timeout in a child process"]
async fn in_a_subreaper() {
    assert!(std::env::var_os(CHILD).is_some(), "run through the test above");
    assert!(ikigai::tools::process::become_subreaper());
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    c.timeout = Duration::from_secs(60);
    let e = run("bash", json!({"command": ESCAPES}), &c).await;
    let ps = pids(&output(&e));
    assert_eq!(ps.len(), 4, "{}", output(&e));
    for &pid in &ps[..3] {
        assert!(
            eventually(|| process_gone(pid)),
            "pid {pid} survived the return of its call"
        );
    }

    c.timeout = Duration::from_secs(1);
    let e = run("bash", json!({"command": format!("{ESCAPES}; sleep 100")}), &c).await;
    tool_failure(&e, "TOOL_TIMEOUT");
    let ps = pids(e.envelope.to_value()["partial_output"].as_str().unwrap());
    assert_eq!(ps.len(), 4, "{}", e.envelope);
    for &pid in &ps[..3] {
        assert!(eventually(|| process_gone(pid)), "pid {pid} survived the timeout");
    }
}
