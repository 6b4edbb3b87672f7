//! A stdio MCP server's process: started (through the launcher) in a session and process
//! group of its own, without the terminal, with the filtered tool
//! environment plus its section's variables, stdin/stdout piped for the protocol, stderr
//! kept as its last lines; stdout read through a guard that ends the connection on a
//! message larger than the limit. Closing kills the whole group. Speaks no protocol.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::config::mcp::Transport;
use crate::tools::EnvPolicy;

/// Lines of stderr kept.
pub const STDERR_LINES: usize = 20;
/// Bytes kept of one stderr line.
const STDERR_LINE_CAP: usize = 400;
/// How long a server has to exit after SIGTERM before its group is killed.
const TERM_GRACE: Duration = Duration::from_millis(300);

/// The last lines a server wrote on stderr; bounded however much it writes.
#[derive(Clone, Debug, Default)]
pub struct StderrTail(Arc<Mutex<TailState>>, Arc<tokio::sync::Notify>);

#[derive(Debug, Default)]
struct TailState {
    lines: VecDeque<String>,
    current: Vec<u8>,
    /// A reader follows a server's stderr (a stdio server's; none over HTTP).
    reading: bool,
    /// The server's stderr reached its end (it exited, or closed it).
    ended: bool,
}

impl StderrTail {
    /// A reader follows stderr from now on.
    fn start(&self) {
        if let Ok(mut st) = self.0.lock() {
            st.reading = true;
        }
    }

    /// The reader saw the end of stderr.
    fn end(&self) {
        if let Ok(mut st) = self.0.lock() {
            st.ended = true;
        }
        self.1.notify_waiters();
    }

    /// Ended, or nothing to wait for (no reader).
    fn has_ended(&self) -> bool {
        self.0.lock().map(|st| st.ended || !st.reading).unwrap_or(true)
    }

    /// Waits, at most `max`, for the end of stderr: a server that failed as it started
    /// has usually exited, and what it said last is read before the failure is told.
    pub async fn ended_within(&self, max: Duration) {
        let _ = tokio::time::timeout(max, async {
            loop {
                let notified = self.1.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.has_ended() {
                    return;
                }
                notified.await;
            }
        })
        .await;
    }

    fn push(&self, bytes: &[u8]) {
        let Ok(mut st) = self.0.lock() else { return };
        for &b in bytes {
            if b == b'\n' {
                let line = String::from_utf8_lossy(&st.current).trim_end().to_string();
                st.current.clear();
                st.lines.push_back(line);
                if st.lines.len() > STDERR_LINES {
                    st.lines.pop_front();
                }
            } else if st.current.len() < STDERR_LINE_CAP {
                st.current.push(b);
            }
        }
    }

    /// The kept lines, oldest first, with an unfinished last line; empty lines dropped.
    pub fn lines(&self) -> Vec<String> {
        let Ok(st) = self.0.lock() else {
            return Vec::new();
        };
        let mut out: Vec<String> = st.lines.iter().filter(|l| !l.is_empty()).cloned().collect();
        if !st.current.is_empty() {
            out.push(String::from_utf8_lossy(&st.current).trim_end().to_string());
        }
        let skip = out.len().saturating_sub(STDERR_LINES);
        out.split_off(skip)
    }
}

/// Why the connection was ended by us while reading (shared with the reader guard).
#[derive(Clone, Debug, Default)]
pub struct ReadFault(Arc<Mutex<Option<String>>>);

impl ReadFault {
    pub fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|g| g.clone())
    }

    fn set(&self, why: String) {
        if let Ok(mut g) = self.0.lock() {
            g.get_or_insert(why);
        }
    }
}

/// stdout of a server, failing the read (and so ending the connection) once a single line
/// grows past `limit` bytes: a server that floods is cut off instead of filling memory.
pub struct LineLimit<R> {
    inner: R,
    limit: usize,
    line: usize,
    fault: ReadFault,
}

impl<R> LineLimit<R> {
    pub fn new(inner: R, limit: usize, fault: ReadFault) -> Self {
        LineLimit {
            inner,
            limit,
            line: 0,
            fault,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let res = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = res {
            for &b in &buf.filled()[before..] {
                if b == b'\n' {
                    this.line = 0;
                } else {
                    this.line += 1;
                }
            }
            if this.line > this.limit {
                let why = format!(
                    "it sent a message larger than {} MiB on stdout",
                    this.limit / (1024 * 1024)
                );
                this.fault.set(why.clone());
                // An error read returns no bytes.
                buf.set_filled(before);
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why)));
            }
        }
        res
    }
}

/// A running server process. Dropping it kills its process group.
pub struct Process {
    child: Child,
    pgid: Option<Pid>,
    pub stderr: StderrTail,
    /// The group's record for the next start's sweep, should ikigai die without closing it.
    _tracked: Option<crate::tools::process::Tracked>,
}

/// The environment of a server: the tool environment (provider keys and secret-looking
/// variables removed) with `pass` let through, then `values` set.
pub fn environment(
    policy: &EnvPolicy,
    pass: &[String],
    values: &std::collections::BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = policy.current();
    for name in pass {
        if policy.is_provider_key(name) {
            continue;
        }
        if let Some(v) = crate::environ::var_os(name)
            && !env.iter().any(|(k, _)| k == name.as_str())
        {
            env.push((name.into(), v));
        }
    }
    for (k, v) in values {
        env.retain(|(name, _)| name != k.as_str());
        env.push((k.into(), v.into()));
    }
    env
}

