//! Runs one tool process: a session and process group of its own (started by the launcher:
//! no controlling terminal), the working directory, a filtered
//! environment, stdin closed (or fed, then closed), stdout and stderr capped while read.
//! When the call returns, times out or is dropped, the group and every descendant of the
//! call (found by a per-call marker variable, even after `setsid`) are killed and reaped.
//! Every process starts through the launcher (when installed), so it also dies with
//! ikigai, under the sandbox when one is installed; the calls in flight are recorded for the next start to clean up after a crash
//! (`leftovers`). Knows nothing of any tool's arguments or results.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid, waitpid};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

use super::launcher;
use super::leftovers::{self, Call};
use super::marked::{kill_marked, start_ticks, state_and_parent, ticks_now};
use super::output::CappedBuf;

pub use super::marked::CALL_MARKER;

const CHUNK: usize = 64 * 1024;
/// How long killed descendants are waited for, to reap them.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// Where the process's stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StderrMode {
    /// Into the same pipe as stdout, interleaved as written (bash).
    Merged,
    /// A pipe of its own, capped at this many bytes.
    Separate(usize),
}

/// What to run and how.
#[derive(Clone, Debug)]
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The whole environment of the process (already filtered); the call marker is added.
    pub env: Vec<(OsString, OsString)>,
    /// Written to stdin, which is then closed; `None`: stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
    pub stderr: StderrMode,
    /// Cap on stdout (plus stderr when merged), applied while reading.
    pub stdout_cap: usize,
    /// Stop (and kill everything) as soon as stdout fills its cap, instead of reading on
    /// to count what was left out.
    pub stop_when_full: bool,
    pub timeout: Duration,
    /// Copy stdout, as it is read, into the caller's `Partial` buffer (if the call runs
    /// in one), so a cancelled call can still show what the command printed.
    pub share_partial: bool,
    /// Which pipe is streamed to the running call's live sink (`tools::live`), if any.
    pub live: LiveFrom,
}

/// The pipe whose output a person watches while the call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveFrom {
    Nothing,
    Stdout,
    /// stderr (with `StderrMode::Separate`): an external tool's stdout is its result JSON.
    Stderr,
}

/// How the main process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Exited(ExitStatus),
    /// It ran past the timeout; the group and its descendants were killed.
    TimedOut,
    /// stdout filled its cap with `stop_when_full`; everything was killed.
    OutputFull,
}

/// A finished run.
#[derive(Debug)]
pub struct Finished {
    pub outcome: Outcome,
    pub stdout: CappedBuf,
    /// `Some` with `StderrMode::Separate`.
    pub stderr: Option<CappedBuf>,
}

/// Makes this process a child subreaper, so that descendants orphaned by a tool process
/// (daemons, `setsid`) are re-parented to it and reaped by the cleanup. Called by the
/// binary only; a library user may call it for its own process.
pub fn become_subreaper() -> bool {
    nix::sys::prctl::set_child_subreaper(true).is_ok()
}

/// The calls in flight in this process, as recorded for the next start.
static RUNNING: Mutex<Vec<Call>> = Mutex::new(Vec::new());

fn running() -> std::sync::MutexGuard<'static, Vec<Call>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds a call to the ones in flight (and to this process's record).
fn started(call: Call) {
    let mut calls = running();
    calls.push(call);
    leftovers::record(&calls);
}

/// Removes the call of group `pgid` from the ones in flight.
fn ended(pgid: Pid) {
    let mut calls = running();
    let before = calls.len();
    calls.retain(|c| c.pgid != pgid.as_raw());
    if calls.len() != before {
        leftovers::record(&calls);
    }
}

/// A process group started outside `run` — an MCP server — recorded like a call in
/// flight, so that the next ikigai kills it (and what carries its marker) if this one dies
/// without closing it. Dropping it removes the record.
pub(crate) struct Tracked(Pid);

impl Drop for Tracked {
    fn drop(&mut self) {
        ended(self.0);
    }
}

/// A fresh call marker and the clock just before the start, for `track`: set the marker as
/// `CALL_MARKER` in the process's environment.
pub(crate) fn new_marker() -> (String, u64) {
    (next_marker(), ticks_now().saturating_sub(2))
}

/// Records the group `pgid` (its leader just started, unreaped) with `marker`.
pub(crate) fn track(pgid: Pid, marker: String, since: u64) -> Tracked {
    started(Call {
        pgid: pgid.as_raw(),
        leader_start: start_ticks(pgid.as_raw() as u32).unwrap_or(0),
        marker,
        since,
    });
    Tracked(pgid)
}

/// Kills every tool process in flight in this process — each call's group and every
/// process carrying its marker — for a front end that must stop at once (SIGTERM, SIGHUP).
/// The calls themselves then finish as killed. Returns how many calls were running.
pub fn kill_running() -> usize {
    let calls: Vec<Call> = running().clone();
    for c in &calls {
        let _ = killpg(Pid::from_raw(c.pgid), Signal::SIGKILL);
        kill_marked(&c.marker, c.since);
    }
    calls.len()
}

