//! A trusted project's `[permissions]` rules, from its `.ikigai/config.toml`. The caller
//! checks trust first; an untrusted folder's file is never read. Reads; never decides.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::decide::Rules;
use super::rule::Source;
use crate::config::PermissionsSection;

/// Why the project's rules could not be read: the file and the message.
#[derive(Debug, thiserror::Error)]
#[error("{file}: `permissions`: {message}")]
pub struct ProjectRulesError {
    pub file: PathBuf,
    pub message: String,
}

/// The rules of `cwd/.ikigai/config.toml` (none when there is no file or no section).
pub fn load(cwd: &Path) -> Result<Rules, ProjectRulesError> {
    let file = cwd.join(".ikigai/config.toml");
    let err = |message: String| ProjectRulesError {
        file: file.clone(),
        message,
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Rules::default()),
        Err(e) => return Err(err(format!("cannot read the file: {e}"))),
    };
    #[derive(Deserialize)]
    struct Project {
        permissions: Option<PermissionsSection>,
    }
    let project: Project = toml::from_str(&text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
    let home = crate::environ::var("HOME").map(PathBuf::from);
    match project.permissions {
        None => Ok(Rules::default()),
        Some(section) => section
            .compile(Source::Project, home.as_deref())
            .map_err(|e| err(e.to_string())),
    }
}

/// `user` with `project`'s rules added to each list.
pub fn merge(user: &mut Rules, project: Rules) {
    user.allow.extend(project.allow);
    user.ask.extend(project.ask);
    user.deny.extend(project.deny);
}
