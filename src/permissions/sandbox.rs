//! The OS sandbox's policy (Linux): the mode the user chose (`sandbox`, `sandbox_network`,
//! `writable_roots`), checked against what this kernel can enforce at start, and resolved
//! into the `Confinement` the launcher applies to every tool process (and the built-in
//! file tools write under, `sandbox_writes`). A mode the kernel cannot enforce is refused
//! here, before anything runs; never downgraded. Owns the private temporary folder of
//! `read-only`. Never prints, never applies anything to ikigai itself (the launcher does,
//! in the tool's process).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::kernel::{self, Kernel, MIN_ABI};
use super::sandbox_in_force::{sandbox, set_sandbox};
use crate::policy::confinement::Confinement;
pub use crate::policy::sandbox::{SandboxMode, Settings};

/// Pretends the kernel's Landlock ABI is at most this (a number), so a test can prove the
/// refusal on a kernel that could enforce the sandbox. Undocumented; it can only lower.
pub const PRETEND_ABI_VAR: &str = "IKIGAI_SANDBOX_PRETEND_ABI";

/// Set (to anything), pretends this system allows no private mount table for tools (no
/// user namespaces), so a test can see what the sandbox still covers then. Undocumented;
/// it can only take away.
pub const PRETEND_NO_NAMESPACES_VAR: &str = "IKIGAI_SANDBOX_PRETEND_NO_NAMESPACES";

/// Why the sandbox cannot be set up as configured. The user's to fix (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel (or the system) cannot enforce the mode.
    #[error(
        "sandbox = \"{mode}\" cannot be enforced here: {why}. Nothing was run. Set `sandbox = \"off\"` in the config (or pass `--sandbox off`) to run commands without the sandbox"
    )]
    Unsupported { mode: SandboxMode, why: String },
    /// A `writable_roots` entry is not a folder that exists.
    #[error("invalid setting `writable_roots`: {path}: {why}")]
    Root { path: PathBuf, why: String },
    /// The private temporary folder or the working directory could not be set up.
    #[error("sandbox: {0}")]
    Setup(String),
}

/// `read-only`'s private temporary folder, removed by `cleanup`.
static PRIVATE_TMP: Mutex<Option<tempfile::TempDir>> = Mutex::new(None);

/// Checks the settings against this kernel and installs the sandbox for every tool process
/// started from now on (`off`: none). `cwd` is the working directory; `env` reads HOME
/// (for `~/` in `writable_roots`) and the pretend-ABI test setting.
pub fn install(
    settings: &Settings,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), SandboxError> {
    let pretend = env(PRETEND_ABI_VAR).and_then(|v| v.trim().parse::<u8>().ok());
    let confinement = resolve(settings, cwd, env, &|| kernel::probe(pretend))?;
    set_sandbox(confinement);
    Ok(())
}

/// The confinement for `settings` in `cwd`, or why this system cannot enforce it. `off`:
/// `None`. Creates `read-only`'s private temporary folder.
pub fn resolve(
    settings: &Settings,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    kernel: &dyn Fn() -> Kernel,
) -> Result<Option<Confinement>, SandboxError> {
    let mode = settings.mode;
    if mode == SandboxMode::Off {
        return Ok(None);
    }
    if !cfg!(target_os = "linux") {
        return Err(SandboxError::Unsupported {
            mode,
            why: "the sandbox is only available on Linux for now".into(),
        });
    }
    let k = kernel();
    if k.landlock_abi < MIN_ABI {
        let why = match k.landlock_abi {
            0 => format!(
                "this kernel has no Landlock (not built in, or not enabled at boot: add `landlock` to the `lsm=` boot parameter); the sandbox needs Landlock ABI {MIN_ABI} (Linux 6.2 or newer)"
            ),
            n => format!(
                "this kernel's Landlock ABI is {n}, and the sandbox needs ABI {MIN_ABI} (Linux 6.2 or newer), the first that can deny truncating files"
            ),
        };
        return Err(SandboxError::Unsupported { mode, why });
    }
    if !settings.network && !k.seccomp {
        return Err(SandboxError::Unsupported {
            mode,
            why: "this kernel has no seccomp, which `sandbox_network = false` needs to block the network"
                .into(),
        });
    }
    let roots = writable_roots(&settings.writable_roots, env)?;
    let canonical = |p: &Path, what: &str| {
        p.canonicalize()
            .map_err(|e| SandboxError::Setup(format!("{what} {}: {e}", p.display())))
    };
    let (writable, tmpdir) = match mode {
        SandboxMode::WorkspaceWrite => {
            let mut writable = vec![
                canonical(cwd, "the working directory")?,
                canonical(&std::env::temp_dir(), "the temporary directory")?,
            ];
            writable.extend(roots);
            (writable, None)
        }
        SandboxMode::ReadOnly | SandboxMode::Off => {
            let tmp = private_tmp()?;
            (vec![tmp.clone()], Some(tmp))
        }
    };
    let mut unique: Vec<PathBuf> = Vec::new();
    for w in writable {
        if !unique.contains(&w) {
            unique.push(w);
        }
    }
    Ok(Some(Confinement {
        mode: mode.as_str().to_string(),
        writable: unique,
        network: settings.network,
        tmpdir,
        // Made when the first tool starts (`launcher::private_mounts`).
        namespace: None,
        ioctl_dev: k.landlock_abi >= 5,
        scoped_signals: k.landlock_abi >= 6,
    }))
}

