//! The launcher, through which every tool process starts: the small `ikigai-launch`
//! executable when it is installed beside ikigai (a tool call then pays for a small exec),
//! else a hidden mode of the ikigai binary itself (`ikigai MODE …`, checked first thing in
//! `main`). Both run `exec.rs`: arm the death signal, confine the process when a sandbox
//! is installed (`confine.rs`), then execute the tool. This side finds the launcher, holds
//! the sandbox every tool process gets and the process that holds its private mount table,
//! and builds the command that goes through it; it never prints.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

mod caps;
mod confine;
mod exec;
mod filter;
mod mounts;

use crate::permissions::sandbox_in_force::current_sandbox;
pub use crate::policy::confinement::{Confinement, Namespace};
pub use exec::{CANNOT_EXEC, MODE, Policy, is_launch, run};

/// The small launcher executable's name.
pub const LAUNCHER_NAME: &str = "ikigai-launch";

/// The binary to re-execute as the launcher, once set; `None`: tools start directly
/// (a library user without the ikigai binary).
static EXE: OnceLock<PathBuf> = OnceLock::new();

/// Sets the launcher binary for this process (`locate()` in the binary; tests and benches
/// name a built one). The first call wins.
pub fn install(exe: impl Into<PathBuf>) {
    let _ = EXE.set(exe.into());
}

/// Where the launcher is for the binary at `exe`: `ikigai-launch` beside it (a build
/// tree) or in `../libexec/` (an install), else `exe` itself in launcher mode
/// (`/proc/self/exe`, which still works when the file was replaced meanwhile).
pub fn locate(exe: Option<&Path>) -> PathBuf {
    let executable = |p: &Path| nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok() && p.is_file();
    if let Some(dir) = exe.and_then(Path::parent) {
        for p in [
            dir.join(LAUNCHER_NAME),
            dir.join("../libexec").join(LAUNCHER_NAME),
        ] {
            if executable(&p) {
                return p;
            }
        }
    }
    PathBuf::from("/proc/self/exe")
}

/// The launcher binary, when installed.
pub fn installed() -> Option<&'static Path> {
    EXE.get().map(PathBuf::as_path)
}

/// The arguments that make the launcher run `path` (with `argv0` and `args`) under `policy`.
pub fn arguments(policy: &Policy, path: &Path, argv0: &OsString, args: &[OsString]) -> Vec<OsString> {
    let policy = serde_json::to_string(policy).unwrap_or_else(|_| "{}".into());
    let mut out = Vec::with_capacity(args.len() + 4);
    out.push(OsString::from(MODE));
    out.push(OsString::from(policy));
    out.push(path.as_os_str().to_owned());
    out.push(argv0.clone());
    out.extend(args.iter().cloned());
    out
}

/// A command that runs `program` with `args` through the launcher when one is installed
/// (else directly), unconfined: for the processes the user configured to run with their
/// own rights (MCP servers). It starts in a session of its own, without the terminal, as
/// the leader of a process group whose id is its pid (the caller must not set a group: the
/// launcher does). The caller sets the rest (working directory, environment, stdio). Spawn
/// it from a thread that lives as long as ikigai (the runtime's main thread): the death
/// signal fires when the spawning thread ends. `program` is resolved here (see `resolve`),
/// so a missing one is the same error a direct spawn gives.
pub fn command(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    path_var: Option<&std::ffi::OsStr>,
) -> std::io::Result<tokio::process::Command> {
    Ok(tokio::process::Command::from(build(
        program, args, cwd, path_var, None,
    )?))
}

/// `command` as a blocking `std` command, for ikigai's own helpers (the checkpoints' `git`),
/// spawned and waited for on one thread.
pub fn std_command(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    path_var: Option<&std::ffi::OsStr>,
) -> std::io::Result<std::process::Command> {
    build(program, args, cwd, path_var, None)
}

/// `command` under the installed sandbox (if any), for every tool process (`bash`,
/// external tools). With a sandbox but no launcher to apply it, nothing runs.
pub fn sandboxed_command(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    path_var: Option<&std::ffi::OsStr>,
) -> std::io::Result<tokio::process::Command> {
    let mut sandbox = current_sandbox().map(|s| (*s).clone());
    if sandbox.is_some() && installed().is_none() {
        return Err(std::io::Error::other(
            "sandbox: no launcher to apply the sandbox with; the command was not run",
        ));
    }
    if let Some(s) = sandbox.as_mut() {
        s.namespace = private_mounts(&s.writable).ok();
    }
    Ok(tokio::process::Command::from(build(
        program, args, cwd, path_var, sandbox,
    )?))
}

