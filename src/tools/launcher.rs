//! The launcher: a hidden mode of the ikigai binary through which every tool process
//! starts (`ikigai MODE POLICY PATH ARGV0 ARGS…`). It applies the policy to itself — today
//! the death signal: the tool is killed with SIGKILL when the ikigai thread that started
//! it ends, even by SIGKILL — and then executes the tool in its place (same pid, same
//! process group, the environment and working directory it was given). The policy is a
//! small JSON object (the mode's name carries its version), so later restrictions (a sandbox) travel the same way.
//! Runs before anything else in `main`; never loads a config and never touches the
//! terminal except to say why the tool could not be executed.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// `argv[1]` of the launcher mode. Not an option anyone would type.
pub const MODE: &str = "__ikigai-launch-v1";
/// The exit code when the tool could not be executed (as a shell says "not found").
pub const CANNOT_EXEC: u8 = 127;

/// What the launcher applies to itself before it executes the tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    /// The process that started the launcher; if it is already gone when the death
    /// signal is armed, the launcher exits instead of running the tool unwatched.
    pub parent: u32,
}

/// The binary to re-execute as the launcher, once set; `None`: tools start directly
/// (a library user without the ikigai binary).
static EXE: OnceLock<PathBuf> = OnceLock::new();

/// Sets the launcher binary for this process (the binary itself: `/proc/self/exe`; tests
/// and benches name the built `ikigai`). The first call wins.
pub fn install(exe: impl Into<PathBuf>) {
    let _ = EXE.set(exe.into());
}

/// The launcher binary, when installed.
pub fn installed() -> Option<&'static Path> {
    EXE.get().map(PathBuf::as_path)
}

/// True when this process was started as the launcher.
pub fn is_launch(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == MODE)
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
/// (else directly), for any process ikigai starts on the user's behalf (tools, MCP
/// servers). The caller sets the rest (working directory, environment, stdio, group).
/// Spawn it from a thread that lives as long as ikigai (the runtime's main thread): the
/// death signal fires when the spawning thread ends. `program` is resolved here (see
/// `resolve`), so a missing one is the same error a direct spawn gives.
pub fn command(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    path_var: Option<&std::ffi::OsStr>,
) -> std::io::Result<tokio::process::Command> {
    Ok(match installed() {
        Some(exe) => {
            let path = resolve(program, cwd, path_var)?;
            let policy = Policy {
                parent: std::process::id(),
            };
            let mut cmd = tokio::process::Command::new(exe);
            cmd.args(arguments(&policy, &path, &program.as_os_str().to_owned(), args));
            cmd
        }
        None => {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            cmd
        }
    })
}

/// The launcher mode: applies the policy and executes the tool. Returns only when that
/// failed, with the exit code to end with.
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
    if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL) {
        eprintln!("ikigai: cannot arm the launcher's death signal: {e}");
        return CANNOT_EXEC;
    }
    // The parent may have died before the signal was armed: then nobody watches the tool.
    if policy.parent != 0 && nix::unistd::getppid().as_raw() as u32 != policy.parent {
        return CANNOT_EXEC;
    }
    // `exec` resets the signal dispositions std changed (SIGPIPE) and the signal mask,
    // so the tool starts as if spawned directly.
    let err = std::process::Command::new(&path).arg0(argv0).args(it).exec();
    eprintln!("ikigai: cannot run {}: {err}", Path::new(&path).display());
    CANNOT_EXEC
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
    fn the_policy_travels_as_versioned_json_in_the_arguments() {
        let p = Policy { parent: 42 };
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
    }
}
