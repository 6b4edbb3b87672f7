//! What changed in a project's tree since it was last asked: inotify watches on every
//! folder a snapshot covers (not `.git`, not folders `.gitignore` ignores, not nested
//! repositories, not ikigai's own data), read without blocking. Names the paths to look at
//! again (a folder named there stands for everything that was below it), or says that it
//! lost track (the kernel's queue overflowed, a folder could not be watched, the tree's
//! root went away); the caller then scans the whole tree once more. Reads no file.
//!
//! What inotify cannot see is not seen here either: writes through a memory mapping whose
//! file was closed before them, and changes made through another name of a file (a hard
//! link outside the tree). Blocking; callers run it off the async runtime.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, InotifyEvent, WatchDescriptor};

/// At most this many folders are watched (each costs the kernel ~1 KiB, and a user's
/// watches are shared with editors and file managers): past it, the tree is scanned.
pub(crate) const MAX_FOLDERS: usize = 65_536;

/// What the watch saw since it was last asked (paths relative to the root).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    Paths {
        /// Files, links or what else these paths are now, that may differ.
        changed: BTreeSet<PathBuf>,
        /// Folders moved away: they stand for everything that was below them.
        gone: BTreeSet<PathBuf>,
    },
    /// Events were lost: anything may have changed.
    Lost,
}

/// The watches on one tree.
#[derive(Debug)]
pub(crate) struct Watch {
    fd: Inotify,
    root: PathBuf,
    exclude: Option<PathBuf>,
    /// Each watched folder, relative to the root.
    folders: HashMap<WatchDescriptor, PathBuf>,
    changed: BTreeSet<PathBuf>,
    gone: BTreeSet<PathBuf>,
    lost: bool,
}