/// `writable_roots` as absolute, existing, canonical folders (`~/` is the home folder).
fn writable_roots(
    roots: &[PathBuf],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<PathBuf>, SandboxError> {
    let mut out = Vec::new();
    for root in roots {
        let err = |why: &str| SandboxError::Root {
            path: root.clone(),
            why: why.to_string(),
        };
        let path = match root.strip_prefix("~") {
            Ok(rest) => match env("HOME").filter(|h| !h.is_empty()) {
                Some(home) => PathBuf::from(home).join(rest),
                None => return Err(err("`~` needs HOME to be set")),
            },
            Err(_) => root.clone(),
        };
        if !path.is_absolute() {
            return Err(err("must be an absolute path (or start with `~/`)"));
        }
        let canonical = path.canonicalize().map_err(|e| err(&e.to_string()))?;
        if !canonical.is_dir() {
            return Err(err("is not a folder"));
        }
        out.push(canonical);
    }
    Ok(out)
}

/// A fresh 0700 folder under the temporary directory, kept until `cleanup`.
fn private_tmp() -> Result<PathBuf, SandboxError> {
    let mut slot = PRIVATE_TMP.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = slot.as_ref() {
        return Ok(dir.path().to_path_buf());
    }
    let dir = tempfile::Builder::new()
        .prefix("ikigai-sandbox-")
        .tempdir()
        .map_err(|e| SandboxError::Setup(format!("cannot create a private temporary folder: {e}")))?;
    let path = dir
        .path()
        .canonicalize()
        .map_err(|e| SandboxError::Setup(format!("{}: {e}", dir.path().display())))?;
    *slot = Some(dir);
    Ok(path)
}

/// Removes `read-only`'s private temporary folder (at exit).
pub fn cleanup() {
    PRIVATE_TMP.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// What the sandbox `c` covers on this system beyond writes and the network, and what it
/// does not (each a short phrase), given whether tools get the private mount table
/// (`launcher::private_mounts`). For `ikigai sandbox`.
pub fn coverage(c: &Confinement, mounts: &Result<(), String>) -> (Vec<String>, Vec<String>) {
    let mut covered = Vec::new();
    let mut missing = Vec::new();
    match mounts {
        Ok(()) => covered.push(
            "metadata outside them unchangeable (a private mount table: chmod, chown, touch -d, extended attributes, links)"
                .to_string(),
        ),
        Err(why) => missing.push(format!(
            "chmod, chown, touch -d and extended attributes on files outside them, and reading the terminal ikigai runs in by its path ({why}); set-user/group-ID bits are still refused"
        )),
    }
    covered.push("no set-user/group-ID bits, device nodes or io_uring".to_string());
    if c.ioctl_dev {
        covered.push("no device ioctls".to_string());
    } else {
        missing.push("ioctls on devices opened for reading (Landlock ABI 5 needed, Linux 6.10)".to_string());
    }
    if c.scoped_signals {
        covered.push("no signals to processes outside the sandbox".to_string());
    } else {
        missing.push("signals to your other processes (Landlock ABI 6 needed, Linux 6.12)".to_string());
    }
    covered.push(
        "other processes' memory, environment and open files unreadable; no terminal; root keeps only ordinary capabilities"
            .to_string(),
    );
    (covered, missing)
}

/// Whether a tool process under the installed sandbox may write `path` (absolute); true
/// when there is no sandbox. For a decision that must match what the kernel will do.
pub fn allows_write(path: &Path) -> bool {
    match sandbox() {
        None => true,
        Some(c) => super::sandbox_denials::writable(&c, path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(abi: u8) -> impl Fn() -> Kernel {
        move || Kernel {
            landlock_abi: abi,
            seccomp: true,
        }
    }

    fn settings(mode: SandboxMode) -> Settings {
        Settings {
            mode,
            ..Settings::default()
        }
    }

    #[test]
    fn off_confines_nothing_whatever_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let c = resolve(&settings(SandboxMode::Off), dir.path(), &|_| None, &kernel(0)).unwrap();
        assert_eq!(c, None);
    }

    #[test]
    fn an_old_or_missing_landlock_is_refused_naming_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        for abi in [0, 1, 2] {
            let e = resolve(
                &settings(SandboxMode::WorkspaceWrite),
                dir.path(),
                &|_| None,
                &kernel(abi),
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("sandbox = \"workspace-write\" cannot be enforced"),
                "{e}"
            );
            assert!(e.contains("sandbox = \"off\""), "{e}");
        }
    }

    #[test]
    fn workspace_write_allows_the_folder_temp_and_roots() {
        let dir = tempfile::tempdir().unwrap();
        let extra = tempfile::tempdir().unwrap();
        let s = Settings {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            writable_roots: vec![extra.path().to_path_buf()],
        };
        let c = resolve(&s, dir.path(), &|_| None, &kernel(3)).unwrap().unwrap();
        assert_eq!(c.mode, "workspace-write");
        assert!(c.writable.contains(&dir.path().canonicalize().unwrap()));
        assert!(c.writable.contains(&std::env::temp_dir().canonicalize().unwrap()));
        assert!(c.writable.contains(&extra.path().canonicalize().unwrap()));
        assert!(!c.network);
        assert_eq!(c.tmpdir, None);
    }

    #[test]
    fn read_only_writes_only_a_private_temp_folder() {
        let dir = tempfile::tempdir().unwrap();
        let c = resolve(
            &settings(SandboxMode::ReadOnly),
            dir.path(),
            &|_| None,
            &kernel(7),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.writable.len(), 1);
        let tmp = c.tmpdir.clone().unwrap();
        assert_eq!(c.writable[0], tmp);
        assert!(tmp.is_dir());
        assert_ne!(tmp, std::env::temp_dir().canonicalize().unwrap());
        cleanup();
        assert!(!tmp.exists(), "removed at exit");
    }

    #[test]
    fn bad_writable_roots_are_named() {
        let dir = tempfile::tempdir().unwrap();
        for (root, says) in [
            ("relative/dir", "absolute"),
            ("/nonexistent/ikigai-root", "No such file"),
            ("~/x", "HOME"),
        ] {
            let s = Settings {
                mode: SandboxMode::WorkspaceWrite,
                network: true,
                writable_roots: vec![root.into()],
            };
            let e = resolve(&s, dir.path(), &|_| None, &kernel(3))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("writable_roots") && e.contains(root) && e.contains(says),
                "{e}"
            );
        }
        let home = dir.path().to_str().unwrap().to_string();
        std::fs::create_dir(dir.path().join("cache")).unwrap();
        let s = Settings {
            mode: SandboxMode::WorkspaceWrite,
            network: true,
            writable_roots: vec!["~/cache".into()],
        };
        let c = resolve(
            &s,
            dir.path(),
            &|k| (k == "HOME").then(|| home.clone()),
            &kernel(3),
        )
        .unwrap()
        .unwrap();
        assert!(
            c.writable
                .contains(&dir.path().join("cache").canonicalize().unwrap())
        );
    }

    #[test]
    fn the_kernel_features_are_used_where_the_kernel_has_them_and_said_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let ws = settings(SandboxMode::WorkspaceWrite);
        for (abi, ioctl_dev, scoped) in [
            (3, false, false),
            (5, true, false),
            (6, true, true),
            (9, true, true),
        ] {
            let c = resolve(&ws, dir.path(), &|_| None, &kernel(abi))
                .unwrap()
                .unwrap();
            assert_eq!((c.ioctl_dev, c.scoped_signals), (ioctl_dev, scoped), "ABI {abi}");
            assert_eq!(c.namespace, None, "joined when a tool starts");
        }
        let c = resolve(&ws, dir.path(), &|_| None, &kernel(6)).unwrap().unwrap();
        let (covered, missing) = coverage(&c, &Ok(()));
        assert!(missing.is_empty(), "{missing:?}");
        assert!(
            covered.iter().any(|c| c.contains("private mount table")),
            "{covered:?}"
        );
        let old = resolve(&ws, dir.path(), &|_| None, &kernel(3)).unwrap().unwrap();
        let (covered, missing) = coverage(&old, &Err("no user namespaces".into()));
        assert!(
            !covered.iter().any(|c| c.contains("private mount table")),
            "{covered:?}"
        );
        let missing = missing.join("; ");
        for says in [
            "chmod, chown, touch -d",
            "no user namespaces",
            "still refused",
            "ABI 5",
            "ABI 6",
        ] {
            assert!(missing.contains(says), "{says}: {missing}");
        }
    }

    #[test]
    fn the_real_kernel_is_probed_without_restricting_us() {
        // Creating rule sets asks the kernel and restricts nothing: we can still write here.
        let abi = kernel::landlock_abi();
        assert!(abi <= 6);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("still-writable"), "x").unwrap();
    }
}
