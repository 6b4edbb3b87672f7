//! Where sessions live: the default SQLite file, a SQLite path or URL, or a PostgreSQL
//! URL from `database_url`. Decides and names the place; opens nothing.

use std::path::{Path, PathBuf};

use super::StoreError;
use crate::config::{Config, redact_url};

/// A database to open.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (created with its folder when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://` or `postgresql://`); it may carry a password.
    Postgres(String),
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Location {
    /// `database_url` when set, else `$XDG_DATA_HOME/ikigai/ikigai.db`
    /// (or `~/.local/share/ikigai/ikigai.db`).
    pub fn from_config(config: &Config) -> Result<Location, StoreError> {
        Self::resolve(config, &|k| crate::environ::var(k))
    }

    /// As `from_config`, with an explicit environment.
    pub fn resolve(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Result<Location, StoreError> {
        match &config.database_url {
            Some(url) => Self::parse(url.expose()),
            None => default_sqlite_path(env).map(Location::Sqlite).ok_or_else(|| {
                StoreError::Other(
                    "no place for the session database: set HOME, XDG_DATA_HOME or database_url".into(),
                )
            }),
        }
    }

    /// Reads a `database_url`: `postgres://…`, `postgresql://…`, `sqlite://PATH`,
    /// `sqlite:PATH` or a plain file path.
    pub fn parse(url: &str) -> Result<Location, StoreError> {
        let url = url.trim();
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Ok(Location::Postgres(url.to_string()));
        }
        let path = if lower.starts_with("sqlite://") {
            &url["sqlite://".len()..]
        } else if lower.starts_with("sqlite:") {
            &url["sqlite:".len()..]
        } else if url.contains("://") {
            return Err(StoreError::Other(format!(
                "unsupported database_url {}: use postgres://…, sqlite://PATH or a file path",
                redact_url(url)
            )));
        } else {
            url
        };
        let path = path.split('?').next().unwrap_or_default();
        if path.is_empty() || path == ":memory:" {
            return Err(StoreError::Other(format!(
                "database_url {url} names no file; give a path such as sqlite:///home/me/ikigai.db"
            )));
        }
        Ok(Location::Sqlite(PathBuf::from(path)))
    }

    /// How notices and errors name the database; a password is never shown.
    pub fn name(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(url) => redact_url(url),
        }
    }
}

/// `$XDG_DATA_HOME/ikigai/ikigai.db`, else `$HOME/.local/share/ikigai/ikigai.db`.
pub fn default_sqlite_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    crate::paths::data_home(env).map(|d| d.join("ikigai").join("ikigai.db"))
}

/// Makes ikigai's data folder (`$XDG_DATA_HOME/ikigai`, else
/// `~/.local/share/ikigai`) private (0700), creating it when missing, whatever the
/// backend: it holds the history file, and the SQLite database by default.
pub fn secure_data_dir(env: &dyn Fn(&str) -> Option<String>) {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    // (Tightening a folder that is not ours fails with EPERM, which is ignored.)
    let Some(dir) = crate::paths::data_home(env).map(|d| d.join("ikigai")) else {
        return;
    };
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    // An older folder made with the default mode is ours to tighten.
    if let Ok(meta) = std::fs::metadata(&dir)
        && meta.mode() & 0o077 != 0
    {
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
}

/// The folder a SQLite file goes in, when its path names one.
pub(crate) fn parent_dir(p: &Path) -> Option<&Path> {
    p.parent().filter(|d| !d.as_os_str().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    #[test]
    fn default_path_follows_xdg_then_home() {
        let env = |k: &str| match k {
            "XDG_DATA_HOME" => Some("/data".to_string()),
            "HOME" => Some("/home/me".to_string()),
            _ => None,
        };
        assert_eq!(
            default_sqlite_path(&env).unwrap(),
            PathBuf::from("/data/ikigai/ikigai.db")
        );
        let env = |k: &str| match k {
            "XDG_DATA_HOME" => Some("relative".to_string()),
            "HOME" => Some("/home/me".to_string()),
            _ => None,
        };
        assert_eq!(
            default_sqlite_path(&env).unwrap(),
            PathBuf::from("/home/me/.local/share/ikigai/ikigai.db")
        );
        assert!(Location::resolve(&Config::default(), &|_| None).is_err());
    }

    #[test]
    fn urls_pick_the_backend() {
        assert_eq!(
            Location::parse("postgres://u:pw@h/db").unwrap(),
            Location::Postgres("postgres://u:pw@h/db".into())
        );
        assert!(matches!(
            Location::parse("postgresql://h/db").unwrap(),
            Location::Postgres(_)
        ));
        assert_eq!(
            Location::parse("sqlite:///tmp/x.db").unwrap(),
            Location::Sqlite("/tmp/x.db".into())
        );
        assert_eq!(
            Location::parse("sqlite:rel.db?mode=rwc").unwrap(),
            Location::Sqlite("rel.db".into())
        );
        assert_eq!(
            Location::parse("/tmp/y.db").unwrap(),
            Location::Sqlite("/tmp/y.db".into())
        );
        let err = Location::parse("mysql://u:secret@h/db").unwrap_err().to_string();
        assert!(err.contains("unsupported") && !err.contains("secret"), "{err}");
        assert!(Location::parse("sqlite::memory:").is_err());
        assert!(Location::parse("sqlite://").is_err());
    }

    #[test]
    fn names_hide_passwords() {
        let cfg = Config {
            database_url: Some(Secret::new("postgres://me:hunter2@db.example/ikigai")),
            ..Default::default()
        };
        let loc = Location::from_config(&cfg).unwrap();
        assert!(!loc.name().contains("hunter2"));
        assert!(!format!("{loc:?}").contains("hunter2"));
        assert!(loc.name().contains("db.example"));
    }
}
