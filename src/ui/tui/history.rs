//! Input history: earlier prompts recalled with Up/Down, kept across runs in an append-only
//! file (`$XDG_DATA_HOME/ikigai/history`, one JSON string per line) bounded to `MAX` entries.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Entries kept; the file is compacted to this many when it grows past twice as many.
pub const MAX: usize = 1000;

/// The recall list plus where the user is in it.
#[derive(Debug, Default)]
pub struct History {
    entries: Vec<String>,
    path: Option<PathBuf>,
    /// Index into `entries` while browsing.
    pos: Option<usize>,
    /// What was typed before browsing started.
    draft: String,
}

/// `$XDG_DATA_HOME/ikigai/history`, else `~/.local/share/ikigai/history`.
pub fn default_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    crate::paths::data_home(env).map(|d| d.join("ikigai").join("history"))
}

impl History {
    /// Loads the file (a missing or unreadable file gives an empty history; bad lines are
    /// skipped). Compacts the file when it holds more than `2 * MAX` lines.
    pub fn load(path: Option<PathBuf>) -> Self {
        let mut h = History {
            path,
            ..Default::default()
        };
        let Some(p) = &h.path else { return h };
        let Ok(text) = std::fs::read_to_string(p) else {
            return h;
        };
        let all: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<String>(l).ok())
            .collect();
        let lines = text.lines().count();
        let start = all.len().saturating_sub(MAX);
        h.entries = all[start..].to_vec();
        if lines > 2 * MAX {
            let _ = rewrite(p, &h.entries);
        }
        h
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a sent input (not when it repeats the previous one) and appends it to the file.
    pub fn push(&mut self, entry: &str) {
        self.pos = None;
        if entry.trim().is_empty() || self.entries.last().is_some_and(|l| l == entry) {
            return;
        }
        self.entries.push(entry.to_string());
        if self.entries.len() > MAX {
            self.entries.remove(0);
        }
        if let Some(p) = &self.path {
            let _ = append(p, entry);
        }
    }

    /// Up: the previous entry, remembering `current` as the draft when browsing starts.
    pub fn older(&mut self, current: &str) -> Option<&str> {
        let next = match self.pos {
            None => {
                self.draft = current.to_string();
                self.entries.len().checked_sub(1)?
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.pos = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// Down: the next entry, or the draft after the newest.
    pub fn newer(&mut self) -> Option<&str> {
        let i = self.pos?;
        if i + 1 < self.entries.len() {
            self.pos = Some(i + 1);
            self.entries.get(i + 1).map(String::as_str)
        } else {
            self.pos = None;
            Some(&self.draft)
        }
    }

    /// Leaves browsing mode (after an edit or a send).
    pub fn reset(&mut self) {
        self.pos = None;
    }
}

/// Appends one entry. The file is private (0600) and so is its folder (0700): what a
/// person types may hold secrets. An existing file or folder that is more open is
/// tightened.
fn append(path: &Path, entry: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        if let Some(up) = dir.parent() {
            std::fs::create_dir_all(up)?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => tighten(dir, 0o700)?,
            Err(e) => return Err(e),
        }
    }
    let line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    if f.metadata()?.permissions().mode() & 0o077 != 0 {
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(format!("{line}\n").as_bytes())
}

/// Removes group and other access from `path` when it has any.
fn tighten(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::metadata(path)?.permissions().mode();
    if m & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

fn rewrite(path: &Path, entries: &[String]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    for e in entries {
        let line = serde_json::to_string(e).map_err(std::io::Error::other)?;
        writeln!(tmp, "{line}")?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_persist_across_loads_including_multiline() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/history");
        let mut h = History::load(Some(p.clone()));
        h.push("first");
        h.push("two\nlines");
        h.push("two\nlines");
        h.push("   ");
        let h2 = History::load(Some(p.clone()));
        assert_eq!(h2.entries(), ["first", "two\nlines"]);
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "\"first\"\n\"two\\nlines\"\n"
        );
    }

    #[test]
    fn file_is_private_and_so_is_its_folder() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("data/ikigai/history");
        History::load(Some(p.clone())).push("my password is hunter2");
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(p.parent().unwrap()), 0o700);
        // A file and folder left open by an older version are tightened.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(p.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
        History::load(Some(p.clone())).push("again");
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(p.parent().unwrap()), 0o700);
        // Compaction keeps it private.
        let mut text = String::new();
        for i in 0..(2 * MAX + 10) {
            text.push_str(&format!("\"e{i}\"\n"));
        }
        std::fs::write(&p, text).unwrap();
        History::load(Some(p.clone()));
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn browsing_returns_to_the_draft() {
        let mut h = History::load(None);
        h.push("a");
        h.push("b");
        assert_eq!(h.older("draft"), Some("b"));
        assert_eq!(h.older("ignored"), Some("a"));
        assert_eq!(h.older("ignored"), None);
        assert_eq!(h.newer(), Some("b"));
        assert_eq!(h.newer(), Some("draft"));
        assert_eq!(h.newer(), None);
    }

    #[test]
    fn file_is_bounded_and_bad_lines_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("history");
        let mut text = String::from("not json\n");
        for i in 0..(2 * MAX + 10) {
            text.push_str(&format!("\"e{i}\"\n"));
        }
        std::fs::write(&p, text).unwrap();
        let h = History::load(Some(p.clone()));
        assert_eq!(h.entries().len(), MAX);
        assert_eq!(h.entries().last().unwrap(), &format!("e{}", 2 * MAX + 9));
        let compacted = std::fs::read_to_string(&p).unwrap();
        assert_eq!(compacted.lines().count(), MAX);
    }

    #[test]
    fn path_follows_xdg_data_home() {
        let env = |k: &str| match k {
            "XDG_DATA_HOME" => Some("/x/data".to_string()),
            "HOME" => Some("/home/u".to_string()),
            _ => None,
        };
        assert_eq!(
            default_path(&env).unwrap(),
            PathBuf::from("/x/data/ikigai/history")
        );
        let env = |k: &str| (k == "HOME").then(|| "/home/u".to_string());
        assert_eq!(
            default_path(&env).unwrap(),
            PathBuf::from("/home/u/.local/share/ikigai/history")
        );
    }
}
