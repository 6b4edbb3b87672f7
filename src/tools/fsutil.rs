//! Filesystem helpers shared by the tools: resolving a path against the tool context to
//! the one place a call acts on (`place`), turning errors into precise messages, and the
//! atomic write used by file_write and file_edit (through `crate::beneath`, so a link
//! swapped in cannot move it). Knows no tool and produces no tool results.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use nix::sys::stat::FileStat;

use super::{TextFiles, ToolContext};
use crate::beneath;

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

/// Where a call of a file tool reads or writes `shown` (the path as the model wrote it):
/// `(given, real)` — the path made absolute, and the place it leads to (every link
/// followed, `..` applied, absolute). That is the place the permission decision judged
/// when there was one (`ctx.pinned`), else where the path leads now; either way it is
/// resolved once, and the tool then reaches exactly it (`crate::beneath`), so a link
/// swapped in afterwards cannot move the call. `Err`: the message (a link loop).
pub(crate) fn place(ctx: &ToolContext, shown: &str) -> Result<(PathBuf, PathBuf), String> {
    let given = resolve(ctx, shown);
    let real = match &ctx.pinned {
        Some(pin) if same_path(&pin.given, shown) => pin.real.clone(),
        // Judged for another path: acting on this one would be acting unjudged.
        Some(pin) => {
            return Err(format!(
                "{shown} is not the path that was approved ({}); nothing was done",
                pin.given
            ));
        }
        None => crate::permissions::sandbox_writes::resolve(&given),
    };
    match real {
        Some(real) => Ok((given, real)),
        None => Err(format!(
            "Too many levels of symbolic links (a symlink loop?): {shown}"
        )),
    }
}

/// What a file tool needs of the text files a front end serves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    Read,
    Write,
    /// Read and write (an edit reads the text it changes where it writes it).
    Edit,
}

/// The text files a front end serves for `real` (a place `place` resolved, after the
/// permission decision and the sandbox's check), when they serve what the tool `need`s
/// and `real` lies in the working directory: an editor holds its project's files;
/// elsewhere, and without a front end's files, the tools use the file system.
pub(crate) fn served(ctx: &ToolContext, real: &Path, need: Need) -> Option<std::sync::Arc<dyn TextFiles>> {
    let files = ctx.files.get()?;
    let ok = match need {
        Need::Read => files.reads(),
        Need::Write => files.writes(),
        Need::Edit => files.reads() && files.writes(),
    };
    if !ok {
        return None;
    }
    let cwd = ctx.cwd.canonicalize().unwrap_or_else(|_| ctx.cwd.clone());
    real.starts_with(&cwd).then_some(files)
}

/// Why a write may not be made at a path: its place could not be settled, or the sandbox
/// denies it (worded like a command's denial).
pub(crate) enum Refused {
    Place(String),
    Sandbox(String),
}

/// Where a write of `shown` lands (`place`'s real place), once the sandbox allows it there.
/// Where a write or edit of `shown` goes when a front end serves files (an editor's
/// buffers): decided by the same place and sandbox checks as a write to disk, first.
pub(crate) enum WriteTarget {
    /// Through the front end's files, at this real path.
    Served(std::sync::Arc<dyn TextFiles>, PathBuf),
    /// No served files for this path: the tool writes the disk as always.
    Disk,
    /// Refused before anything was asked: the tool's answer.
    Refused(super::ToolOutput),
}

/// `WriteTarget` of `shown` for a call that needs `need` of the served files.
pub(crate) async fn write_target(
    ctx: &ToolContext,
    shown: &str,
    need: Need,
) -> Result<WriteTarget, super::ToolError> {
    if ctx.files.get().is_none() {
        return Ok(WriteTarget::Disk);
    }
    let at = ctx.clone();
    let s = shown.to_string();
    let placed = super::walk::run_blocking(ctx, move |_| place_for_write(&at, &s)).await?;
    Ok(match placed {
        Ok(real) => match served(ctx, &real, need) {
            Some(files) => WriteTarget::Served(files, real),
            None => WriteTarget::Disk,
        },
        Err(Refused::Place(e)) => WriteTarget::Refused(super::ToolOutput::error(e)),
        Err(Refused::Sandbox(why)) => WriteTarget::Refused(super::ToolOutput::sandbox_denied(why)),
    })
}

pub(crate) fn place_for_write(ctx: &ToolContext, shown: &str) -> Result<PathBuf, Refused> {
    let (given, real) = place(ctx, shown).map_err(Refused::Place)?;
    ctx.may_write(&real, &given).map_err(Refused::Sandbox)?;
    Ok(real)
}