/// Why the tree cannot be watched.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WatchError {
    #[error("inotify: {0}")]
    Inotify(#[from] Errno),
    #[error("more than {MAX_FOLDERS} folders")]
    TooManyFolders,
    /// The files a snapshot would keep weigh more than the limit.
    #[error("over the size limit")]
    TooLarge,
    #[error("{0}")]
    Io(#[from] io::Error),
}

fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

impl Watch {
    /// Watches every folder of `root` a snapshot covers, never `exclude`; refused when the
    /// files there weigh more than `limit` bytes (the same walk weighs them).
    pub(crate) fn start(root: &Path, exclude: Option<&Path>, limit: u64) -> Result<Watch, WatchError> {
        let fd = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        let mut w = Watch {
            fd,
            root: root.to_path_buf(),
            exclude: exclude.map(Path::to_path_buf),
            folders: HashMap::new(),
            changed: BTreeSet::new(),
            gone: BTreeSet::new(),
            lost: false,
        };
        let bytes = w.watch_below(Path::new(""), false, limit)?;
        if bytes > limit {
            return Err(WatchError::TooLarge);
        }
        // What changed while the folders were being watched is in `changed` already.
        w.changed.clear();
        Ok(w)
    }

    /// How many folders are watched.
    #[cfg(test)]
    fn folders(&self) -> usize {
        self.folders.len()
    }

    /// Watches folder `rel` and every folder below it that a snapshot covers; with
    /// `mark`, every file found there is named as changed (a folder that appeared: what
    /// it held before its watch existed was never seen). Returns the bytes of the files
    /// found when `weigh` is under `u64::MAX`, stopping once past it.
    fn watch_below(&mut self, rel: &Path, mark: bool, weigh: u64) -> Result<u64, WatchError> {
        let start = self.root.join(rel);
        let exclude = self.exclude.clone();
        let top = start.clone();
        let walk = ignore::WalkBuilder::new(&start)
            .hidden(false)
            .ignore(false)
            .parents(false)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| {
                let dir = e.file_type().is_some_and(|t| t.is_dir());
                e.file_name() != ".git"
                    && Some(e.path()) != exclude.as_deref()
                    // A nested repository is a gitlink to a snapshot, not its files.
                    && !(dir && e.path() != top && e.path().join(".git").exists())
            })
            .build();
        let mut bytes = 0u64;
        for entry in walk {
            let Ok(entry) = entry else { continue };
            let Ok(rel) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            let rel = rel.to_path_buf();
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                if self.folders.len() >= MAX_FOLDERS {
                    return Err(WatchError::TooManyFolders);
                }
                match self.fd.add_watch(entry.path(), mask()) {
                    Ok(wd) => {
                        self.folders.insert(wd, rel);
                    }
                    // Gone meanwhile (its removal is an event of its parent).
                    Err(Errno::ENOENT | Errno::ENOTDIR) => {}
                    Err(e) => return Err(e.into()),
                }
            } else {
                if weigh < u64::MAX {
                    bytes += entry.metadata().map_or(0, |m| m.len());
                    if bytes > weigh {
                        return Ok(bytes);
                    }
                }
                if mark {
                    self.changed.insert(rel);
                }
            }
        }
        Ok(bytes)
    }

    /// Everything seen since the last call.
    pub(crate) fn take(&mut self) -> Seen {
        loop {
            match self.fd.read_events() {
                Ok(events) => {
                    for e in events {
                        self.event(e);
                    }
                }
                Err(Errno::EINTR) => {}
                // EAGAIN: nothing more now.
                Err(Errno::EAGAIN) => break,
                Err(_) => {
                    self.lost = true;
                    break;
                }
            }
        }
        let changed = std::mem::take(&mut self.changed);
        let gone = std::mem::take(&mut self.gone);
        if std::mem::replace(&mut self.lost, false) {
            return Seen::Lost;
        }
        Seen::Paths { changed, gone }
    }

    fn event(&mut self, e: InotifyEvent) {
        if e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
            self.lost = true;
            return;
        }
        let Some(folder) = self.folders.get(&e.wd).cloned() else {
            return;
        };
        if e.mask.contains(AddWatchFlags::IN_IGNORED) {
            self.folders.remove(&e.wd);
            return;
        }
        let Some(name) = e.name else {
            // The folder itself was removed or moved: its parent says so too, but the
            // root has no parent here.
            if folder.as_os_str().is_empty()
                && e.mask
                    .intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF)
            {
                self.lost = true;
            }
            return;
        };
        let path = folder.join(&name);
        if !e.mask.contains(AddWatchFlags::IN_ISDIR) {
            self.changed.insert(path);
            return;
        }
        // A folder: removed empty (its files were events of their own), moved away (what
        // it held went with it, unseen), or new here (watched, and what it holds named).
        if e.mask.contains(AddWatchFlags::IN_MOVED_FROM) {
            // Its watches now name paths it no longer has.
            self.unwatch_below(&path);
            self.gone.insert(path.clone());
        }
        if e.mask
            .intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO)
            && self.watch_below(&path, true, u64::MAX).is_err()
        {
            self.lost = true;
        }
        // A file may have stood at that path before.
        self.changed.insert(path);
    }

    /// Stops watching folder `rel` and those below it.
    fn unwatch_below(&mut self, rel: &Path) {
        let gone: Vec<WatchDescriptor> = self
            .folders
            .iter()
            .filter(|(_, p)| p.starts_with(rel))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            self.folders.remove(&wd);
            let _ = self.fd.rm_watch(wd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// Changed paths, then `gone: ` and the folders moved away.
    fn paths(w: &mut Watch) -> Vec<String> {
        match w.take() {
            Seen::Paths { changed, gone } => changed
                .iter()
                .map(|p| p.display().to_string())
                .chain(gone.iter().map(|p| format!("gone: {}", p.display())))
                .collect(),
            Seen::Lost => panic!("lost track"),
        }
    }

    #[test]
    fn sees_changes_in_covered_folders_and_none_in_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        fs::write(p.join(".gitignore"), "target/\n").unwrap();
        fs::create_dir_all(p.join("src/deep")).unwrap();
        fs::create_dir_all(p.join("target/debug")).unwrap();
        fs::create_dir_all(p.join(".git/objects")).unwrap();
        fs::create_dir_all(p.join("data/ikigai")).unwrap();
        fs::create_dir_all(p.join("vendor/lib/.git")).unwrap();
        fs::write(p.join("src/deep/a.rs"), "a").unwrap();
        let mut w = Watch::start(p, Some(&p.join("data/ikigai")), u64::MAX).unwrap();
        assert_eq!(w.folders(), 5, "root, src, src/deep, data, vendor");
        assert!(paths(&mut w).is_empty());
        fs::write(p.join("src/deep/a.rs"), "changed").unwrap();
        fs::write(p.join("target/debug/out"), "ignored").unwrap();
        fs::write(p.join(".git/objects/x"), "not ours").unwrap();
        fs::write(p.join("data/ikigai/db"), "ikigai's own").unwrap();
        fs::write(p.join("vendor/lib/f"), "another repository").unwrap();
        fs::remove_file(p.join(".gitignore")).unwrap();
        assert_eq!(paths(&mut w), [".gitignore", "src/deep/a.rs"]);
        // A folder that appears is watched, and what it held is named.
        fs::create_dir_all(p.join("new/inner")).unwrap();
        fs::write(p.join("new/inner/b.rs"), "b").unwrap();
        let seen = paths(&mut w);
        assert!(seen.contains(&"new".to_string()), "{seen:?}");
        assert!(seen.contains(&"new/inner/b.rs".to_string()), "{seen:?}");
        fs::write(p.join("new/inner/b.rs"), "b2").unwrap();
        assert_eq!(paths(&mut w), ["new/inner/b.rs"]);
        // A folder moved: its old path stands for what it held, its new one is watched.
        fs::rename(p.join("new"), p.join("moved")).unwrap();
        let seen = paths(&mut w);
        assert!(
            seen.contains(&"gone: new".to_string()) && seen.contains(&"moved/inner/b.rs".to_string()),
            "{seen:?}"
        );
        fs::write(p.join("moved/inner/c.rs"), "c").unwrap();
        assert_eq!(paths(&mut w), ["moved/inner/c.rs"]);
        // chmod is a change (an executable bit is part of a snapshot).
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(p.join("src/deep/a.rs"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(paths(&mut w), ["src/deep/a.rs"]);
    }

    #[test]
    fn the_root_going_away_is_lost_track() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("p");
        fs::create_dir(&root).unwrap();
        let mut w = Watch::start(&root, None, u64::MAX).unwrap();
        fs::rename(&root, outer.path().join("q")).unwrap();
        assert_eq!(w.take(), Seen::Lost);
    }
}