fn build(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    path_var: Option<&std::ffi::OsStr>,
    sandbox: Option<Confinement>,
) -> std::io::Result<std::process::Command> {
    use std::os::unix::process::CommandExt;
    Ok(match installed() {
        Some(exe) => {
            let path = resolve(program, cwd, path_var)?;
            let policy = Policy {
                parent: std::process::id(),
                sandbox,
                hold: false,
            };
            let mut cmd = std::process::Command::new(exe);
            cmd.args(arguments(&policy, &path, &program.as_os_str().to_owned(), args));
            cmd
        }
        None => {
            // No launcher to start a session: a group of its own, at least.
            let mut cmd = std::process::Command::new(program);
            cmd.args(args).process_group(0);
            cmd
        }
    })
}

/// The process holding the sandbox's private mount table (the launcher in its holding
/// mode), for one set of writable folders; or why this system allows none.
static HOLDER: Mutex<Option<Result<Holder, String>>> = Mutex::new(None);

struct Holder {
    child: std::process::Child,
    writable: Vec<PathBuf>,
    namespace: Namespace,
}

impl Drop for Holder {
    fn drop(&mut self) {
        // Its stdin ends: it exits; reaped here.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The private mount table for tools that may write `writable` (see `mounts.rs`): built
/// once by a holding process, started at the first sandboxed tool, again if it is gone.
/// `Err` says why this system allows none (a mount namespace needs root or user
/// namespaces, which a system or a container may forbid); that answer is kept.
pub fn private_mounts(writable: &[PathBuf]) -> Result<Namespace, String> {
    let mut slot = HOLDER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(Err(why)) = slot.as_ref() {
        return Err(why.clone());
    }
    if let Some(Ok(h)) = slot.as_mut()
        && h.writable == writable
        && matches!(h.child.try_wait(), Ok(None))
    {
        return Ok(h.namespace.clone());
    }
    // Another sandbox, or the holder is gone: a new one (the old one ends as it drops).
    *slot = None;
    match start_holder(writable) {
        Ok(h) => {
            let ns = h.namespace.clone();
            *slot = Some(Ok(h));
            Ok(ns)
        }
        Err(Start::Refused(why)) => {
            *slot = Some(Err(why.clone()));
            Err(why)
        }
        // Not started at all (no launcher, no process): asked again next time.
        Err(Start::NotRun(why)) => Err(why),
    }
}

/// Makes `private_mounts` say no, with `why` (a test's pretence that this system has no
/// user namespaces; see `permissions::sandbox`).
pub fn deny_private_mounts(why: &str) {
    *HOLDER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Err(why.to_string()));
}

enum Start {
    /// The holder ran and could not build the mount table: this system does not allow it.
    Refused(String),
    /// The holder could not be run.
    NotRun(String),
}

fn start_holder(writable: &[PathBuf]) -> Result<Holder, Start> {
    use std::io::{BufRead, Read};
    use std::os::unix::fs::MetadataExt;
    let Some(exe) = installed() else {
        return Err(Start::NotRun("no launcher is installed".into()));
    };
    let policy = Policy {
        parent: std::process::id(),
        sandbox: Some(Confinement {
            mode: "hold".into(),
            writable: writable.to_vec(),
            ..Confinement::default()
        }),
        hold: true,
    };
    let mut child = std::process::Command::new(exe)
        .args(arguments(&policy, Path::new("/"), &OsString::from("hold"), &[]))
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Start::NotRun(format!("cannot run the launcher: {e}")))?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = std::io::BufReader::new(out).read_line(&mut line);
    }
    let pid = child.id();
    let ino = |kind: &str| std::fs::metadata(format!("/proc/{pid}/ns/{kind}")).map(|m| m.ino());
    let mine = |kind: &str| std::fs::metadata(format!("/proc/self/ns/{kind}")).map(|m| m.ino());
    let ready = line.trim() == mounts::READY;
    let namespace = match (ready, ino("user"), ino("mnt"), mine("user")) {
        (true, Ok(user), Ok(mnt), Ok(own_user)) => Namespace {
            pid,
            user: (user != own_user).then_some(user),
            mnt,
        },
        _ => {
            let mut why = String::new();
            drop(child.stdin.take());
            if let Some(mut err) = child.stderr.take() {
                let _ = err.read_to_string(&mut why);
            }
            let status = child.wait();
            let why = why.trim().to_string();
            return Err(Start::Refused(if !why.is_empty() {
                why
            } else {
                format!("the launcher could not hold a mount table ({status:?})")
            }));
        }
    };
    Ok(Holder {
        child,
        writable: writable.to_vec(),
        namespace,
    })
}

