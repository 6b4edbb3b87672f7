//! A small file of the user's own under ikigai's data folder (the trust list, the
//! remembered answers): read only when it is a regular file of this user that nobody else
//! may write, written atomically with mode 0600 in a 0700 folder. Text in, text out.

use std::path::{Path, PathBuf};

/// Why such a file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PrivateFileError {
    /// The file is not the user's own private file; it is not believed.
    #[error("{path} is ignored: {why}; remove it or make it yours alone (chmod 600)")]
    Unsafe { path: PathBuf, why: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// The file's text; `None` when it does not exist.
pub fn read(path: &Path) -> Result<Option<String>, PrivateFileError> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(PrivateFileError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let unsafe_because = |why: &str| PrivateFileError::Unsafe {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    if !meta.file_type().is_file() {
        return Err(unsafe_because("it is not a regular file"));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(unsafe_because("it belongs to another user"));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unsafe_because("other users may write it"));
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|source| PrivateFileError::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// Replaces the file with `text` (and a final newline), atomically, mode 0600.
pub fn write(path: &Path, text: &str) -> Result<(), PrivateFileError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let err = |source| PrivateFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(format!("{text}\n").as_bytes())
                .and_then(|()| f.sync_all())
        })
        .map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
