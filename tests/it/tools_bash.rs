//! The bash tool with real processes: interleaved output, exit codes and signals, the cap
//! on 10 MB of output, and the whole process group killed on timeout, on return and when
//! the call is dropped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::tools_util::*;
use serde_json::json;

fn short(dir: &std::path::Path, secs: u64) -> ikigai::tools::ToolContext {
    let mut c = ctx(dir);
    c.timeout = Duration::from_secs(secs);
    c
}

fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace().filter_map(|w| w.parse().ok()).collect()
}

#[tokio::test]
async fn output_interleaves_stdout_and_stderr_with_the_exit_code() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let e = run(
        "bash",
        json!({"command": "echo out1; echo err1 >&2; echo out2; echo err2 >&2; exit 3"}),
        &c,
    )
    .await;
    assert!(e.success, "a nonzero exit is a normal result");
    assert_eq!(
        result(&e),
        &json!({"output": "out1\nerr1\nout2\nerr2\n", "exit_code": 3})
    );
    assert_eq!(e.summary, "exit 3");

    let e = run("bash", json!({"command": "pwd"}), &c).await;
    assert_eq!(
        output(&e).trim(),
        d.path().canonicalize().unwrap().to_string_lossy()
    );
    // Stdin is /dev/null: a command that reads it finishes at once.
    let e = run("bash", json!({"command": "cat; read x; echo read=$?"}), &c).await;
    assert_eq!(output(&e), "read=1\n");
    let e = run("bash", json!({"command": "true"}), &c).await;
    assert_eq!(result(&e), &json!({"output": "", "exit_code": 0}));
}

#[tokio::test]
async fn killed_by_a_signal_reports_128_plus_n_and_names_it() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let e = run("bash", json!({"command": "echo before; kill -9 $$"}), &c).await;
    let r = result(&e);
    assert_eq!(r["exit_code"], 137);
    assert_eq!(r["output"], "before\n[terminated by signal SIGKILL]");
    assert_eq!(e.summary, "exit 137 (SIGKILL)");
    let e = run("bash", json!({"command": "kill -TERM $$"}), &c).await;
    assert_eq!(result(&e)["exit_code"], 143);
    assert!(output(&e).contains("SIGTERM"));
    // A child killed by a signal is just an exit status of the shell.
    let e = run("bash", json!({"command": "sh -c 'kill -9 $$'; echo $?"}), &c).await;
    let out = output(&e);
    assert!(
        out.ends_with("Killed                  sh -c 'kill -9 $$'\n137\n"),
        "{out}"
    );
}

#[tokio::test]
async fn ten_megabytes_of_output_are_capped() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let e = run(
        "bash",
        json!({"command": "yes | head -c 10000000; echo done >&2"}),
        &c,
    )
    .await;
    let r = result(&e);
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["truncated"], true);
    let out = r["output"].as_str().unwrap();
    assert!(out.len() <= c.max_output_size, "{}", out.len());
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("[output truncated: ") && last.ends_with(" of 10000005 bytes shown]"),
        "{last}"
    );
    assert!(out.starts_with("y\ny\ny\n"));
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let d = tempfile::tempdir().unwrap();
    let c = short(d.path(), 2);
    // A background job, and a foreground child that ignores SIGTERM.
    let cmd = "sleep 100 & echo $!; (trap '' TERM; echo $BASHPID; exec sleep 100) & echo $$; wait";
    let e = run("bash", json!({"command": cmd}), &c).await;
    let msg = tool_failure(&e, "TOOL_TIMEOUT");
    assert!(msg.contains("timed out after 2s"), "{msg}");
    let partial = e.envelope.partial_output.as_deref().unwrap();
    let ps = pids(partial);
    assert_eq!(ps.len(), 3, "{partial}");
    for pid in ps {
        assert!(eventually(|| process_gone(pid)), "pid {pid} survived the timeout");
    }
}

#[tokio::test]
async fn background_jobs_do_not_hang_the_call_and_are_killed_on_return() {
    let d = tempfile::tempdir().unwrap();
    // The timeout is far away: reaching it would mean the open pipe hung the call.
    let c = short(d.path(), 60);
    let e = run(
        "bash",
        json!({"command": "sleep 100 & echo $!; echo main done"}),
        &c,
    )
    .await;
    let out = output(&e);
    assert!(out.ends_with("main done\n"), "{out}");
    assert_eq!(result(&e)["exit_code"], 0);
    let pid = pids(&out)[0];
    assert!(eventually(|| process_gone(pid)), "background pid {pid} survived");
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let d = tempfile::tempdir().unwrap();
    let c = short(d.path(), 60);
    let pidfile = d.path().join("pids");
    let cmd = format!(
        "sleep 100 & echo $! > {p}.tmp; echo $$ >> {p}.tmp; mv {p}.tmp {p}; sleep 100",
        p = pidfile.display()
    );
    let call = run("bash", json!({"command": cmd}), &c);
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::pin!(call);
        loop {
            tokio::select! {
                _ = &mut call => panic!("the command should still be running"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {
                    if pidfile.exists() {
                        return;
                    }
                }
            }
        }
        // `call` is dropped here, as a user cancel drops it.
    })
    .await;
    assert!(waited.is_ok(), "the command never wrote its pids");
    let ps = pids(&std::fs::read_to_string(&pidfile).unwrap());
    assert_eq!(ps.len(), 2);
    for pid in ps {
        assert!(eventually(|| process_gone(pid)), "pid {pid} survived the cancel");
    }
}