/// Starts the server of a stdio `transport` in `cwd` (its own `cwd` is relative to it).
pub fn spawn(
    transport: &Transport,
    cwd: &Path,
    policy: &EnvPolicy,
    stderr: StderrTail,
) -> io::Result<(Process, ChildStdout, ChildStdin)> {
    let Transport::Stdio {
        command: program,
        args,
        env,
        pass,
        cwd: dir,
    } = transport
    else {
        return Err(io::Error::other("not a stdio server"));
    };
    let dir: PathBuf = match dir {
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    let env = environment(policy, pass, env);
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_os_str());
    // Through the launcher (when installed): the server dies with ikigai, even by SIGKILL,
    // and starts in a session of its own, away from the terminal.
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let explain = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound if !dir.is_dir() => {
            io::Error::new(e.kind(), format!("its cwd {} does not exist", dir.display()))
        }
        io::ErrorKind::NotFound => io::Error::new(e.kind(), format!("`{program}` was not found")),
        _ => io::Error::new(e.kind(), format!("cannot start `{program}`: {e}")),
    };
    // A bare name is looked up in PATH's trusted folders only (never a relative entry or
    // one in the project): what a project's `npx` is stays the user's `npx`.
    let program_path = if program.contains('/') {
        PathBuf::from(program)
    } else {
        crate::trusted_path::find_in(program, path_var, cwd).map_err(io::Error::from)?
    };
    let mut cmd = crate::tools::launcher::command(&program_path, &args, &dir, path_var).map_err(explain)?;
    let (marker, since) = crate::tools::process::new_marker();
    cmd.current_dir(&dir)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env(crate::tools::process::CALL_MARKER, &marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(explain)?;
    let pgid = child.id().map(|p| Pid::from_raw(p as i32));
    let tracked = pgid.map(|p| crate::tools::process::track(p, marker, since));
    let (Some(stdout), Some(stdin), Some(mut err)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(io::Error::other("the server's pipes could not be opened"));
    };
    let tail = stderr.clone();
    tail.start();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = err.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.push(&buf[..n]);
        }
        tail.end();
    });
    Ok((
        Process {
            child,
            pgid,
            stderr,
            _tracked: tracked,
        },
        stdout,
        stdin,
    ))
}

impl Process {
    /// Ends the server: SIGTERM to its group, then SIGKILL after a short grace; reaps it.
    pub async fn close(mut self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGTERM);
            if tokio::time::timeout(TERM_GRACE, self.child.wait()).await.is_err() {
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = self.child.wait().await;
            }
            // Whatever of the group outlived its leader.
            let _ = killpg(pgid, Signal::SIGKILL);
            self.pgid = None;
        }
    }

    /// Resolves when the server's main process has exited, with how it ended.
    pub async fn exited(&mut self) -> String {
        use std::os::unix::process::ExitStatusExt;
        match self.child.wait().await {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("it exited with code {c}"),
                (_, Some(sig)) => format!("it was killed by {}", crate::tools::process::signal_name(sig)),
                _ => "it exited".into(),
            },
            Err(e) => format!("it could not be watched: {e}"),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_tail_keeps_the_last_lines_bounded() {
        let t = StderrTail::default();
        for i in 0..100 {
            t.push(format!("line {i}\n").as_bytes());
        }
        t.push(&[b'x'; 10_000]);
        let lines = t.lines();
        assert_eq!(lines.len(), STDERR_LINES);
        assert_eq!(lines[0], "line 81");
        assert_eq!(lines.last().unwrap().len(), STDERR_LINE_CAP);
    }

    #[tokio::test]
    async fn a_failed_start_waits_for_what_the_server_said_last() {
        // No reader (an HTTP server): nothing to wait for.
        StderrTail::default().ended_within(Duration::from_secs(30)).await;
        let t = StderrTail::default();
        t.start();
        let writer = t.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer.push(b"the last words\n");
            writer.end();
        });
        t.ended_within(Duration::from_secs(30)).await;
        assert_eq!(t.lines(), ["the last words"]);
    }

    #[tokio::test]
    async fn a_line_past_the_limit_fails_the_read() {
        let data = [b"ok\n".as_slice(), &[b'a'; 100]].concat();
        let fault = ReadFault::default();
        let mut r = LineLimit::new(data.as_slice(), 50, fault.clone());
        let mut out = Vec::new();
        let e = r.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(fault.get().unwrap().contains("larger than"));
        let mut ok = LineLimit::new(b"a\nb\nc\n".as_slice(), 2, ReadFault::default());
        let mut out = Vec::new();
        ok.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, b"a\nb\nc\n");
    }

    #[test]
    fn the_environment_is_filtered_then_extended() {
        let policy = EnvPolicy::new(vec!["IKIGAI_TEST_PROVIDER_KEY".into()], Vec::new(), &[]);
        let values = [("SET_HERE".to_string(), "v".to_string())].into_iter().collect();
        // HOME is present in the test environment; a provider key name is never passed.
        let env = environment(&policy, &["IKIGAI_TEST_PROVIDER_KEY".into()], &values);
        assert!(env.iter().any(|(k, v)| k == "SET_HERE" && v == "v"));
        assert!(!env.iter().any(|(k, _)| k == "IKIGAI_TEST_PROVIDER_KEY"));
    }
}
