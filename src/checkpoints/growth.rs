//! How large the shadow repository may grow. A checkpoint copies what its turn changed
//! into the content store when the turn ends, so a snapshot in the shadow repository is
//! needed only while the session that took it runs: each running session keeps its full
//! snapshot under a ref of its own (`refs/ikigai/live/PID-START`), and at a session's
//! start, at most once a day, refs of sessions that no longer run are dropped, loose
//! objects nothing refers to (no ref, not the index) and older than an hour are pruned,
//! and, at most once a week, everything is repacked compressed (the first snapshot is
//! stored uncompressed, for speed). What is left: one compressed copy of the tree's
//! files and what running sessions hold. Best effort: a failure leaves things as they were.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::shadow::Shadow;

const LIVE: &str = "refs/ikigai/live/";
const DAY: Duration = Duration::from_secs(24 * 3600);

/// The ref that keeps this process's snapshot: its pid and start time (pids are reused).
pub(crate) fn live_ref() -> String {
    let pid = std::process::id();
    format!("{LIVE}{pid}-{}", started(pid).unwrap_or(0))
}

/// When process `pid` started (clock ticks since boot), from `/proc/PID/stat`.
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses (which may hold anything): field 22 overall.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process a live ref names still runs.
fn running(name: &str) -> bool {
    let Some((pid, start)) = name.rsplit('/').next().and_then(|n| n.split_once('-')) else {
        return false;
    };
    match (pid.parse::<u32>(), start.parse::<u64>()) {
        (Ok(pid), Ok(start)) => started(pid) == Some(start),
        _ => false,
    }
}

/// Whether `stamp` is older than `age` (or missing); touches it when so.
fn due(stamp: &Path, age: Duration) -> bool {
    let fresh = std::fs::metadata(stamp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|d| d < age);
    if fresh {
        return false;
    }
    std::fs::write(stamp, b"").is_ok()
}

/// Prunes what no running session needs (see the module comment).
pub(crate) fn prune(shadow: &Shadow) {
    let dir = shadow.git_dir();
    if !due(&dir.join("ikigai-pruned"), DAY) {
        return;
    }
    if let Ok(refs) = shadow.run(&["for-each-ref", "--format=%(refname)", LIVE]) {
        for name in String::from_utf8_lossy(&refs).lines() {
            if !running(name) {
                let _ = shadow.run(&["update-ref", "-d", name]);
            }
        }
    }
    if due(&dir.join("ikigai-repacked"), 7 * DAY) {
        let _ = shadow.run(&["-c", "pack.compression=1", "repack", "-a", "-d", "-q"]);
    }
    let _ = shadow.run(&["prune", "--expire=1.hour.ago"]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_ref_names_this_process_and_only_while_it_runs() {
        let me = live_ref();
        assert!(me.starts_with(LIVE));
        assert!(running(&me));
        let pid = std::process::id();
        assert!(!running(&format!("{LIVE}{pid}-1")), "another start, same pid");
        assert!(!running(&format!("{LIVE}nonsense")));
    }
}
