//! The content store of checkpoints: file contents kept by their SHA-256, one file each,
//! under the user's data folder (0700 folders, 0600 files: they may hold anything a
//! project holds). Also the one way a file's current state is named (`state_of`) and
//! the way undo puts a state back (`write_state`, `remove_state`). Every one of these
//! reaches a project file through `crate::beneath`: each folder on the way opened from
//! its parent without following a link, the file itself read, replaced or removed as the
//! name it is (a link there is itself, never what it points to), so a link swapped in
//! cannot lead a read, a write or a removal elsewhere.

use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::beneath::{self, Anchors, Keep, Kind};

/// Git-style mode of a regular file.
pub(crate) const MODE_FILE: u32 = 0o100644;
/// Git-style mode of an executable file.
pub(crate) const MODE_EXEC: u32 = 0o100755;
/// Git-style mode of a symbolic link (its content is the link's target).
pub(crate) const MODE_LINK: u32 = 0o120000;

/// What a path holds now: the hash of its content and its git-style mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) hash: String,
    pub(crate) mode: u32,
    /// The content (kept so a caller that stores it need not read it again).
    pub(crate) bytes: Vec<u8>,
}

/// The content store in one folder.
#[derive(Clone, Debug)]
pub(crate) struct Blobs {
    dir: PathBuf,
}

/// Hex SHA-256 of `bytes`; a symlink's target is hashed with a prefix, so a link and a
/// file holding its target's text differ.
pub(crate) fn hash(bytes: &[u8], mode: u32) -> String {
    let mut h = Sha256::new();
    if mode == MODE_LINK {
        h.update(b"symlink\0");
    }
    h.update(bytes);
    let digest = h.finalize();
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// What `path` holds now (`None`: nothing, or a folder or another non-file). A symlink
/// is itself (its target text), never followed; a folder on the way that is a link is an
/// error (what is behind it is not the project's).
pub(crate) fn state_of(path: &Path) -> io::Result<Option<State>> {
    state_in(&anchors(None)?, path)
}

/// The anchors paths are reached from: `project` (opened once) for paths inside it, `/`
/// for others.
pub(crate) fn anchors(project: Option<&Path>) -> io::Result<Anchors> {
    Anchors::new(project).map_err(other)
}

fn other(e: beneath::Error) -> io::Error {
    io::Error::other(e.to_string())
}

/// `state_of`, with paths reached from `anchors`.
pub(crate) fn state_in(anchors: &Anchors, path: &Path) -> io::Result<Option<State>> {
    let (folder, name) = match anchors.locate(path, false) {
        Ok(at) => at,
        Err(beneath::Error::Missing(_) | beneath::Error::NotFolder(_)) => return Ok(None),
        Err(e) => return Err(other(e)),
    };
    let Some(st) = folder.stat(&name).map_err(other)? else {
        return Ok(None);
    };
    let (bytes, mode) = match Kind::of(&st) {
        Kind::Link => (folder.read_link(&name).map_err(other)?.into_vec(), MODE_LINK),
        Kind::File => {
            let Some((mut file, st)) = folder.open_read(&name).map_err(other)? else {
                return Ok(None);
            };
            if Kind::of(&st) != Kind::File {
                return Ok(None);
            }
            let mode = if beneath::permissions(&st) & 0o111 != 0 {
                MODE_EXEC
            } else {
                MODE_FILE
            };
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            (bytes, mode)
        }
        Kind::Folder | Kind::Other => return Ok(None),
    };
    Ok(Some(State {
        hash: hash(&bytes, mode),
        mode,
        bytes,
    }))
}

impl Blobs {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Blobs { dir }
    }

    fn path(&self, hash: &str) -> Option<PathBuf> {
        // Hashes come from events: only what a hash looks like names a file here.
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(self.dir.join(&hash[..2]).join(&hash[2..]))
    }

    /// Keeps `bytes` under `hash` (nothing to do when it is there already). The store's
    /// folder is opened as its path names it; the folder and file below it are reached
    /// without following a link (the store may lie inside a project, in a home folder).
    pub(crate) fn put(&self, hash: &str, bytes: &[u8]) -> io::Result<()> {
        let Some(path) = self.path(hash) else {
            return Err(io::Error::other(format!("not a content hash: {hash}")));
        };
        if path.exists() {
            return Ok(());
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let store = beneath::Folder::anchor(&self.dir).map_err(other)?;
        let (folder, name) = store.locate(&path, true).map_err(other)?;
        folder.replace(
            &name,
            bytes,
            Keep {
                mode: Some(0o600),
                owner: None,
            },
        )
    }

    /// The content kept under `hash`, checked against it.
    pub(crate) fn get(&self, hash: &str, mode: u32) -> io::Result<Vec<u8>> {
        let Some(path) = self.path(hash) else {
            return Err(io::Error::other(format!("not a content hash: {hash}")));
        };
        let bytes = fs::read(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("saved content {} is gone: {e}", &hash[..12])))?;
        if self::hash(&bytes, mode) != hash {
            return Err(io::Error::other(format!(
                "saved content {} is damaged",
                &hash[..12]
            )));
        }
        Ok(bytes)
    }
}

