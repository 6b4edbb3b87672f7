//! The files `file_read` deny rules keep from the model, as the `grep` tool needs them:
//! it leaves such files out of its walk (it never reads them) and refuses to search one
//! named directly. A path is resolved as the rules resolve it (decide.rs) before it is
//! matched. Matches; never reads a file.

use std::path::{Path, PathBuf};

use super::rule::Rule;

/// `file_read` deny rules and the project folder they are relative to.
#[derive(Clone, Debug)]
pub struct Unreadable {
    rules: Vec<Rule>,
    policy: super::Policy,
}

impl Unreadable {
    /// The `file_read` deny rules of `policy`; `None` when there are none.
    pub(crate) fn of(policy: &super::Policy) -> Option<Unreadable> {
        let rules: Vec<Rule> = policy
            .rules
            .deny
            .iter()
            .filter(|r| r.names(crate::tool_vocab::meta::FILE_READ.name) && !r.is_bash())
            .cloned()
            .collect();
        (!rules.is_empty()).then(|| Unreadable {
            rules,
            policy: super::Policy::new(Default::default(), policy.root()),
        })
    }

    /// Whether a deny rule covers `path` (absolute, or relative to the project).
    pub fn covers(&self, path: &Path) -> bool {
        let resolved = self.policy.resolve(&path.to_string_lossy());
        self.rules.iter().any(|r| r.matches_path(&resolved))
    }

    /// Whether a deny rule covers `real`, an absolute path with no link in it (a walk's
    /// entry beneath a resolved folder): matched without touching the disk.
    pub fn covers_real(&self, real: &Path) -> bool {
        let place = match real.strip_prefix(self.policy.root()) {
            Ok(rel) => Ok(rel.to_path_buf()),
            Err(_) => Err(PathBuf::from(real)),
        };
        self.rules.iter().any(|r| r.matches_path(&place))
    }
}
