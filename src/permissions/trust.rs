//! Which folders the user trusts. Nothing from a project folder runs or configures ikigai
//! (project tools, project settings, project MCP servers, project commands) until the
//! folder, or a folder above it, is trusted. Trust is kept in one private file under the
//! user's data folder (`$XDG_DATA_HOME/ikigai/trusted.json`, 0600), by canonical path;
//! a file that another user could have written is not believed. With each folder it keeps
//! the digest of its settings and of the project files they run (`pin`), as trusted.
//! Decides and stores only; asking the user and printing are the front ends' business.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The store's file name in ikigai's data folder.
pub const FILE_NAME: &str = "trusted.json";
/// What `/tools` and notices say about a project tool that was not loaded.
pub const NOT_TRUSTED: &str = "not loaded: this folder is not trusted";

/// Why trust could not be read or changed. Never retryable: the user must act.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// Neither `XDG_DATA_HOME` nor `HOME` names a data folder.
    #[error("no place to keep trusted folders: set HOME or XDG_DATA_HOME")]
    NoStore,
    /// The folder does not exist or cannot be resolved.
    #[error("cannot trust {path}: {source}")]
    Folder { path: PathBuf, source: std::io::Error },
    /// The path is not valid UTF-8, which the store cannot keep exactly.
    #[error("cannot trust {0}: its path is not valid UTF-8")]
    NotUtf8(PathBuf),
    /// The store is not the user's own private file.
    #[error("{path} is ignored: {why}; remove it or make it yours alone (chmod 600)")]
    Unsafe { path: PathBuf, why: String },
    /// The store exists but is not what ikigai wrote.
    #[error("{path} is not a valid trust list ({message}); fix or remove it")]
    Corrupt { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
}

/// One trusted folder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Canonical (absolute, symlinks resolved) path.
    pub path: PathBuf,
    /// When it was trusted (RFC 3339, UTC).
    pub since: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    folders: Vec<Entry>,
    /// For each project folder ikigai loaded settings from, the digest of those settings
    /// as trusted (`pin::fingerprint`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pins: BTreeMap<PathBuf, String>,
}

/// Whether a folder's project settings may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Trusted,
    NotTrusted,
    /// Trusted, but its settings (`.ikigai/`) or the project files they run changed since
    /// (`pin`): not used until trusted again.
    Changed,
}

/// The trust list in one file.
#[derive(Clone, Debug)]
pub struct Store {
    path: PathBuf,
}

/// What `trust` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trusted {
    /// The folder was added.
    Added(PathBuf),
    /// It was already trusted, by this entry (itself or a folder above it).
    Already(Entry),
}

/// What `revoke` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Revoked {
    /// The folder's entry was removed.
    Removed(PathBuf),
    /// The folder has no entry of its own but is trusted through this one.
    Through(Entry),
    /// The folder was not trusted.
    NotTrusted(PathBuf),
}

impl Store {
    /// The store in this data folder (`…/ikigai` is added).
    pub fn in_data_home(data_home: &Path) -> Store {
        Store {
            path: data_home.join("ikigai").join(FILE_NAME),
        }
    }

