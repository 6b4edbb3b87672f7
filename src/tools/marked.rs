//! Finds a tool call's processes through /proc — by the call's marker variable (even after
//! they left its process group), by process group, or as descendants — and kills the
//! marked ones. Reads /proc only; starts nothing and knows nothing of calls' results.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Set in every tool process's environment to a value unique to the call; descendants
/// inherit it, so they can be found after they leave the process group.
pub const CALL_MARKER: &str = "IKIGAI_TOOL_CALL";

/// Clock ticks (USER_HZ, 100 per second on Linux) since boot, as /proc/PID/stat counts
/// process start times; 0 when /proc/uptime cannot be read (then nothing is filtered).
pub(crate) fn ticks_now() -> u64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0, |secs| (secs * 100.0) as u64)
}

/// Kills (SIGKILL) every process started at or after `since` (clock ticks since boot)
/// whose environment carries `CALL_MARKER=marker`, until no live one is left (a process may
/// fork while we look). Only processes this user may read are seen, which are the only ones
/// a tool could have started; older ones are skipped without reading their environment
/// (which can wait on a busy process's memory lock).
pub(crate) fn kill_marked(marker: &str, since: u64) -> Vec<Pid> {
    kill_marked_among(marker, since, &|me| candidates(me))
}

/// `kill_marked` over every process of the system, for the calls of an ikigai that is
/// gone (their processes are no longer our descendants).
pub(crate) fn kill_marked_everywhere(marker: &str, since: u64) -> Vec<Pid> {
    kill_marked_among(marker, since, &|_| all_pids())
}

fn kill_marked_among(marker: &str, since: u64, among: &dyn Fn(u32) -> Vec<u32>) -> Vec<Pid> {
    let needle = format!("{CALL_MARKER}={marker}");
    let me = std::process::id();
    let mut killed = Vec::new();
    for _ in 0..16 {
        let (found, unread) = marked(needle.as_bytes(), me, since, among(me));
        if found.is_empty() {
            if unread == 0 {
                break;
            }
            // A process caught inside execve shows an empty environment for a moment:
            // look again rather than miss it.
            std::thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        for pid in found {
            let _ = kill(pid, Signal::SIGKILL);
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
    }
    killed
}

/// Live processes (zombies have no environment) with the exact entry `needle`, and how
/// many candidates showed an empty environment (between the two halves of an execve).
fn marked(needle: &[u8], me: u32, since: u64, candidates: Vec<u32>) -> (Vec<Pid>, usize) {
    let mut found = Vec::new();
    let mut unread = 0;
    for pid in candidates {
        if pid == me {
            continue;
        }
        if since > 0 && start_ticks(pid).is_some_and(|t| t < since) {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ.is_empty() {
            // A zombie has none for good; a live process only while it executes.
            if state_and_parent(Pid::from_raw(pid as i32)).is_some_and(|(s, _)| s != 'Z') {
                unread += 1;
            }
            continue;
        }
        if environ.split(|&b| b == 0).any(|v| v == needle) {
            found.push(Pid::from_raw(pid as i32));
        }
    }
    (found, unread)
}

/// The processes a call may have left behind. As a child subreaper, every one of them is
/// our descendant (an orphan is re-parented to us, never to init), so walking down from
/// our own children is enough and much cheaper than reading every process; otherwise (not
/// a subreaper, or a kernel without `/proc/PID/task/TID/children`) every process is a
/// candidate.
fn candidates(me: u32) -> Vec<u32> {
    let subreaper = nix::sys::prctl::get_child_subreaper().unwrap_or(false);
    if subreaper && let Some(d) = descendants(me) {
        return d;
    }
    all_pids()
}

/// Every process of the system (that `/proc` shows).
fn all_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .collect()
}

/// The processes whose process group is `pgid`.
pub(crate) fn group_members(pgid: i32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    // Fields after the command: state, ppid, pgrp.
                    stat.rsplit_once(')')?
                        .1
                        .split_whitespace()
                        .nth(2)?
                        .parse::<i32>()
                        .ok()
                })
                == Some(pgid)
        })
        .collect()
}

/// Every descendant of `root`, or `None` when the kernel does not list children.
fn descendants(root: u32) -> Option<Vec<u32>> {
    if !std::path::Path::new(&format!("/proc/{root}/task/{root}/children")).exists() {
        return None;
    }
    let mut out = Vec::new();
    let mut queue = children_of(root)?;
    while let Some(pid) = queue.pop() {
        if out.contains(&pid) {
            continue;
        }
        out.push(pid);
        // A process that is gone meanwhile has no children to add.
        queue.extend(children_of(pid).unwrap_or_default());
    }
    Some(out)
}

/// The children of every thread of `pid` (a child belongs to the thread that forked it).
fn children_of(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    for task in tasks.flatten() {
        // A thread that ended meanwhile has no children left.
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(text.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    Some(out)
}

/// When a process started, in clock ticks since boot (field 22 of /proc/PID/stat).
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// The state letter and parent of a process, from /proc/PID/stat.
pub(crate) fn state_and_parent(pid: Pid) -> Option<(char, Pid)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse::<i32>().ok()?;
    Some((state, Pid::from_raw(ppid)))
}
