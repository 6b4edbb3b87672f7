//! Changing entries of an open folder, relative to its descriptor: a file or a link put
//! in place atomically (a temporary created with `O_EXCL` in the same folder, renamed
//! over the name; removed again on every failure), an entry removed, a whole tree
//! removed without ever following a link in it. The entry replaced or removed is the
//! name itself: a link there is replaced or removed, never what it points to, and a
//! hard link is replaced, leaving the other names of its file as they were.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat, renameat};
use nix::sys::stat::Mode;
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};

use super::{Folder, Kind};

/// How many names a temporary file tries before giving up (each is random).
const TEMP_TRIES: usize = 8;

/// How deep `remove_tree` goes.
const MAX_DEPTH: usize = 256;

/// What a file put in place is given: its permission bits (`None`: 0666 less the umask,
/// as for any new file) and its owner (given away where allowed, else the writer's).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Keep {
    pub(crate) mode: Option<u32>,
    pub(crate) owner: Option<(u32, u32)>,
}

fn temp_name(tag: &str) -> OsString {
    let id = uuid::Uuid::new_v4().simple().to_string();
    OsString::from(format!(".ikigai-{tag}{}.tmp", &id[..12]))
}

impl Folder {
    /// Creates a temporary name in this folder with `make` (which fails with `EEXIST`
    /// when the name is taken; tried again with another name).
    fn temp<T>(&self, tag: &str, make: impl Fn(&OsStr) -> Result<T, Errno>) -> io::Result<(OsString, T)> {
        let mut tries = 0;
        loop {
            let name = temp_name(tag);
            match make(&name) {
                Ok(made) => return Ok((name, made)),
                Err(Errno::EEXIST) if tries < TEMP_TRIES => tries += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Renames temporary `tmp` over `name`, both in this folder; `tmp` is removed when
    /// that (or `done`, what came before) failed.
    fn put_in_place(&self, tmp: &OsStr, name: &OsStr, done: io::Result<()>) -> io::Result<()> {
        let moved = done.and_then(|()| renameat(&self.fd, tmp, &self.fd, name).map_err(io::Error::from));
        if moved.is_err() {
            let _ = unlinkat(&self.fd, tmp, UnlinkatFlags::NoRemoveDir);
            return moved;
        }
        // The rename itself made durable; failing to sync a folder loses nothing written.
        if let Ok(d) = openat(
            &self.fd,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            let _ = File::from(d).sync_all();
        }
        Ok(())
    }

    /// Puts `bytes` at `name` in this folder atomically (readers see the old content or
    /// the new, never a mix): written to a new temporary file here, flushed to disk and
    /// renamed over `name`.
    pub(crate) fn replace(&self, name: &OsStr, bytes: &[u8], keep: Keep) -> io::Result<()> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let first = Mode::from_bits_truncate(if keep.mode.is_some() { 0o600 } else { 0o666 });
        let (tmp, fd) = self.temp("", |n| openat(&self.fd, n, flags, first))?;
        let written = fill(fd, bytes, keep);
        self.put_in_place(&tmp, name, written)
    }

    /// Puts a symbolic link to `target` at `name` in this folder atomically.
    pub(crate) fn replace_with_link(&self, name: &OsStr, target: &OsStr) -> io::Result<()> {
        let (tmp, ()) = self.temp("link-", |n| symlinkat(target, &self.fd, n))?;
        self.put_in_place(&tmp, name, Ok(()))
    }

    /// Removes `name` from this folder (a file or a link: the link itself); nothing to do
    /// when it is gone.
    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        match unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the empty folder `name` from this folder.
    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir).map_err(io::Error::from)
    }

    /// Removes the folder `name` and everything in it; a link inside is removed itself,
    /// never followed.
    pub(crate) fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        self.remove_tree_at(name, 0)
    }

    fn remove_tree_at(&self, name: &OsStr, depth: usize) -> io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(io::Error::other("folder tree too deep to remove"));
        }
        let inner = self
            .child(name, false)
            .map_err(|e| io::Error::other(e.to_string()))?;
        for n in inner.names().map_err(|e| io::Error::other(e.to_string()))? {
            match inner.stat(&n).map_err(|e| io::Error::other(e.to_string()))? {
                Some(st) if Kind::of(&st) == Kind::Folder => inner.remove_tree_at(&n, depth + 1)?,
                Some(_) => inner.remove_file(&n)?,
                None => {}
            }
        }
        self.remove_dir(name)
    }
}

/// Writes the temporary file: content, owner, mode, flushed to disk.
fn fill(fd: OwnedFd, bytes: &[u8], keep: Keep) -> io::Result<()> {
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    if let Some((uid, gid)) = keep.owner {
        // Only root may give a file away; elsewhere the owner simply stays the writer.
        let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
    }
    if let Some(mode) = keep.mode {
        // Set after the owner (a change of owner clears set-id bits) and past the umask.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    file.sync_all()
}