/// Whether two `path` arguments name the same thing (no path, `""` and `.` all mean the
/// working directory to the tools that default it).
fn same_path(a: &str, b: &str) -> bool {
    let here = |p: &str| p.is_empty() || p == ".";
    a == b || (here(a) && here(b))
}

/// A message for a place that could not be reached (`what`: "File", "Directory").
pub(crate) fn describe_place(err: &beneath::Error, what: &str, shown: &str) -> String {
    match err {
        beneath::Error::Missing(_) => format!("{what} not found: {shown}"),
        beneath::Error::NotFolder(_) => format!("Not a directory: a parent of {shown} is a file"),
        beneath::Error::Link(p) => moved(shown, p),
        beneath::Error::Io { source, .. } | beneath::Error::Create { source, .. } => {
            describe(source, what, shown)
        }
        beneath::Error::NotResolved { .. } => format!("Cannot access {shown}: {err}"),
    }
}

/// `link`, on the way to `shown`, is a symbolic link where the path was resolved without
/// one: something changed it since, and it is not followed.
fn moved(shown: &str, link: &Path) -> String {
    format!(
        "{shown} changed while it was being reached: {} is a symbolic link now, and it was \
         not one when the path was checked; it is not followed, and nothing was done",
        link.display()
    )
}

/// A file opened for reading where a call acts (`place`), with the folder that holds it
/// and its name there (to put it back in place).
pub(crate) struct Opened {
    pub(crate) folder: beneath::Folder,
    pub(crate) name: OsString,
    pub(crate) file: File,
    /// What was opened (a folder or a special file is opened as nothing: see `kind`).
    pub(crate) stat: FileStat,
}

impl Opened {
    pub(crate) fn kind(&self) -> beneath::Kind {
        beneath::Kind::of(&self.stat)
    }

    pub(crate) fn len(&self) -> u64 {
        u64::try_from(self.stat.st_size).unwrap_or(0)
    }
}

/// Opens what is at `real` (a resolved place: `place`) for reading, every folder on the
/// way opened without following a link; `Err` is the message for `shown`.
pub(crate) fn open_at(real: &Path, shown: &str) -> Result<Opened, String> {
    let located = beneath::Folder::root().and_then(|root| match real.file_name() {
        Some(_) => root.locate(real, false),
        // `/` itself.
        None => Ok((root, OsString::from("."))),
    });
    let (folder, name) = located.map_err(|e| describe_place(&e, "File", shown))?;
    match folder.open_read(&name) {
        Ok(Some((file, stat))) => Ok(Opened {
            folder,
            name,
            file,
            stat,
        }),
        Ok(None) => Err(format!("File not found: {shown}")),
        Err(e) => Err(describe_place(&e, "File", shown)),
    }
}

/// The folder at `real` (a resolved place: `place`), every folder on the way opened
/// without following a link; `Err` is the message for `shown` (`what`: "Directory",
/// "Path").
pub(crate) fn open_folder(real: &Path, shown: &str, what: &str) -> Result<beneath::Folder, String> {
    let rel = real.strip_prefix("/").unwrap_or(real);
    match beneath::Folder::root().and_then(|root| root.walk(rel, false)) {
        Ok(f) => Ok(f),
        Err(beneath::Error::NotFolder(p)) if p == real => Err(format!("Not a directory: {shown}")),
        Err(e) => Err(describe_place(&e, what, shown)),
    }
}

/// Why an atomic write failed, with the step that failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The target exists and is a directory. Not retryable.
    #[error("Is a directory: {0}")]
    IsDirectory(String),
    /// The target exists and is not a regular file (a FIFO, a device). Not retryable.
    #[error("Not a regular file: {0}")]
    NotRegular(String),
    /// The parent directory could not be created. Not retryable.
    #[error("Cannot create directory {dir}: {source}")]
    CreateDir { dir: String, source: io::Error },
    /// A folder on the way became a symbolic link after the path was resolved.
    #[error("{0}")]
    Moved(String),
    /// Writing the temporary file or renaming it failed. Not retryable.
    #[error("Cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
}

