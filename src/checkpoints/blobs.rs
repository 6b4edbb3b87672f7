//! The content store of checkpoints: file contents kept by their SHA-256, one file each,
//! under the user's data folder (0700 folders, 0600 files: they may hold anything a
//! project holds). Also the one way a file's current state is named (`state_of`). Never
//! writes inside a project and never follows a symlink when reading a state.

use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

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
/// is itself (its target text), never followed.
pub(crate) fn state_of(path: &Path) -> io::Result<Option<State>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    let (bytes, mode) = if ft.is_symlink() {
        let target = fs::read_link(path)?;
        (target.into_os_string().into_vec(), MODE_LINK)
    } else if ft.is_file() {
        let mode = if meta.mode() & 0o111 != 0 {
            MODE_EXEC
        } else {
            MODE_FILE
        };
        (fs::read(path)?, mode)
    } else {
        return Ok(None);
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

    /// Keeps `bytes` under `hash` (nothing to do when it is there already).
    pub(crate) fn put(&self, hash: &str, bytes: &[u8]) -> io::Result<()> {
        let Some(path) = self.path(hash) else {
            return Err(io::Error::other(format!("not a content hash: {hash}")));
        };
        if path.exists() {
            return Ok(());
        }
        let Some(parent) = path.parent() else {
            return Err(io::Error::other("content store has no folder"));
        };
        fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        let tmp = parent.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        let written = f.write_all(bytes).and_then(|()| fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
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

/// Puts `bytes` at `path` as a file of `mode` (or a symlink to them for `MODE_LINK`),
/// replacing what is there and creating missing folders.
pub(crate) fn write_state(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let Some(parent) = path.parent() else {
        return Err(io::Error::other("no parent folder"));
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.ikigai-undo-{}", uuid::Uuid::new_v4().simple()));
    let made = if mode == MODE_LINK {
        let target = std::ffi::OsStr::from_bytes(bytes);
        std::os::unix::fs::symlink(target, &tmp)
    } else {
        fs::write(&tmp, bytes).and_then(|()| {
            let perm = if mode == MODE_EXEC { 0o755 } else { 0o644 };
            fs::set_permissions(&tmp, fs::Permissions::from_mode(perm))
        })
    };
    // A folder in the way (the turn replaced a file with one) goes first.
    let replaced = made.and_then(|()| {
        if fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            fs::remove_dir_all(path)?;
        }
        fs::rename(&tmp, path)
    });
    if replaced.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    replaced
}

/// Removes what the turn created at `path` (nothing to do when it is gone).
pub(crate) fn remove_state(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.sh");
        assert_eq!(state_of(&f).unwrap(), None);
        fs::write(&f, "echo").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o755)).unwrap();
        let s = state_of(&f).unwrap().unwrap();
        assert_eq!((s.mode, s.bytes.as_slice()), (MODE_EXEC, b"echo".as_slice()));
        let l = dir.path().join("link");
        std::os::unix::fs::symlink("/etc/passwd", &l).unwrap();
        let s = state_of(&l).unwrap().unwrap();
        assert_eq!(
            (s.mode, s.bytes.as_slice()),
            (MODE_LINK, b"/etc/passwd".as_slice())
        );
        assert_eq!(state_of(dir.path()).unwrap(), None);
        // Written back as they were.
        fs::remove_file(&l).unwrap();
        write_state(&l, b"/etc/passwd", MODE_LINK).unwrap();
        assert_eq!(fs::read_link(&l).unwrap(), Path::new("/etc/passwd"));
        let deep = dir.path().join("new/dir/x.txt");
        write_state(&deep, b"x", MODE_FILE).unwrap();
        assert_eq!(fs::read(&deep).unwrap(), b"x");
        remove_state(&deep).unwrap();
        remove_state(&deep).unwrap();
    }
}
