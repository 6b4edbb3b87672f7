//! The `bash` tool: runs `bash -c COMMAND` in its own process group with stdout and stderr
//! on one pipe (so they interleave as produced), capped while read. On timeout, on return
//! and when the call is dropped the whole process group is killed with SIGKILL.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};

use async_trait::async_trait;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::Command;

use super::output::CappedBuf;
use super::params::Params;
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};

const CHUNK: usize = 64 * 1024;

pub struct Bash;

#[async_trait]
impl Tool for Bash {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "bash".into(),
            description: "Run a shell command and return its output and exit code.\n\
                Runs `bash -c` in the working directory and returns its combined stdout and stderr (interleaved as printed) and exit code. Stdin is \
                empty (/dev/null), so interactive prompts fail instead of waiting. The command \
                is killed, with everything it started, when it exceeds the tool timeout; \
                background jobs (`cmd &`) are killed when the command returns. A nonzero exit \
                code is a normal result, not an error; a process killed by signal N reports \
                128+N and names the signal."
                .into(),
            parameters: vec![ParamSpec::new(
                "command",
                "string",
                "The command line, e.g. `cargo test 2>&1 | tail -n 50`.",
                true,
            )],
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let schema = self.schema();
        let p = Params::new(&args, &schema)?;
        let command = p.non_empty_string("command")?;
        run(command, ctx).await
    }
}

/// Kills the process group when dropped (on cancel). The group is always killed while the
/// main process is still unreaped, so its id cannot have been reused by then.
struct GroupGuard {
    pgid: Pid,
    armed: bool,
}

impl GroupGuard {
    fn kill(&mut self) {
        if self.armed {
            // ESRCH: every member has already exited.
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }

    /// Called once the main process is reaped: its id may now be reused.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
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

fn crashed(what: &str, e: io::Error) -> ToolError {
    ToolError::Crashed(format!("bash: {what}: {e}"))
}

async fn run(command: &str, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let (reader, writer) = io::pipe().map_err(|e| crashed("cannot create a pipe", e))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| crashed("cannot create a pipe", e))?;
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.cwd)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0)
        .kill_on_drop(true);
    let spawned = cmd.spawn();
    // Close our copies of the pipe's write end so the reader sees EOF when the group is done.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return Ok(ToolOutput::error(format!(
                "Cannot run bash in {}: {e}",
                ctx.cwd.display()
            )));
        }
    };
    let pid = child
        .id()
        .ok_or_else(|| ToolError::Crashed("bash exited before it could be watched".into()))?;
    let pid = Pid::from_raw(pid as i32);
    let mut group = GroupGuard {
        pgid: pid,
        armed: true,
    };
    let mut rx = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| crashed("cannot watch the output pipe", e))?;

    let mut out = CappedBuf::new(ctx.max_output_size);
    let mut chunk = vec![0u8; CHUNK];
    let mut eof = false;
    let deadline = tokio::time::sleep(ctx.timeout);
    tokio::pin!(deadline);
    let main_exit = exited(pid);
    tokio::pin!(main_exit);
    let finished = loop {
        tokio::select! {
            r = rx.read(&mut chunk), if !eof => match r {
                Ok(0) => eof = true,
                Ok(n) => {
                    out.push(&chunk[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            },
            () = &mut main_exit => break true,
            _ = &mut deadline => break false,
        }
    };
    // Background jobs and grandchildren go with the main process; then take what they wrote.
    group.kill();
    if !eof {
        drain(&rx, &mut out, &mut chunk);
    }
    let status = child.wait().await;
    group.disarm();

    if !finished {
        let capped = out.finish();
        return Err(ToolError::Timeout {
            message: format!(
                "Command timed out after {}s; it and every process it started were killed",
                ctx.timeout.as_secs_f64()
            ),
            partial_output: capped.text,
        });
    };
    let status = status.map_err(|e| crashed("cannot wait for the command", e))?;
    Ok(finish(status, out))
}

/// Reads what is already in the pipe without waiting for writers that may never close it.
fn drain(rx: &pipe::Receiver, out: &mut CappedBuf, chunk: &mut [u8]) {
    loop {
        match nix::unistd::read(rx.as_fd(), chunk) {
            Ok(0) => return,
            Ok(n) => {
                out.push(&chunk[..n]);
            }
            Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

fn finish(status: ExitStatus, out: CappedBuf) -> ToolOutput {
    let capped = out.finish();
    let mut text = capped.text.clone();
    let (code, signal) = match (status.code(), status.signal()) {
        (Some(c), _) => (c, None),
        (None, Some(s)) => (128 + s, Some(signal_name(s))),
        (None, None) => (-1, None),
    };
    if let Some(name) = &signal {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[terminated by signal {name}]"));
    }
    let mut result = Map::new();
    result.insert("output".into(), Value::String(text));
    result.insert("exit_code".into(), json!(code));
    capped.mark(&mut result);
    let summary = match signal {
        Some(name) => format!("exit {code} ({name})"),
        None => format!("exit {code}"),
    };
    ToolOutput::new(Value::Object(result), summary)
}

fn signal_name(n: i32) -> String {
    Signal::try_from(n).map_or_else(|_| format!("signal {n}"), |s| s.as_str().to_string())
}
