//! File operations that a symbolic link swapped in while they run cannot redirect (issue
//! 34 §5). A path is resolved once, by whoever judges it (the permission decision, the
//! sandbox's write rule, a checkpoint), to an absolute path with no link and no `..` in
//! it; from then on everything is relative to folder descriptors: each folder on the
//! path is opened from its parent with `O_NOFOLLOW` (a folder that became a link since
//! fails instead of leading elsewhere — the component-by-component form of `openat2`'s
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, which works on every Unix), and a file is
//! read, created (`O_EXCL`), renamed into place or removed relative to the descriptor
//! of the folder that holds it (`change.rs`). Knows no tool and no checkpoint; never
//! follows a symbolic link below its anchor and never goes back to a path's string.

mod change;
#[cfg(test)]
mod tests;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};

pub(crate) use change::Keep;

/// Why a path could not be reached (or a folder on it made).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A folder on the path is a symbolic link: not followed.
    #[error("{} is a symbolic link (not followed)", .0.display())]
    Link(PathBuf),
    /// Something on the path that must be a folder is not one.
    #[error("{} is not a folder", .0.display())]
    NotFolder(PathBuf),
    /// A folder on the path does not exist (and was not to be made).
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    /// A missing folder could not be made.
    #[error("Cannot create directory {}: {source}", .dir.display())]
    Create { dir: PathBuf, source: io::Error },
    /// The path is not absolute and plain (it has `..`, `.` or no file name), or lies
    /// outside the folder it was to be found beneath: it was never resolved.
    #[error("{} is not a resolved path beneath {}", .path.display(), .anchor.display())]
    NotResolved { path: PathBuf, anchor: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// What a directory entry is, never looking through a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Folder,
    Link,
    /// A FIFO, a socket or a device.
    Other,
}

impl Kind {
    pub(crate) fn of(st: &FileStat) -> Kind {
        match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => Kind::File,
            SFlag::S_IFDIR => Kind::Folder,
            SFlag::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        }
    }
}

/// The permission bits of `st` (set-ID and sticky bits included).
#[allow(clippy::useless_conversion)] // `mode_t` is `u16` on some systems
pub(crate) fn permissions(st: &FileStat) -> u32 {
    u32::from(st.st_mode) & 0o7777
}