/// Puts `bytes` at `path` (reached from `anchors`) as a file of `mode` (or a symlink to
/// them for `MODE_LINK`), replacing what is there — the name itself: a link there is
/// replaced, not followed — and creating missing folders. A folder in the way (the turn
/// replaced a file with one) is removed first, links in it removed, never followed.
pub(crate) fn write_state(anchors: &Anchors, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let (folder, name) = anchors.locate(path, true).map_err(other)?;
    if let Some(st) = folder.stat(&name).map_err(other)?
        && Kind::of(&st) == Kind::Folder
    {
        folder.remove_tree(&name)?;
    }
    if mode == MODE_LINK {
        return folder.replace_with_link(&name, std::ffi::OsStr::from_bytes(bytes));
    }
    let perm = if mode == MODE_EXEC { 0o755 } else { 0o644 };
    let keep = Keep {
        mode: Some(perm),
        owner: None,
    };
    folder.replace(&name, bytes, keep)
}

/// Removes what the turn created at `path` (reached from `anchors`; nothing to do when it
/// is gone). A link there is removed itself.
pub(crate) fn remove_state(anchors: &Anchors, path: &Path) -> io::Result<()> {
    match anchors.locate(path, false) {
        Ok((folder, name)) => folder.remove_file(&name),
        Err(beneath::Error::Missing(_)) => Ok(()),
        Err(e) => Err(other(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn contents_round_trip_and_damage_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path().join("blobs"));
        let h = hash(b"hello\n", MODE_FILE);
        blobs.put(&h, b"hello\n").unwrap();
        blobs.put(&h, b"hello\n").unwrap();
        assert_eq!(blobs.get(&h, MODE_FILE).unwrap(), b"hello\n");
        let file = dir.path().join("blobs").join(&h[..2]).join(&h[2..]);
        assert_eq!(fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        fs::write(&file, b"evil").unwrap();
        assert!(
            blobs
                .get(&h, MODE_FILE)
                .unwrap_err()
                .to_string()
                .contains("damaged")
        );
        assert!(blobs.get("../../etc/passwd", MODE_FILE).is_err());
        assert_ne!(hash(b"x", MODE_LINK), hash(b"x", MODE_FILE));
    }

    #[test]
    fn states_name_files_links_and_absence() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let dir = dir.as_path();
        let f = dir.join("a.sh");
        assert_eq!(state_of(&f).unwrap(), None);
        fs::write(&f, "echo").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o755)).unwrap();
        let s = state_of(&f).unwrap().unwrap();
        assert_eq!((s.mode, s.bytes.as_slice()), (MODE_EXEC, b"echo".as_slice()));
        let l = dir.join("link");
        std::os::unix::fs::symlink("/etc/passwd", &l).unwrap();
        let s = state_of(&l).unwrap().unwrap();
        assert_eq!(
            (s.mode, s.bytes.as_slice()),
            (MODE_LINK, b"/etc/passwd".as_slice())
        );
        assert_eq!(state_of(dir).unwrap(), None);
        // Written back as they were.
        let a = anchors(Some(dir)).unwrap();
        fs::remove_file(&l).unwrap();
        write_state(&a, &l, b"/etc/passwd", MODE_LINK).unwrap();
        assert_eq!(fs::read_link(&l).unwrap(), Path::new("/etc/passwd"));
        let deep = dir.join("new/dir/x.txt");
        write_state(&a, &deep, b"x", MODE_FILE).unwrap();
        assert_eq!(fs::read(&deep).unwrap(), b"x");
        remove_state(&a, &deep).unwrap();
        remove_state(&a, &deep).unwrap();
        // A folder on the way that is a link: not followed, neither to read nor to write.
        std::os::unix::fs::symlink(dir.join("new"), dir.join("via")).unwrap();
        assert!(state_of(&dir.join("via/dir/x.txt")).is_err());
        assert!(write_state(&a, &dir.join("via/dir/y.txt"), b"y", MODE_FILE).is_err());
        assert!(remove_state(&a, &dir.join("via/dir/x.txt")).is_err());
        assert!(!dir.join("new/dir/y.txt").exists());
    }
}