#[tokio::test]
async fn bash_errors() {
    let d = tempfile::tempdir().unwrap();
    let e = run("bash", json!({}), &ctx(d.path())).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("missing required parameter `command`"));
    let e = run("bash", json!({"command": ["ls"]}), &ctx(d.path())).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`command` must be a string"));
    let gone = ctx(&d.path().join("no-such-dir"));
    let e = run("bash", json!({"command": "true"}), &gone).await;
    assert!(
        op_error(&e).starts_with("Cannot run bash in "),
        "{}",
        op_error(&e)
    );
}

/// Starts two processes that leave the shell's process group: one in a new session
/// (`setsid`) and one in a job-control group (`set -m`). Prints their pids.
///
/// `setsid` runs in the background child, so the shell waits until that child really
/// leads its own session (field 6 of /proc/PID/stat equals its pid) before going on;
/// otherwise the call could end, and kill it by group, before it had escaped.
const ESCAPES: &str = "setsid sleep 100 & p=$!; \
    until read -r _ _ _ _ _ s _ < /proc/$p/stat && [ \"$s\" = \"$p\" ]; do sleep 0.01; done; \
    echo $p; set -m; sleep 100 & echo $!; set +m";

fn assert_all_gone(pids: &[i32], when: &str) {
    for &pid in pids {
        assert!(eventually(|| process_gone(pid)), "pid {pid} survived {when}");
    }
}

/// The escaped processes really ran in another session or group (else the test proves
/// nothing about escapes).
fn assert_escaped(pids: &[i32], shell_group: i32) {
    for &pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        if fields.len() > 2 {
            assert_ne!(
                fields[2].parse::<i32>().unwrap(),
                shell_group,
                "pid {pid} did not leave the group"
            );
        }
    }
}

#[tokio::test]
async fn processes_that_leave_the_group_are_killed_on_return() {
    let d = tempfile::tempdir().unwrap();
    let c = short(d.path(), 60);
    let cmd = format!("{ESCAPES}; echo $$");
    let e = run("bash", json!({"command": cmd}), &c).await;
    let ps = pids(&output(&e));
    assert_eq!(ps.len(), 3, "{}", output(&e));
    assert_all_gone(&ps[..2], "the return of its call");
}

#[tokio::test]
async fn processes_that_leave_the_group_are_killed_on_timeout() {
    let d = tempfile::tempdir().unwrap();
    let c = short(d.path(), 1);
    let cmd = format!("{ESCAPES}; sleep 100");
    let e = run("bash", json!({"command": cmd}), &c).await;
    let msg = tool_failure(&e, "TOOL_TIMEOUT");
    assert!(msg.contains("every process it started were killed"), "{msg}");
    let ps = pids(e.envelope.to_value()["partial_output"].as_str().unwrap());
    assert_eq!(ps.len(), 2, "{}", e.envelope);
    assert_all_gone(&ps, "the timeout");
}

#[tokio::test]
async fn processes_that_leave_the_group_are_killed_on_cancel() {
    let d = tempfile::tempdir().unwrap();
    let c = short(d.path(), 60);
    let pidfile = d.path().join("pids");
    let cmd = format!(
        "({ESCAPES}; echo $$) > {p}.tmp; mv {p}.tmp {p}; sleep 100",
        p = pidfile.display()
    );
    let call = run("bash", json!({"command": cmd}), &c);
    let started = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::pin!(call);
        loop {
            tokio::select! {
                _ = &mut call => panic!("the command should still be running"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {
                    if pidfile.exists() {
                        return;
                    }
                }
            }
        }
    })
    .await;
    assert!(started.is_ok(), "the command never wrote its pids");
    let ps = pids(&std::fs::read_to_string(&pidfile).unwrap());
    assert_eq!(ps.len(), 3);
    assert_all_gone(&ps, "the cancel");
}

#[tokio::test]
async fn ending_one_call_never_kills_the_processes_of_another() {
    let d = tempfile::tempdir().unwrap();
    let c = short(d.path(), 60);
    let pidfile = d.path().join("other");
    // A long call whose escaped process must survive the end of a second call.
    let long_cmd = format!(
        "setsid sleep 100 & echo $! > {p}.tmp; mv {p}.tmp {p}; sleep 100",
        p = pidfile.display()
    );
    let mut long = Box::pin(run("bash", json!({"command": long_cmd}), &c));
    let other_pid = loop {
        tokio::select! {
            _ = &mut long => panic!("the long command should still be running"),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {
                if pidfile.exists() {
                    break pids(&std::fs::read_to_string(&pidfile).unwrap())[0];
                }
            }
        }
    };
    let e = run("bash", json!({"command": format!("{ESCAPES}; echo $$")}), &c).await;
    let ps = pids(&output(&e));
    assert_escaped(&ps[..2], ps[2]);
    assert_all_gone(&ps[..2], "the return of its call");
    assert!(
        !process_gone(other_pid),
        "another call's process {other_pid} was killed"
    );
    drop(long);
    assert_all_gone(&[other_pid], "the cancel of its own call");
}