/// A marker no other call, of this or any other ikigai, carries: a random prefix per
/// process (pids are reused) and a counter.
fn next_marker() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static PREFIX: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| uuid::Uuid::new_v4().simple().to_string()[..12].to_string());
    format!("{}-{}", *PREFIX, COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Kills everything this call started when dropped (on cancel) or when asked. The group is
/// killed while the main process is still unreaped, so its id cannot have been reused.
struct CallGuard {
    pgid: Pid,
    marker: String,
    /// Clock ticks since boot just before the spawn: older processes are not the call's.
    since: u64,
    group_armed: bool,
    done: bool,
}

impl CallGuard {
    fn kill_group(&mut self) {
        if self.group_armed {
            // ESRCH: every member has already exited.
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }

    /// Kills the group and every process carrying the marker; returns the pids killed.
    fn kill_all(&mut self) -> Vec<Pid> {
        self.kill_group();
        kill_marked(&self.marker, self.since)
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        ended(self.pgid);
        if self.done {
            return;
        }
        let main = self.pgid;
        let killed = self.kill_all();
        if !killed.is_empty() {
            // Reaping may wait briefly; never block the dropping task for it.
            std::thread::spawn(move || reap(&killed, main));
        }
    }
}

/// Runs `spec` to completion or timeout. `Err` only when the process could not be started
/// or watched (the caller reports it).
pub async fn run(spec: Spec) -> io::Result<Finished> {
    let (out_r, out_w) = io::pipe()?;
    let (err_r, err_w) = match spec.stderr {
        StderrMode::Merged => (None, out_w.try_clone()?),
        StderrMode::Separate(_) => {
            let (r, w) = io::pipe()?;
            (Some(r), w)
        }
    };
    let marker = next_marker();
    let since = ticks_now().saturating_sub(2);
    let path_var = spec
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let mut cmd = launcher::sandboxed_command(&spec.program, &spec.args, &spec.cwd, path_var)?;
    cmd.current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(CALL_MARKER, &marker)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(out_w)
        .stderr(err_w)
        .kill_on_drop(true);
    let spawned = cmd.spawn();
    // Close our copies of the write ends so the readers see EOF when the group is done.
    drop(cmd);
    let mut child = spawned?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the process exited before it could be watched"))?;
    let pid = Pid::from_raw(pid as i32);
    // Registered while the main process is unreaped, so the group id stays ours.
    started(Call {
        pgid: pid.as_raw(),
        leader_start: start_ticks(pid.as_raw() as u32).unwrap_or(0),
        marker: marker.clone(),
        since,
    });
    let mut guard = CallGuard {
        pgid: pid,
        marker,
        since,
        group_armed: true,
        done: false,
    };
    let mut out_rx = pipe::Receiver::from_owned_fd(OwnedFd::from(out_r))?;
    let mut err_rx = match err_r {
        Some(r) => Some(pipe::Receiver::from_owned_fd(OwnedFd::from(r))?),
        None => None,
    };
    let mut out = CappedBuf::new(spec.stdout_cap);
    let partial = spec
        .share_partial
        .then(super::partial::Partial::current)
        .flatten();
    // If the call is dropped (cancelled), what is already in the pipe still reaches the
    // partial buffer.
    let mut tail = match &partial {
        Some(p) => {
            p.reset(spec.stdout_cap);
            Some(DrainOnDrop {
                fd: out_rx.as_fd().try_clone_to_owned()?,
                partial: p.clone(),
                armed: true,
            })
        }
        None => None,
    };
    let mut live = (spec.live != LiveFrom::Nothing)
        .then(super::live::Feed::current)
        .flatten();
    let live_err = spec.live == LiveFrom::Stderr;
    let mut err = match spec.stderr {
        StderrMode::Separate(cap) => Some(CappedBuf::new(cap)),
        StderrMode::Merged => None,
    };
    let stdin = child.stdin.take();
    let input = spec.stdin.unwrap_or_default();
    let feed = async move {
        if let Some(mut w) = stdin {
            // A tool that exits without reading its input is not an error here.
            let _ = w.write_all(&input).await;
            let _ = w.shutdown().await;
        }
    };
    tokio::pin!(feed);
    let mut fed = false;

    let mut chunk = vec![0u8; CHUNK];
    let mut err_chunk = vec![0u8; CHUNK];
    let mut out_eof = false;
    let mut err_eof = err_rx.is_none();
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let main_exit = exited(pid);
    tokio::pin!(main_exit);
    let finished = loop {
        let live_due = live.as_ref().and_then(super::live::Feed::due);
        tokio::select! {
            r = out_rx.read(&mut chunk), if !out_eof => match r {
                Ok(0) => out_eof = true,
                Ok(n) => {
                    if let Some(p) = &partial {
                        p.push(&chunk[..n]);
                    }
                    if let (Some(l), false) = (live.as_mut(), live_err) {
                        l.push(&chunk[..n]);
                    }
                    if !out.push(&chunk[..n]) && spec.stop_when_full {
                        break Some(Outcome::OutputFull);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => out_eof = true,
            },
            r = read_opt(&mut err_rx, &mut err_chunk), if !err_eof => match r {
                Ok(0) => err_eof = true,
                Ok(n) => {
                    if let Some(e) = err.as_mut() {
                        e.push(&err_chunk[..n]);
                    }
                    if let (Some(l), true) = (live.as_mut(), live_err) {
                        l.push(&err_chunk[..n]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => err_eof = true,
            },
            () = &mut feed, if !fed => fed = true,
            () = super::live::until(live_due), if live_due.is_some() => {
                if let Some(l) = live.as_mut() {
                    l.flush(false);
                }
            }
            () = &mut main_exit => break None,
            _ = &mut deadline => break Some(Outcome::TimedOut),
        }
    };
    // Finished, not dropped: what is left in the pipe is read below.
    if let Some(t) = tail.as_mut() {
        t.armed = false;
    }
    // Background jobs and escaped descendants go with the main process; then take what
    // they wrote.
    let killed = guard.kill_all();
    if !out_eof {
        drain(&out_rx, &mut out, &mut chunk, live.as_mut().filter(|_| !live_err));
    }
    if let (false, Some(rx), Some(e)) = (err_eof, err_rx.as_ref(), err.as_mut()) {
        drain(rx, e, &mut err_chunk, live.as_mut().filter(|_| live_err));
    }
    if let Some(l) = live.as_mut() {
        l.flush(true);
    }
    ended(pid);
    let status = child.wait().await;
    guard.group_armed = false;
    guard.done = true;
    if !killed.is_empty() {
        let _ = tokio::task::spawn_blocking(move || reap(&killed, pid)).await;
    }
    let outcome = match finished {
        None => Outcome::Exited(status?),
        Some(stopped) => stopped,
    };
    Ok(Finished {
        outcome,
        stdout: out,
        stderr: err,
    })
}

async fn read_opt(rx: &mut Option<pipe::Receiver>, buf: &mut [u8]) -> io::Result<usize> {
    match rx {
        Some(rx) => rx.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Resolves when `pid` has exited, without reaping it (the zombie keeps the group id taken).
async fn exited(pid: Pid) {
    let waited = tokio::task::spawn_blocking(move || {
        loop {
            match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                Err(Errno::EINTR) => continue,
                _ => return,
            }
        }
    });
    let _ = waited.await;
}

/// A copy of a call's stdout read end: when the call is dropped before it finished, what
/// the command already wrote (still in the pipe) goes to its partial buffer.
struct DrainOnDrop {
    fd: OwnedFd,
    partial: super::partial::Partial,
    armed: bool,
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // The pipe is non-blocking: this reads what is there and stops.
        let mut chunk = [0u8; 4096];
        loop {
            match nix::unistd::read(self.fd.as_fd(), &mut chunk) {
                Ok(0) => return,
                Ok(n) => self.partial.push(&chunk[..n]),
                Err(Errno::EINTR) => {}
                Err(_) => return,
            }
        }
    }
}

/// Reads what is already in the pipe without waiting for writers that may never close it.
fn drain(
    rx: &pipe::Receiver,
    out: &mut CappedBuf,
    chunk: &mut [u8],
    mut live: Option<&mut super::live::Feed>,
) {
    loop {
        match nix::unistd::read(rx.as_fd(), chunk) {
            Ok(0) => return,
            Ok(n) => {
                out.push(&chunk[..n]);
                if let Some(l) = live.as_deref_mut() {
                    l.push(&chunk[..n]);
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// Reaps the killed processes that became our children (we are their subreaper, or their
/// parent); waits briefly for the others to be gone. Never touches `main`, which its
/// `Child` handle reaps.
fn reap(killed: &[Pid], main: Pid) {
    let me = nix::unistd::getpid();
    let deadline = Instant::now() + REAP_WAIT;
    let mut left: Vec<Pid> = killed.iter().copied().filter(|p| *p != main).collect();
    while !left.is_empty() && Instant::now() < deadline {
        left.retain(|&pid| match state_and_parent(pid) {
            None => false,
            Some((state, ppid)) if ppid == me && state == 'Z' => {
                let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
                false
            }
            // Someone else's zombie, whose parent is not one of ours: theirs to reap.
            Some(('Z', ppid)) => killed.contains(&ppid) || ppid == main,
            Some(_) => true,
        });
        if !left.is_empty() {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// The conventional name of signal `n` (`SIGKILL`), or `signal N`.
pub fn signal_name(n: i32) -> String {
    Signal::try_from(n).map_or_else(|_| format!("signal {n}"), |s| s.as_str().to_string())
}
