//! Filesystem helpers shared by the tools: resolving a path against the tool context,
//! turning `io::Error`s into precise messages, and the atomic write used by file_write and
//! file_edit. Knows no tool and produces no tool results.

use std::fs::{self, File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ToolContext;

/// `given` as an absolute path: relative paths resolve against `ctx.cwd`; `~/` is home.
pub(crate) fn resolve(ctx: &ToolContext, given: &str) -> PathBuf {
    if let Some(rest) = given.strip_prefix("~/")
        && let Some(home) = crate::environ::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    let p = Path::new(given);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        ctx.cwd.join(p)
    }
}

/// A message for a failed operation on `shown` (the path as the model wrote it).
pub(crate) fn describe(err: &io::Error, what: &str, shown: &str) -> String {
    match err.kind() {
        io::ErrorKind::NotFound => format!("{what} not found: {shown}"),
        io::ErrorKind::PermissionDenied => format!("Permission denied: {shown}"),
        io::ErrorKind::IsADirectory => format!("Is a directory: {shown}"),
        io::ErrorKind::NotADirectory => format!("Not a directory: a parent of {shown} is a file"),
        _ if err.raw_os_error() == Some(nix::libc::ELOOP) => {
            format!("Too many levels of symbolic links (a symlink loop?): {shown}")
        }
        _ => format!("Cannot access {shown}: {err}"),
    }
}

/// Why an atomic write failed, with the step that failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The target exists and is a directory. Not retryable.
    #[error("Is a directory: {0}")]
    IsDirectory(String),
    /// The parent directory could not be created. Not retryable.
    #[error("Cannot create directory {dir}: {source}")]
    CreateDir { dir: String, source: io::Error },
    /// Writing the temporary file or renaming it failed. Not retryable.
    #[error("Cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// flushed to disk and renamed over the target, so readers see the old or the new content,
/// never a mix. An existing file keeps its mode (and owner where allowed); a symlink is
/// followed so the link stays a link. Parent directories are created.
pub(crate) fn atomic_write(path: &Path, shown: &str, bytes: &[u8]) -> Result<(), WriteError> {
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    };
    let existing = fs::metadata(&target).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(WriteError::IsDirectory(shown.to_string()));
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(|source| WriteError::CreateDir {
        dir: dir.display().to_string(),
        source,
    })?;
    let werr = |source: io::Error| WriteError::Write {
        path: shown.to_string(),
        source,
    };
    let mode = existing.as_ref().map_or(0o666, |m| m.mode() & 0o7777);
    let mut tmp = tempfile::Builder::new()
        .prefix(".ikigai-")
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(&dir)
        .map_err(werr)?;
    tmp.write_all(bytes).map_err(werr)?;
    if let Some(m) = &existing {
        // The umask applied at creation; give the exact old mode back.
        fs::set_permissions(tmp.path(), Permissions::from_mode(m.mode() & 0o7777)).map_err(werr)?;
        // Only root may give a file away; elsewhere the owner simply stays the writer.
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(m.uid()), Some(m.gid()));
    }
    tmp.as_file().sync_all().map_err(werr)?;
    tmp.persist(&target).map_err(|e| werr(e.error))?;
    // Make the rename itself durable; failing to sync a directory loses nothing written.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn resolves_relative_paths_against_cwd() {
        let ctx = ToolContext::new(PathBuf::from("/work/x"), 10, Duration::from_secs(1));
        assert_eq!(resolve(&ctx, "a/b"), PathBuf::from("/work/x/a/b"));
        assert_eq!(resolve(&ctx, "/etc"), PathBuf::from("/etc"));
    }

    #[test]
    fn atomic_write_creates_and_replaces_keeping_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/deeper/f.txt");
        atomic_write(&p, "f.txt", b"one").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        fs::set_permissions(&p, Permissions::from_mode(0o750)).unwrap();
        atomic_write(&p, "f.txt", b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o7777, 0o750);
        let leftovers: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn atomic_write_follows_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::write(&real, "old").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        atomic_write(&link, "link", b"new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
    }
}
