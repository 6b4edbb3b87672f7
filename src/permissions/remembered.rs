//! The "always" answers, kept per project in one private file of the user's data
//! (`$XDG_DATA_HOME/ikigai/permissions.json`, 0600): allow rules by canonical project
//! folder. Listed and removed by `/permissions`. Stores only; never asks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::private_file::{self, PrivateFileError};
use super::rule::{Rule, Source};

/// The file's name in ikigai's data folder.
pub const FILE_NAME: &str = "permissions.json";

/// Why the answers could not be read or kept. Never retryable: the user must act.
#[derive(Debug, thiserror::Error)]
pub enum RememberedError {
    #[error(transparent)]
    File(#[from] PrivateFileError),
    #[error("{path} is not a valid list of remembered answers ({message}); fix or remove it")]
    Corrupt { path: PathBuf, message: String },
    #[error("no place to keep remembered answers: set HOME or XDG_DATA_HOME")]
    NoStore,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Canonical project folder → allow rules, in the order given.
    projects: BTreeMap<String, Vec<String>>,
}

/// The remembered answers of one project.
#[derive(Clone, Debug)]
pub struct Remembered {
    path: PathBuf,
    project: String,
}

impl Remembered {
    /// The store in `data_home` (`…/ikigai/permissions.json`) for project folder `cwd`.
    pub fn in_data_home(data_home: &Path, cwd: &Path) -> Remembered {
        let project = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        Remembered {
            path: data_home.join("ikigai").join(FILE_NAME),
            project: project.display().to_string(),
        }
    }

    /// The user's store (`$XDG_DATA_HOME`, else `~/.local/share`) for `cwd`.
    pub fn default_location(cwd: &Path) -> Result<Remembered, RememberedError> {
        crate::paths::data_home(&|k| crate::environ::var(k))
            .map(|d| Remembered::in_data_home(&d, cwd))
            .ok_or(RememberedError::NoStore)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The project's rules as written, in the order they were added.
    pub fn list(&self) -> Result<Vec<String>, RememberedError> {
        Ok(self.read()?.projects.remove(&self.project).unwrap_or_default())
    }

    /// The project's rules compiled; one that no longer parses is left out.
    pub fn rules(&self) -> Result<Vec<Rule>, RememberedError> {
        let home = crate::environ::var("HOME").map(PathBuf::from);
        Ok(self
            .list()?
            .iter()
            .filter_map(|t| Rule::parse(t, Source::Remembered, home.as_deref()).ok())
            .collect())
    }

    /// Adds rules (those already there are skipped); returns the ones added.
    pub fn add(&self, rules: &[String]) -> Result<Vec<String>, RememberedError> {
        let mut file = self.read()?;
        let list = file.projects.entry(self.project.clone()).or_default();
        let mut added = Vec::new();
        for r in rules {
            if !list.contains(r) {
                list.push(r.clone());
                added.push(r.clone());
            }
        }
        if !added.is_empty() {
            self.write(&file)?;
        }
        Ok(added)
    }

    /// Removes a rule by its text or its number in `list` (from 1); returns its text.
    pub fn remove(&self, which: &str) -> Result<Option<String>, RememberedError> {
        let mut file = self.read()?;
        let Some(list) = file.projects.get_mut(&self.project) else {
            return Ok(None);
        };
        let index = match which.trim().parse::<usize>() {
            Ok(n) if n >= 1 && n <= list.len() => Some(n - 1),
            _ => list.iter().position(|r| r == which.trim()),
        };
        let Some(i) = index else { return Ok(None) };
        let removed = list.remove(i);
        if list.is_empty() {
            file.projects.remove(&self.project);
        }
        self.write(&file)?;
        Ok(Some(removed))
    }

    fn read(&self) -> Result<File, RememberedError> {
        let Some(text) = private_file::read(&self.path)? else {
            return Ok(File::default());
        };
        serde_json::from_str(&text).map_err(|e| RememberedError::Corrupt {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }

    fn write(&self, file: &File) -> Result<(), RememberedError> {
        let text = serde_json::to_string_pretty(file).map_err(|e| PrivateFileError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        Ok(private_file::write(&self.path, &text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_per_project_privately_and_removed_by_number_or_text() {
        use std::os::unix::fs::PermissionsExt;
        let data = tempfile::tempdir().unwrap();
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let ra = Remembered::in_data_home(data.path(), a.path());
        let rb = Remembered::in_data_home(data.path(), b.path());
        assert_eq!(
            ra.add(&["bash(cargo test *)".into(), "bash(make *)".into()])
                .unwrap()
                .len(),
            2
        );
        assert!(
            ra.add(&["bash(make *)".into()]).unwrap().is_empty(),
            "no duplicates"
        );
        assert!(rb.list().unwrap().is_empty(), "another project has its own");
        let mode = std::fs::metadata(ra.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(ra.rules().unwrap().len(), 2);
        assert_eq!(ra.remove("2").unwrap().as_deref(), Some("bash(make *)"));
        assert_eq!(
            ra.remove("bash(cargo test *)").unwrap().as_deref(),
            Some("bash(cargo test *)")
        );
        assert_eq!(ra.remove("bash(nope)").unwrap(), None);
        assert!(ra.list().unwrap().is_empty());
        std::fs::set_permissions(ra.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(
            ra.list(),
            Err(RememberedError::File(PrivateFileError::Unsafe { .. }))
        ));
        std::fs::set_permissions(ra.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(ra.path(), "{oops").unwrap();
        assert!(matches!(ra.list(), Err(RememberedError::Corrupt { .. })));
    }
}
