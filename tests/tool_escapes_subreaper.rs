//! Processes that leave a bash call's group, found the way the binary finds them: this
//! test process is a child subreaper (as `main` makes ikigai), so escaped descendants are
//! looked for from our own children down instead of in every process (tools_bash covers
//! the other path, without a subreaper).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_util;

use std::time::Duration;

use serde_json::json;
use tools_util::*;

/// A new session (`setsid`, waited for until it leads it), a job-control group, a
/// double-forked grandchild, then the shell's own pid.
const ESCAPES: &str = "setsid sleep 100 & p=$!; \
    until read -r _ _ _ _ _ s _ < /proc/$p/stat && [ \"$s\" = \"$p\" ]; do sleep 0.01; done; \
    echo $p; set -m; sleep 100 & echo $!; set +m; \
    ( sleep 100 & echo $! ) ; echo $$";

fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace().filter_map(|w| w.parse().ok()).collect()
}

#[tokio::test]
async fn escaped_processes_are_found_from_the_subreaper_and_killed_on_return_and_timeout() {
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
    let ps = pids(e.envelope["partial_output"].as_str().unwrap());
    assert_eq!(ps.len(), 4, "{}", e.envelope);
    for &pid in &ps[..3] {
        assert!(eventually(|| process_gone(pid)), "pid {pid} survived the timeout");
    }
}
