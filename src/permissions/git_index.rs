//! The submodules a repository's index records (gitlink entries, mode 160000), read
//! from `.git/index` (versions 2, 3 and 4) without running git: `git status` recurses
//! into each populated one and reads its configuration, so those are checked too. An
//! index this reader cannot read whole (another version, a split index whose entries
//! live in a shared file, a damaged file) is an error: the caller fails closed. Results
//! are kept per index file while its size and modification time stay the same.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::SystemTime;

/// Why the index cannot be read whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum IndexError {
    #[error("the git index {0} cannot be read")]
    Unreadable(String),
    #[error("the git index {0} is not one this reader knows ({1})")]
    Unknown(String, &'static str),
}

type Key = (PathBuf, u64, Option<SystemTime>);
/// The gitlinks of each index read, by path, with the size and time they were read at.
type Cache = HashMap<PathBuf, (Key, Vec<String>)>;

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The paths of the gitlink entries of the index at `path` (none when it does not exist).
pub(crate) fn gitlinks(path: &Path) -> Result<Vec<String>, IndexError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(_) => return Err(IndexError::Unreadable(path.display().to_string())),
    };
    let key: Key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    if let Ok(cache) = CACHE.lock()
        && let Some((k, links)) = cache.get(path)
        && *k == key
    {
        return Ok(links.clone());
    }
    let bytes = std::fs::read(path).map_err(|_| IndexError::Unreadable(path.display().to_string()))?;
    let links = parse(&bytes).map_err(|why| IndexError::Unknown(path.display().to_string(), why))?;
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() > 64 {
            cache.clear();
        }
        cache.insert(path.to_path_buf(), (key, links.clone()));
    }
    Ok(links)
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Parses an index; the gitlink paths, or why it cannot be read.
fn parse(b: &[u8]) -> Result<Vec<String>, &'static str> {
    if b.get(0..4) != Some(b"DIRC") {
        return Err("no DIRC signature");
    }
    let version = be32(b, 4).ok_or("short header")?;
    if !(2..=4).contains(&version) {
        return Err("an index version other than 2, 3 or 4");
    }
    let count = be32(b, 8).ok_or("short header")? as usize;
    // The hash is SHA-1 (20 bytes) unless the repository uses SHA-256; try both.
    for hash in [20usize, 32] {
        if let Ok(links) = entries(b, version, count, hash) {
            return Ok(links);
        }
    }
    Err("entries that do not parse")
}

fn entries(b: &[u8], version: u32, count: usize, hash: usize) -> Result<Vec<String>, &'static str> {
    let mut at = 12;
    let mut links = Vec::new();
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(b, at + 24).ok_or("short entry")?;
        let flags_at = at + 40 + hash;
        let flags = b
            .get(flags_at..flags_at + 2)
            .map(|s| u16::from_be_bytes([s[0], s[1]]))
            .ok_or("short entry")?;
        let mut path_at = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            path_at += 2;
        }
        let path: Vec<u8> = if version == 4 {
            // A varint: bytes to drop from the previous path, then the rest of this one.
            let mut strip: usize = 0;
            let mut i = path_at;
            loop {
                let byte = *b.get(i).ok_or("short entry")?;
                i += 1;
                strip = (strip << 7) | usize::from(byte & 0x7f);
                if byte & 0x80 == 0 {
                    break;
                }
                strip += 1;
            }
            let end = i + b
                .get(i..)
                .ok_or("short entry")?
                .iter()
                .position(|&c| c == 0)
                .ok_or("unterminated path")?;
            let keep = previous.len().checked_sub(strip).ok_or("bad prefix")?;
            let mut p = previous[..keep].to_vec();
            p.extend_from_slice(&b[i..end]);
            at = end + 1;
            p
        } else {
            let end = path_at
                + b.get(path_at..)
                    .ok_or("short entry")?
                    .iter()
                    .position(|&c| c == 0)
                    .ok_or("unterminated path")?;
            let p = b[path_at..end].to_vec();
            // Entries are padded with NULs to a multiple of 8 bytes.
            let len = end - start;
            at = start + (len / 8 + 1) * 8;
            p
        };
        if mode & 0o170000 == 0o160000 {
            links.push(String::from_utf8_lossy(&path).into_owned());
        }
        previous = path;
    }
    // Extensions: a split index keeps its entries in another file.
    while at + 8 <= b.len().saturating_sub(hash) {
        let sig = &b[at..at + 4];
        let size = be32(b, at + 4).ok_or("short extension")? as usize;
        if sig == b"link" {
            return Err("a split index");
        }
        at += 8 + size;
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn gitlinks_are_found_in_every_index_version_and_a_split_index_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/deep/a.rs"), "x").unwrap();
        std::fs::write(root.join("b.txt"), "x").unwrap();
        let sub = root.join("vendor/inner");
        std::fs::create_dir_all(&sub).unwrap();
        git(&sub, &["init", "-q"]);
        std::fs::write(sub.join("f"), "x").unwrap();
        git(&sub, &["add", "f"]);
        git(&sub, &["commit", "-qm", "x"]);
        git(root, &["add", "b.txt", "src", "vendor/inner"]);
        for v in ["2", "3", "4"] {
            git(root, &["update-index", "--index-version", v]);
            let links = gitlinks(&root.join(".git/index")).unwrap();
            assert_eq!(links, ["vendor/inner"], "version {v}");
        }
        git(root, &["update-index", "--split-index"]);
        assert!(gitlinks(&root.join(".git/index")).is_err());
        assert!(gitlinks(&root.join("nothing")).unwrap().is_empty());
        std::fs::write(root.join("bad"), "DIRC\0\0\0\x09").unwrap();
        assert!(gitlinks(&root.join("bad")).is_err());
    }
}