/// Where `program` is, as the launcher must be told: a path with a `/` (relative to
/// `cwd`), or the first executable file of that name in `path_var` (the tool's `PATH`).
/// The error is the one a direct spawn would give (not found, permission denied).
pub fn resolve(program: &Path, cwd: &Path, path_var: Option<&std::ffi::OsStr>) -> std::io::Result<PathBuf> {
    use std::io::{Error, ErrorKind};
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file())
            && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
    };
    if program.as_os_str().as_encoded_bytes().contains(&b'/') {
        let p = cwd.join(program);
        return if executable(&p) {
            Ok(p)
        } else if p.exists() {
            Err(Error::new(
                ErrorKind::PermissionDenied,
                format!("{} is not an executable file", p.display()),
            ))
        } else {
            Err(Error::new(
                ErrorKind::NotFound,
                format!("{} does not exist", p.display()),
            ))
        };
    }
    let search = path_var.unwrap_or(std::ffi::OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    for dir in std::env::split_paths(search) {
        let dir = if dir.as_os_str().is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(dir)
        };
        let p = dir.join(program);
        if executable(&p) {
            return Ok(p);
        }
    }
    Err(Error::new(
        ErrorKind::NotFound,
        format!("{} is not in PATH", program.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_resolve_like_a_spawn_would() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("t");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let path = std::ffi::OsString::from(format!("/nonexistent:{}", bin.display()));
        let err = resolve(Path::new("t"), dir.path(), Some(&path));
        assert_eq!(
            err.unwrap_err().kind(),
            std::io::ErrorKind::NotFound,
            "not executable yet"
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(resolve(Path::new("t"), dir.path(), Some(&path)).unwrap(), tool);
        assert_eq!(resolve(Path::new("bin/t"), dir.path(), None).unwrap(), tool);
        let missing = resolve(Path::new("./nope"), dir.path(), None).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o644)).unwrap();
        let denied = resolve(&tool, dir.path(), None).unwrap_err();
        assert_eq!(denied.kind(), std::io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn the_small_launcher_is_found_beside_the_binary_or_in_libexec() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join("ikigai");
        assert_eq!(
            locate(Some(&exe)),
            Path::new("/proc/self/exe"),
            "none: its own mode"
        );
        assert_eq!(locate(None), Path::new("/proc/self/exe"));
        let libexec = root.path().join("libexec");
        std::fs::create_dir_all(&libexec).unwrap();
        let installed = libexec.join(LAUNCHER_NAME);
        std::fs::write(&installed, "").unwrap();
        std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate(Some(&exe)), bin.join("../libexec").join(LAUNCHER_NAME));
        let beside = bin.join(LAUNCHER_NAME);
        std::fs::write(&beside, "").unwrap();
        std::fs::set_permissions(&beside, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate(Some(&exe)), beside);
    }

    #[test]
    fn the_policy_travels_as_versioned_json_in_the_arguments() {
        let p = Policy {
            parent: 42,
            sandbox: None,
            hold: false,
        };
        let args = arguments(
            &p,
            Path::new("/bin/sh"),
            &"sh".into(),
            &["-c".into(), "true".into()],
        );
        assert!(is_launch(&[OsString::from("ikigai"), args[0].clone()]));
        assert_eq!(
            serde_json::from_str::<Policy>(&args[1].to_string_lossy()).unwrap(),
            p
        );
        assert_eq!(&args[2..], &["/bin/sh", "sh", "-c", "true"].map(OsString::from));
        // Fields added later default, so an older launcher policy still reads.
        assert_eq!(serde_json::from_str::<Policy>("{}").unwrap(), Policy::default());
        // A sandbox travels under the same (versioned) mode name.
        let boxed = Policy {
            parent: 1,
            sandbox: Some(Confinement {
                mode: "read-only".into(),
                namespace: Some(Namespace {
                    pid: 7,
                    user: None,
                    mnt: 4_026_531_841,
                }),
                ioctl_dev: true,
                ..Confinement::default()
            }),
            hold: false,
        };
        let args = arguments(&boxed, Path::new("/bin/true"), &"true".into(), &[]);
        assert_eq!(args[0], MODE);
        assert_eq!(
            serde_json::from_str::<Policy>(&args[1].to_string_lossy()).unwrap(),
            boxed
        );
        assert!(serde_json::from_str::<Policy>(r#"{"unknown":1}"#).is_err());
        // A confinement field this launcher does not know is refused, never ignored.
        assert!(serde_json::from_str::<Policy>(r#"{"sandbox":{"mode":"x","newer_rule":true}}"#).is_err());
    }
}