/// Writes `bytes` at `real` (a resolved place: `place`) atomically: a temporary file in
/// the same folder is written, flushed to disk and renamed over the target, so readers
/// see the old or the new content, never a mix. Every folder on the way is opened without
/// following a link, and the temporary file is made and renamed in the descriptor of the
/// one that holds the target, so the write lands at `real` or nowhere. Missing folders are
/// made. An existing file keeps its mode (and owner where allowed), less the set-user-ID
/// and set-group-ID bits, which the kernel too drops when a file is written.
pub(crate) fn write_at(real: &Path, shown: &str, bytes: &[u8]) -> Result<(), WriteError> {
    let werr = |source: io::Error| WriteError::Write {
        path: shown.to_string(),
        source,
    };
    let located = beneath::Folder::root().and_then(|root| root.locate(real, true));
    let (folder, name) = located.map_err(|e| match e {
        beneath::Error::Create { dir, source } => WriteError::CreateDir {
            dir: dir.display().to_string(),
            source,
        },
        beneath::Error::NotFolder(dir) => WriteError::CreateDir {
            dir: dir.display().to_string(),
            source: io::Error::from_raw_os_error(nix::libc::ENOTDIR),
        },
        beneath::Error::Link(p) => WriteError::Moved(moved(shown, &p)),
        beneath::Error::NotResolved { .. } => WriteError::IsDirectory(shown.to_string()),
        beneath::Error::Missing(p) => werr(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} does not exist", p.display()),
        )),
        beneath::Error::Io { source, .. } => werr(source),
    })?;
    let existing = folder
        .stat(&name)
        .map_err(|e| werr(io::Error::other(e.to_string())))?;
    let keep = match &existing {
        None => beneath::Keep::default(),
        Some(st) => match beneath::Kind::of(st) {
            beneath::Kind::File => beneath::Keep {
                mode: Some(beneath::permissions(st) & 0o1777),
                owner: Some((st.st_uid, st.st_gid)),
            },
            beneath::Kind::Folder => return Err(WriteError::IsDirectory(shown.to_string())),
            beneath::Kind::Link => return Err(WriteError::Moved(moved(shown, real))),
            beneath::Kind::Other => return Err(WriteError::NotRegular(shown.to_string())),
        },
    };
    folder.replace(&name, bytes, keep).map_err(werr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{self, Permissions};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::time::Duration;

    #[test]
    fn resolves_relative_paths_against_cwd() {
        let ctx = ToolContext::new(PathBuf::from("/work/x"), 10, Duration::from_secs(1));
        assert_eq!(resolve(&ctx, "a/b"), PathBuf::from("/work/x/a/b"));
        assert_eq!(resolve(&ctx, "/etc"), PathBuf::from("/etc"));
    }

    /// A context in `dir` whose decision judged `given` to lead to `real`.
    fn pinned(dir: &Path, given: &str, real: Option<PathBuf>) -> ToolContext {
        let mut ctx = ToolContext::new(dir.to_path_buf(), 10, Duration::from_secs(1));
        ctx.pinned = Some(crate::tools::Pinned {
            given: given.to_string(),
            real,
        });
        ctx
    }

    #[test]
    fn write_at_creates_and_replaces_keeping_the_mode_but_not_set_id_bits() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let p = base.join("sub/deeper/f.txt");
        write_at(&p, "f.txt", b"one").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        fs::set_permissions(&p, Permissions::from_mode(0o750)).unwrap();
        write_at(&p, "f.txt", b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o7777, 0o750);
        fs::set_permissions(&p, Permissions::from_mode(0o6755)).unwrap();
        write_at(&p, "f.txt", b"three").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o7777, 0o755);
        let leftovers: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_link_is_written_through_as_resolved_once() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let real = base.join("real");
        fs::write(&real, "old").unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let ctx = ToolContext::new(base.clone(), 10, Duration::from_secs(1));
        let (given, to) = place(&ctx, "link").unwrap();
        assert_eq!((given, to.clone()), (link.clone(), real.clone()));
        write_at(&to, "link", b"new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
        // The path a link leads to is never written through another link.
        let e = write_at(&link, "link", b"x").unwrap_err();
        assert!(matches!(e, WriteError::Moved(_)), "{e}");
    }

    #[test]
    fn the_judged_place_is_the_one_acted_on() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (a, b) = (base.join("a"), base.join("b"));
        std::os::unix::fs::symlink(&b, base.join("link")).unwrap();
        // Judged when `link` led to `a`: still `a`, wherever it leads now.
        let ctx = pinned(&base, "link", Some(a.clone()));
        assert_eq!(place(&ctx, "link").unwrap().1, a);
        // A call for another path than the judged one does nothing.
        let e = place(&ctx, "other").unwrap_err();
        assert!(e.contains("not the path that was approved"), "{e}");
        // A loop when judged stays a loop.
        let e = place(&pinned(&base, "link", None), "link").unwrap_err();
        assert!(e.contains("symlink loop"), "{e}");
    }
}