    /// The user's store: `$XDG_DATA_HOME/ikigai/trusted.json`, else under
    /// `~/.local/share`.
    pub fn default_location() -> Result<Store, TrustError> {
        crate::paths::data_home(&|k| crate::environ::var(k))
            .map(|d| Store::in_data_home(&d))
            .ok_or(TrustError::NoStore)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every trusted folder, in the order trusted. A missing file is an empty list.
    pub fn list(&self) -> Result<Vec<Entry>, TrustError> {
        Ok(self.read()?.folders)
    }

    /// The entry that makes `dir` trusted (its own or a folder above it), if any.
    pub fn trusted_by(&self, dir: &Path) -> Result<Option<Entry>, TrustError> {
        let Ok(dir) = dir.canonicalize() else {
            return Ok(None);
        };
        Ok(covering(&self.read()?.folders, &dir))
    }

    /// Trusts `dir` and every folder under it.
    pub fn trust(&self, dir: &Path) -> Result<Trusted, TrustError> {
        let dir = dir.canonicalize().map_err(|source| TrustError::Folder {
            path: dir.to_path_buf(),
            source,
        })?;
        if !dir.is_dir() {
            return Err(TrustError::Folder {
                path: dir,
                source: std::io::Error::other("not a folder"),
            });
        }
        if dir.to_str().is_none() {
            return Err(TrustError::NotUtf8(dir));
        }
        // A store another user could have written is replaced, not believed.
        let mut file = match self.read() {
            Ok(f) => f,
            Err(TrustError::Unsafe { .. }) => File::default(),
            Err(e) => return Err(e),
        };
        // Trusting is trusting the settings as they are now.
        file.pins.insert(dir.clone(), super::pin::fingerprint(&dir));
        if let Some(e) = covering(&file.folders, &dir) {
            self.write(&file)?;
            return Ok(Trusted::Already(e));
        }
        file.folders.push(Entry {
            path: dir.clone(),
            since: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        });
        self.write(&file)?;
        Ok(Trusted::Added(dir))
    }

    /// Whether `dir`'s project settings may be used: trusted (itself or a folder above
    /// it) and its settings the ones trusted. Settings first seen in a trusted folder
    /// (one trusted through a folder above it, or before ikigai kept digests) are pinned
    /// as they are.
    pub fn state(&self, dir: &Path) -> Result<State, TrustError> {
        let Ok(dir) = dir.canonicalize() else {
            return Ok(State::NotTrusted);
        };
        let mut file = self.read()?;
        if covering(&file.folders, &dir).is_none() {
            return Ok(State::NotTrusted);
        }
        let now = super::pin::fingerprint(&dir);
        match file.pins.get(&dir) {
            Some(pinned) if *pinned == now => Ok(State::Trusted),
            Some(_) => Ok(State::Changed),
            None => {
                file.pins.insert(dir, now);
                self.write(&file)?;
                Ok(State::Trusted)
            }
        }
    }

    /// Stops trusting `dir` (its own entry). A folder that no longer exists is matched by
    /// its absolute path as given.
    pub fn revoke(&self, dir: &Path) -> Result<Revoked, TrustError> {
        let dir = dir
            .canonicalize()
            .unwrap_or_else(|_| std::path::absolute(dir).unwrap_or(dir.to_path_buf()));
        let mut file = self.read()?;
        let before = file.folders.len();
        file.folders.retain(|e| e.path != dir);
        file.pins.remove(&dir);
        if file.folders.len() != before {
            self.write(&file)?;
            return Ok(Revoked::Removed(dir));
        }
        Ok(match covering(&file.folders, &dir) {
            Some(e) => Revoked::Through(e),
            None => Revoked::NotTrusted(dir),
        })
    }

    fn read(&self) -> Result<File, TrustError> {
        let Some(text) = super::private_file::read(&self.path).map_err(TrustError::from)? else {
            return Ok(File::default());
        };
        serde_json::from_str(&text).map_err(|e| TrustError::Corrupt {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }

    fn write(&self, file: &File) -> Result<(), TrustError> {
        let text = serde_json::to_string_pretty(file).map_err(|e| TrustError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        super::private_file::write(&self.path, &text).map_err(TrustError::from)
    }
}

impl From<super::private_file::PrivateFileError> for TrustError {
    fn from(e: super::private_file::PrivateFileError) -> Self {
        use super::private_file::PrivateFileError as P;
        match e {
            P::Unsafe { path, why } => TrustError::Unsafe { path, why },
            P::Read { path, source } => TrustError::Read { path, source },
            P::Write { path, source } => TrustError::Write { path, source },
        }
    }
}

/// The entry covering canonical `dir`: itself or the nearest folder above it.
fn covering(entries: &[Entry], dir: &Path) -> Option<Entry> {
    entries
        .iter()
        .filter(|e| dir.starts_with(&e.path))
        .max_by_key(|e| e.path.components().count())
        .cloned()
}

/// Whether `dir` is trusted by the user's store. Anything that goes wrong reading it
/// (no store, an unsafe or broken file) means not trusted.
pub fn is_trusted(dir: &Path) -> bool {
    state(dir) == State::Trusted
}

/// `Store::state` in the user's store; anything that goes wrong means not trusted.
pub fn state(dir: &Path) -> State {
    Store::default_location()
        .and_then(|s| s.state(dir))
        .unwrap_or(State::NotTrusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_folder_covers_its_subfolders_by_canonical_path() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::in_data_home(&home.path().join("data"));
        let proj = home.path().join("proj");
        std::fs::create_dir_all(proj.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(home.path().join("projection")).unwrap();
        assert_eq!(store.trusted_by(&proj).unwrap(), None);
        assert!(matches!(store.trust(&proj).unwrap(), Trusted::Added(_)));
        assert!(store.trusted_by(&proj.join("sub/deeper")).unwrap().is_some());
        assert_eq!(
            store.trusted_by(&home.path().join("projection")).unwrap(),
            None,
            "a sibling with the same prefix"
        );
        // A symlink into the folder resolves to it; one from inside to outside does not.
        std::os::unix::fs::symlink(&proj, home.path().join("link")).unwrap();
        assert!(store.trusted_by(&home.path().join("link/sub")).unwrap().is_some());
        std::os::unix::fs::symlink(home.path().join("projection"), proj.join("out")).unwrap();
        assert_eq!(store.trusted_by(&proj.join("out")).unwrap(), None);
        assert!(
            matches!(store.trust(&proj.join("sub")).unwrap(), Trusted::Already(e) if e.path == proj.canonicalize().unwrap())
        );
        assert!(matches!(
            store.revoke(&proj.join("sub")).unwrap(),
            Revoked::Through(_)
        ));
        assert!(matches!(store.revoke(&proj).unwrap(), Revoked::Removed(_)));
        assert_eq!(store.list().unwrap(), Vec::new());
        assert!(matches!(store.revoke(&proj).unwrap(), Revoked::NotTrusted(_)));
    }

    #[test]
    fn settings_changed_since_trust_are_not_trusted_until_trusted_again() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::in_data_home(&home.path().join("data"));
        let proj = home.path().join("proj");
        std::fs::create_dir_all(proj.join("sub/.ikigai")).unwrap();
        std::fs::create_dir_all(proj.join(".ikigai")).unwrap();
        std::fs::write(proj.join(".ikigai/config.toml"), "[permissions]\n").unwrap();
        assert_eq!(store.state(&proj).unwrap(), State::NotTrusted);
        store.trust(&proj).unwrap();
        assert_eq!(store.state(&proj).unwrap(), State::Trusted);
        // A command writes the settings: no longer the ones trusted.
        std::fs::write(
            proj.join(".ikigai/config.toml"),
            "[mcp_servers.x]\ncommand = \"sh\"\n",
        )
        .unwrap();
        assert_eq!(store.state(&proj).unwrap(), State::Changed);
        assert_eq!(store.state(&proj).unwrap(), State::Changed, "it stays so");
        // Trusting again trusts them as they are now.
        assert!(matches!(store.trust(&proj).unwrap(), Trusted::Already(_)));
        assert_eq!(store.state(&proj).unwrap(), State::Trusted);
        // A folder trusted through the one above: its settings as first seen are pinned.
        let sub = proj.join("sub");
        std::fs::write(sub.join(".ikigai/config.toml"), "").unwrap();
        assert_eq!(store.state(&sub).unwrap(), State::Trusted);
        std::fs::create_dir_all(sub.join(".ikigai/tools")).unwrap();
        std::fs::write(sub.join(".ikigai/tools/t"), "#!/bin/sh\n").unwrap();
        assert_eq!(store.state(&sub).unwrap(), State::Changed);
        // Revoked: not trusted, and trusting afresh pins what is there.
        store.revoke(&proj).unwrap();
        assert_eq!(store.state(&proj).unwrap(), State::NotTrusted);
        store.trust(&sub).unwrap();
        assert_eq!(store.state(&sub).unwrap(), State::Trusted);
    }

    #[test]
    fn the_store_is_private_and_a_loose_one_is_not_believed() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let store = Store::in_data_home(home.path());
        store.trust(home.path()).unwrap();
        let mode = std::fs::metadata(store.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(
            store.trusted_by(home.path()),
            Err(TrustError::Unsafe { .. })
        ));
        std::fs::write(store.path(), "{not json").unwrap();
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(store.list(), Err(TrustError::Corrupt { .. })));
        let gone = home.path().join("gone");
        assert!(matches!(store.trust(&gone), Err(TrustError::Folder { .. })));
    }
}