/// How a folder is opened to look things up in it: `O_PATH` where there is one (no read
/// permission needed to pass through, as for a path), never through a link.
fn folder_flags() -> OFlag {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let search = OFlag::O_PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let search = OFlag::O_RDONLY;
    search | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// An open folder: everything below it is reached from its descriptor. `path` is what it
/// was opened as, for messages only.
#[derive(Debug)]
pub(crate) struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

impl Folder {
    /// Opens `path` (absolute) as the folder others are found beneath. Links in `path`
    /// itself are followed: the caller names it (`/`, the project folder ikigai runs in).
    pub(crate) fn anchor(path: &Path) -> Result<Folder, Error> {
        let flags = folder_flags() & !OFlag::O_NOFOLLOW;
        match openat(AT_FDCWD, path, flags, Mode::empty()) {
            Ok(fd) => Ok(Folder {
                fd,
                path: path.to_path_buf(),
            }),
            Err(Errno::ENOENT) => Err(Error::Missing(path.to_path_buf())),
            Err(Errno::ENOTDIR) => Err(Error::NotFolder(path.to_path_buf())),
            Err(e) => Err(Error::Io {
                path: path.to_path_buf(),
                source: e.into(),
            }),
        }
    }

    /// The file system's root, `/`.
    pub(crate) fn root() -> Result<Folder, Error> {
        Folder::anchor(Path::new("/"))
    }

    /// The folder `name` (one plain name) in this one, not through a link; when `create`,
    /// made first if missing (0777 less the umask).
    fn child(&self, name: &OsStr, create: bool) -> Result<Folder, Error> {
        let path = self.path.join(name);
        let open = || openat(&self.fd, name, folder_flags(), Mode::empty());
        let fd = match open() {
            Err(Errno::ENOENT) if create => {
                match mkdirat(&self.fd, name, Mode::from_bits_truncate(0o777)) {
                    // Made by somebody else meanwhile: opened below like any other.
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => {
                        return Err(Error::Create {
                            dir: path,
                            source: e.into(),
                        });
                    }
                }
                open()
            }
            other => other,
        };
        match fd {
            Ok(fd) => Ok(Folder { fd, path }),
            Err(e) => Err(self.why(name, path, e)),
        }
    }

    /// What a failed open of `name` means.
    fn why(&self, name: &OsStr, path: PathBuf, e: Errno) -> Error {
        match e {
            Errno::ENOENT => Error::Missing(path),
            Errno::ELOOP => Error::Link(path),
            // Not a folder when opened: a link then (or one then, a folder now: swapped).
            Errno::ENOTDIR => match self.stat(name) {
                Ok(Some(st)) if matches!(Kind::of(&st), Kind::Link | Kind::Folder) => Error::Link(path),
                _ => Error::NotFolder(path),
            },
            e => Error::Io {
                path,
                source: e.into(),
            },
        }
    }

    /// The folder `rel` (plain names only) beneath this one, each folder opened from its
    /// parent without following a link; when `create`, missing folders are made.
    pub(crate) fn walk(&self, rel: &Path, create: bool) -> Result<Folder, Error> {
        let mut names = plain(rel).ok_or_else(|| self.not_resolved(rel))?.into_iter();
        let Some(first) = names.next() else {
            return Ok(Folder {
                fd: self.fd.try_clone().map_err(|source| Error::Io {
                    path: self.path.clone(),
                    source,
                })?,
                path: self.path.clone(),
            });
        };
        let mut at = self.child(first, create)?;
        for name in names {
            at = at.child(name, create)?;
        }
        Ok(at)
    }

    /// The folder that holds `path` (absolute, resolved, beneath this folder) and its file
    /// name: the place to read, write or remove it. When `create`, missing folders are
    /// made.
    pub(crate) fn locate(&self, path: &Path, create: bool) -> Result<(Folder, OsString), Error> {
        let rel = path
            .strip_prefix(&self.path)
            .map_err(|_| self.not_resolved(path))?;
        let mut names = plain(rel).ok_or_else(|| self.not_resolved(path))?;
        let Some(name) = names.pop() else {
            return Err(self.not_resolved(path));
        };
        let parent: PathBuf = names.iter().collect();
        Ok((self.walk(&parent, create)?, name.to_os_string()))
    }

    fn not_resolved(&self, path: &Path) -> Error {
        Error::NotResolved {
            path: path.to_path_buf(),
            anchor: self.path.clone(),
        }
    }

    /// What `name` in this folder is (`None`: nothing), never through a link.
    pub(crate) fn stat(&self, name: &OsStr) -> Result<Option<FileStat>, Error> {
        match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(Error::Io {
                path: self.path.join(name),
                source: e.into(),
            }),
        }
    }

    /// Opens `name` in this folder for reading, with what it is: a link is not followed
    /// (`Link`), and a FIFO or device is not opened at all (it could block, or act on
    /// being opened). `None`: nothing there.
    pub(crate) fn open_read(&self, name: &OsStr) -> Result<Option<(File, FileStat)>, Error> {
        let path = self.path.join(name);
        let Some(st) = self.stat(name)? else {
            return Ok(None);
        };
        match Kind::of(&st) {
            Kind::Link => return Err(Error::Link(path)),
            Kind::Other => return Ok(Some((null_file(&path)?, st))),
            Kind::File | Kind::Folder => {}
        }
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(self.why(name, path, e)),
        };
        // What was opened is what is read: it may have been swapped since the look above.
        let st = fstat(&fd).map_err(|e| Error::Io {
            path,
            source: e.into(),
        })?;
        Ok(Some((File::from(fd), st)))
    }

    /// The target text of the link `name` in this folder.
    pub(crate) fn read_link(&self, name: &OsStr) -> Result<OsString, Error> {
        nix::fcntl::readlinkat(&self.fd, name).map_err(|e| Error::Io {
            path: self.path.join(name),
            source: e.into(),
        })
    }

    /// The names in this folder (`.` and `..` left out), in the order the file system
    /// gives them.
    pub(crate) fn names(&self) -> Result<Vec<OsString>, Error> {
        let io = |e: Errno| Error::Io {
            path: self.path.clone(),
            source: e.into(),
        };
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = openat(&self.fd, ".", flags, Mode::empty()).map_err(io)?;
        let mut dir = nix::dir::Dir::from_fd(fd).map_err(io)?;
        let mut out = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(io)?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                out.push(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name).to_os_string());
            }
        }
        Ok(out)
    }
}

/// A file that reads as empty, standing in for a special file that is not opened (its
/// `FileStat` tells the caller what it is).
fn null_file(path: &Path) -> Result<File, Error> {
    File::open("/dev/null").map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The names of `rel` when it holds nothing but plain names (no root, `.` or `..`).
fn plain(rel: &Path) -> Option<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect()
}

/// The folders paths are found beneath: `base` (the project folder, opened once) for a
/// path inside it, `/` for any other. Both are opened when made.
#[derive(Debug)]
pub(crate) struct Anchors {
    base: Option<Folder>,
    root: Folder,
}

impl Anchors {
    /// Anchors for paths inside `base` (`None`, or a `base` that cannot be opened: every
    /// path from `/`).
    pub(crate) fn new(base: Option<&Path>) -> Result<Anchors, Error> {
        Ok(Anchors {
            base: base.and_then(|b| Folder::anchor(b).ok()),
            root: Folder::root()?,
        })
    }

    /// `Folder::locate` from the anchor `path` is beneath.
    pub(crate) fn locate(&self, path: &Path, create: bool) -> Result<(Folder, OsString), Error> {
        match &self.base {
            Some(b) if path.starts_with(&b.path) => b.locate(path, create),
            _ => self.root.locate(path, create),
        }
    }

    /// Removes the folders above `path` (beneath the base folder, which stays) that are
    /// empty, deepest first, stopping at the first that is not (or is not a folder: a
    /// link is never removed as one).
    pub(crate) fn remove_empty_parents(&self, path: &Path) {
        let Some(base) = &self.base else { return };
        let Some(rel) = path.strip_prefix(&base.path).ok().and_then(|r| r.parent()) else {
            return;
        };
        let Some(mut names) = plain(rel) else { return };
        while let Some(name) = names.pop() {
            let parent: PathBuf = names.iter().collect();
            let Ok(folder) = base.walk(&parent, false) else {
                return;
            };
            if folder.remove_dir(name).is_err() {
                return;
            }
        }
    }
}
