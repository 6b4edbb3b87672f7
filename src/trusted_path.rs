//! Where ikigai finds the programs it starts by name on its own behalf: `git` for the
//! checkpoints, `bash` for the `bash` tool, an MCP server's `command` without a `/`. Only
//! `PATH`'s absolute folders count, and none inside the working directory (nor a program
//! whose real file is there): a relative entry (`node_modules/.bin`, `.`, an empty one)
//! or one in the project would let a repository, or a command the sandbox lets write in
//! the project, choose what ikigai runs — for checkpoints outside any sandbox and without
//! a question. Run in `/`, every absolute entry counts (the working directory is the
//! whole machine). Each answer is kept for the life of the process (resolved once).
//! Reads the file system; never runs anything.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Why a program was not found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TrustedPathError {
    /// No trusted `PATH` folder holds an executable file of that name.
    #[error(
        "`{name}` was not found in PATH's absolute folders outside the working directory \
         ({skipped}); ikigai runs its own programs only from those"
    )]
    NotFound { name: String, skipped: String },
}

impl From<TrustedPathError> for std::io::Error {
    fn from(e: TrustedPathError) -> Self {
        std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string())
    }
}

type Key = (String, Option<OsString>, PathBuf);

/// Answers already given: (name, PATH, working directory) → program.
static FOUND: Mutex<Option<HashMap<Key, PathBuf>>> = Mutex::new(None);

/// `name` found in ikigai's own `PATH`, for a process ikigai starts in `workdir`.
pub fn find(name: &str, workdir: &Path) -> Result<PathBuf, TrustedPathError> {
    find_in(name, crate::environ::var_os("PATH").as_deref(), workdir)
}

/// `name` (no `/`) found in `path_var`'s trusted folders (see the module); the first
/// executable regular file wins, as in a shell. Resolved once per (name, PATH, folder).
pub fn find_in(name: &str, path_var: Option<&OsStr>, workdir: &Path) -> Result<PathBuf, TrustedPathError> {
    let key: Key = (
        name.to_string(),
        path_var.map(OsStr::to_owned),
        workdir.to_path_buf(),
    );
    if let Some(found) = FOUND
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&key))
    {
        return Ok(found.clone());
    }
    let found = search(name, path_var, workdir)?;
    FOUND
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, found.clone());
    Ok(found)
}

/// The search itself, uncached.
fn search(name: &str, path_var: Option<&OsStr>, workdir: &Path) -> Result<PathBuf, TrustedPathError> {
    let work = workdir.canonicalize().unwrap_or_else(|_| workdir.to_path_buf());
    let everything = work == Path::new("/");
    let inside = |p: &Path| !everything && p.starts_with(&work);
    let mut skipped: Vec<String> = Vec::new();
    let fallback = OsStr::new("/usr/local/bin:/usr/bin:/bin");
    if !name.contains('/') && !name.is_empty() {
        for entry in std::env::split_paths(path_var.unwrap_or(fallback)) {
            if !entry.is_absolute() {
                let shown = if entry.as_os_str().is_empty() {
                    "an empty entry".to_string()
                } else {
                    format!("relative {}", entry.display())
                };
                skipped.push(shown);
                continue;
            }
            let real_dir = entry.canonicalize().unwrap_or_else(|_| entry.clone());
            if inside(&entry) || inside(&real_dir) {
                skipped.push(format!("{} (in the working directory)", entry.display()));
                continue;
            }
            let candidate = entry.join(name);
            let Ok(real) = candidate.canonicalize() else {
                continue;
            };
            if !is_executable_file(&real) {
                continue;
            }
            if inside(&real) {
                skipped.push(format!(
                    "{} (leads into the working directory)",
                    candidate.display()
                ));
                continue;
            }
            return Ok(candidate);
        }
    }
    Err(TrustedPathError::NotFound {
        name: name.to_string(),
        skipped: if skipped.is_empty() {
            "none skipped".to_string()
        } else {
            format!("skipped: {}", skipped.join(", "))
        },
    })
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
        && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn program(dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn only_absolute_entries_outside_the_working_directory_count() {
        let t = tempfile::tempdir().unwrap();
        let proj = t.path().join("proj");
        let system = t.path().join("system/bin");
        let real = program(&system, "tool");
        // Planted in the project, in every way a PATH can reach it.
        program(&proj.join("node_modules/.bin"), "tool");
        program(&proj, "tool");
        program(&proj.join("bin"), "tool");
        std::os::unix::fs::symlink(proj.join("bin"), t.path().join("linked-bin")).unwrap();
        let other = t.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(proj.join("bin/tool"), other.join("tool")).unwrap();
        for planted in [
            "node_modules/.bin".to_string(),
            ".".to_string(),
            String::new(),
            "./bin".to_string(),
            proj.join("bin").display().to_string(),
            t.path().join("linked-bin").display().to_string(),
            other.display().to_string(),
            format!("{}/system/../proj/bin", t.path().display()),
        ] {
            let path = OsString::from(format!("{planted}:{}", system.display()));
            assert_eq!(
                search("tool", Some(&path), &proj),
                Ok(real.clone()),
                "PATH entry {planted:?}"
            );
        }
        // Nothing but planted entries: not found, and the message says what was skipped.
        let path = OsString::from("node_modules/.bin::.");
        let e = search("tool", Some(&path), &proj).unwrap_err();
        assert!(e.to_string().contains("relative node_modules/.bin"), "{e}");
        assert!(e.to_string().contains("an empty entry"), "{e}");
        // A name with a slash is never looked up.
        assert!(search("bin/tool", Some(&path), &proj).is_err());
        // Outside the project, the same folder is an ordinary one.
        let path = OsString::from(proj.join("bin"));
        assert_eq!(
            search("tool", Some(&path), t.path().join("elsewhere").as_path()),
            Ok(proj.join("bin/tool"))
        );
        // Run in `/`, absolute entries count.
        assert_eq!(
            search("tool", Some(&path), Path::new("/")),
            Ok(proj.join("bin/tool"))
        );
    }

    #[test]
    fn an_answer_is_kept() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("bin");
        let p = program(&bin, "kept-tool");
        let path = OsString::from(&bin);
        let work = t.path().join("w");
        assert_eq!(find_in("kept-tool", Some(&path), &work), Ok(p.clone()));
        std::fs::remove_file(&p).unwrap();
        assert_eq!(find_in("kept-tool", Some(&path), &work), Ok(p));
    }
}
