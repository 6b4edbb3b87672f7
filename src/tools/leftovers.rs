//! What a killed ikigai left running. Each ikigai records the tool calls it has in flight
//! (process group, the group leader's start, the call marker) in a private file of its
//! own (`running/PID.json`, 0600, in a 0700 folder under the data folder); the file goes
//! when no call runs. The next ikigai to start sweeps: for every file whose owner is gone,
//! it kills the recorded process groups and every process carrying a recorded marker
//! (even after `setsid`), then removes the file. Knows nothing of tools or sessions.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// The folder of record files, once installed; `None`: nothing is recorded.
static DIR: OnceLock<PathBuf> = OnceLock::new();

/// One call in flight, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    /// The call's process group (its main process's pid).
    pub pgid: i32,
    /// When the group leader started (clock ticks since boot): a later process with the
    /// same id is someone else's.
    pub leader_start: u64,
    /// The call's `CALL_MARKER` value, inherited by everything it started.
    pub marker: String,
    /// Clock ticks since boot just before the call started.
    pub since: u64,
}

/// A record file's content.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    pid: u32,
    /// The owner's start (clock ticks since boot), so a reused pid is not mistaken for it.
    start: u64,
    /// The kernel's boot id: after a reboot nothing recorded still runs.
    boot: String,
    calls: Vec<Call>,
}

/// Records into `dir` from now on (created 0700 with the first record). The first call
/// wins.
pub fn install(dir: PathBuf) {
    let _ = DIR.set(dir);
}

/// `running/` under ikigai's data folder.
pub fn default_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("running")
}

fn boot_id() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
}

fn own_start() -> u64 {
    static START: OnceLock<u64> = OnceLock::new();
    *START.get_or_init(|| super::marked::start_ticks(std::process::id()).unwrap_or(0))
}

/// Replaces this process's record with `calls` (removes it when empty). Best effort: a
/// folder that cannot be written only loses the cleanup after a crash.
pub(crate) fn record(calls: &[Call]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let Some(dir) = DIR.get() else {
        return;
    };
    let pid = std::process::id();
    let file = dir.join(format!("{pid}.json"));
    if calls.is_empty() {
        let _ = std::fs::remove_file(&file);
        return;
    }
    let record = Record {
        pid,
        start: own_start(),
        boot: boot_id().to_string(),
        calls: calls.to_vec(),
    };
    let Ok(text) = serde_json::to_vec(&record) else {
        return;
    };
    let tmp = dir.join(format!("{pid}.tmp"));
    {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
    }
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&text));
    if written.is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
}

/// What a sweep did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Record files of owners that are gone.
    pub owners: usize,
    /// Processes killed (group members and marked ones).
    pub killed: usize,
}

/// Kills what owners that are gone left running and removes their records.
pub fn sweep() -> Swept {
    let mut swept = Swept::default();
    let Some(dir) = DIR.get() else {
        return swept;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return swept;
    };
    let boot = boot_id();
    let me = std::process::id();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let record = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok());
        let alive = |start: u64| pid != me && super::marked::start_ticks(pid) == Some(start);
        match record {
            // Its owner still runs (a temporary file is its owner's, being written).
            Some(r) if r.boot == boot && alive(r.start) => continue,
            None if pid != me && super::marked::start_ticks(pid).is_some() => continue,
            Some(r) if r.boot == boot => {
                swept.owners += 1;
                for call in &r.calls {
                    swept.killed += kill_call(call);
                }
            }
            _ => {}
        }
        let _ = std::fs::remove_file(&path);
    }
    swept
}

/// Kills one recorded call's group (unless its id now belongs to a newer process) and its
/// marked processes; returns how many processes were signalled.
fn kill_call(call: &Call) -> usize {
    let mut killed = 0;
    let leader = u32::try_from(call.pgid).unwrap_or(0);
    // A group id is not reused while the group has members; a live process with that pid
    // and another start time means the old group is empty and the id is someone else's.
    let reused = super::marked::start_ticks(leader).is_some_and(|t| t != call.leader_start);
    if leader > 1 && !reused {
        killed += super::marked::group_members(call.pgid).len();
        let _ = killpg(Pid::from_raw(call.pgid), Signal::SIGKILL);
    }
    killed += super::marked::kill_marked_everywhere(&call.marker, call.since).len();
    killed
}
