//! The launcher's own side: what it does once started (`MODE POLICY PATH ARGV0 ARGS…`):
//! applies the policy to itself — the death signal (SIGKILL when the ikigai thread that
//! started it ends, even by SIGKILL), a session of its own (no controlling terminal; its
//! process group, whose id is its pid, is the one ikigai kills), then the sandbox when one
//! is asked for (`confine`), or without one the refusal to type into a terminal — then
//! executes the tool in its place (same pid, same session and group, the environment and
//! working directory it was given). The policy is a small JSON object (the mode's name
//! carries its version: a launcher of another version refuses it, and never runs a tool
//! with less than ikigai asked for). Self-contained (std, nix, rustix, serde, and
//! `confine` with its parts): compiled into `ikigai` (its launcher mode) and into the
//! small `ikigai-launch` executable. Never loads a config and never touches the terminal
//! except to say why the tool could not be executed; a sandbox it cannot enforce means the
//! tool does not run.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Confinement;
use super::confine;

/// `argv[1]` of the launcher mode. Not an option anyone would type. Version 3: the launcher
/// starts a session of its own (its caller does not make it a group leader).
pub const MODE: &str = "__ikigai-launch-v3";
/// The exit code when the tool could not be executed (as a shell says "not found").
pub const CANNOT_EXEC: u8 = 127;

/// What the launcher applies to itself before it executes the tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// The process that started the launcher; if it is already gone when the death
    /// signal is armed, the launcher exits instead of running the tool unwatched.
    pub parent: u32,
    /// The sandbox to apply before the tool runs; `None`: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Confinement>,
    /// Build the sandbox's private mount table for `sandbox.writable` and hold it until
    /// stdin ends (`mounts::hold`); nothing is executed. The holder has no death signal: it
    /// ends with ikigai's end of its stdin, whichever thread started it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hold: bool,
}

/// True when this process was started as the launcher.
pub fn is_launch(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == MODE)
}

/// The launcher mode: applies the policy and executes the tool. Returns only when that
/// failed (or when holding ended), with the exit code to end with.
pub fn run(args: Vec<OsString>) -> u8 {
    let mut it = args.into_iter().skip(2);
    let (Some(policy), Some(path), Some(argv0)) = (it.next(), it.next(), it.next()) else {
        eprintln!("ikigai: the launcher was started without a tool");
        return 2;
    };
    let policy: Policy = match serde_json::from_str(&policy.to_string_lossy()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ikigai: the launcher's policy is invalid: {e}");
            return 2;
        }
    };
    if policy.hold {
        let _ = nix::unistd::setsid();
        return match &policy.sandbox {
            Some(s) => super::mounts::hold(&s.writable),
            None => 2,
        };
    }
    if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL) {
        eprintln!("ikigai: cannot arm the launcher's death signal: {e}");
        return CANNOT_EXEC;
    }
    // The parent may have died before the signal was armed: then nobody watches the tool.
    if policy.parent != 0 && nix::unistd::getppid().as_raw() as u32 != policy.parent {
        return CANNOT_EXEC;
    }
    // No controlling terminal: the tool cannot open /dev/tty, and the kernel refuses it
    // TIOCSTI on any other terminal (unless it is root, which the filter refuses below).
    if let Err(e) = nix::unistd::setsid() {
        eprintln!("ikigai: cannot start the tool in a session of its own: {e}; it was not run");
        return CANNOT_EXEC;
    }
    let mut cmd = std::process::Command::new(&path);
    match &policy.sandbox {
        Some(sandbox) => {
            if let Err(e) = confine::apply(sandbox) {
                eprintln!(
                    "ikigai: sandbox: cannot confine the command ({e}); it was not run. `sandbox = \"off\"` runs commands without the sandbox"
                );
                return CANNOT_EXEC;
            }
            if let Some(tmp) = &sandbox.tmpdir {
                cmd.env("TMPDIR", tmp);
            }
        }
        None => {
            if let Err(e) = confine::terminal_only() {
                eprintln!("ikigai: cannot keep the command off the terminal ({e}); it was not run");
                return CANNOT_EXEC;
            }
        }
    }
    // `exec` resets the signal dispositions std changed (SIGPIPE) and the signal mask,
    // so the tool starts as if spawned directly.
    let err = cmd.arg0(argv0).args(it).exec();
    eprintln!("ikigai: cannot run {}: {err}", Path::new(&path).display());
    CANNOT_EXEC
}
