//! The default system prompt: what ikigai is, the project's AGENTS.md — only a regular
//! file whose resolved path lies inside the project (a symlink to `/proc/self/environ` or
//! to `~/.aws/credentials` is skipped with a notice) — and, last, where it runs and the
//! session's date. Byte-stable for a session (servers' prompt caches hit on every
//! request): what differs between sessions comes last, and the date is the day the
//! session began, also when it is resumed on another day.

use std::path::{Path, PathBuf};

/// AGENTS.md larger than this is cut (it goes into every request).
const AGENTS_MD_CAP: usize = 64 * 1024;

/// A system prompt and what the user should be told about how it was made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub text: String,
    /// Files skipped, and why.
    pub notices: Vec<String>,
}

/// The prompt for a session in `cwd` that began on `date` (`YYYY-MM-DD`).
pub(crate) fn default_prompt(cwd: &Path, date: &str) -> Prompt {
    let shell = crate::environ::var("SHELL").unwrap_or_else(|| "/bin/sh".to_string());
    let mut p = String::from(
        "You are ikigai, a coding agent working in the user's terminal. You help with software \
engineering tasks in the project described at the end by calling the tools you are given: find \
files, read them, search them, write and edit them, and run shell commands. Look before you \
change anything; prefer small, precise edits; run the project's tests when you change code. \
Answer concisely in Markdown.\n",
    );
    let mut notices = Vec::new();
    if let Some((path, text)) = agents_md(cwd, &mut notices) {
        p.push_str(&format!(
            "\nThe project's instructions ({}):\n\n{text}\n",
            path.display()
        ));
    }
    p.push_str(&format!(
        "\nWorking directory: {}\nOS: {}\nShell: {shell}\nDate: {date}\n",
        cwd.display(),
        std::env::consts::OS,
    ));
    Prompt { text: p, notices }
}

/// Today, as the prompt gives a session's date.
pub(crate) fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

/// The local date of an RFC 3339 time (a session's `created_at`).
pub(crate) fn date_of(rfc3339: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(rfc3339).ok()?;
    Some(t.with_timezone(&chrono::Local).format("%Y-%m-%d").to_string())
}

/// AGENTS.md from the working directory, else from its git root: the first that is a
/// regular file inside the project (the git root, else `cwd`). Each one skipped adds a
/// notice naming it.
pub(crate) fn agents_md(cwd: &Path, notices: &mut Vec<String>) -> Option<(PathBuf, String)> {
    // A home folder that is a git repository (dotfiles) is not the project of every
    // folder beneath it: there the project is the working directory, so a link to
    // `~/.aws/credentials` in a folder unpacked under home still leads outside it.
    let root = git_root(cwd).filter(|r| r == cwd || !is_home(r));
    let project = root.clone().unwrap_or_else(|| cwd.to_path_buf());
    let mut candidates = vec![cwd.join("AGENTS.md")];
    if let Some(root) = root.filter(|r| r != cwd) {
        candidates.push(root.join("AGENTS.md"));
    }
    candidates.into_iter().find_map(|path| {
        // Not there at all: nothing to say.
        std::fs::symlink_metadata(&path).ok()?;
        let resolved = match inside(&path, &project) {
            Ok(r) => r,
            Err(why) => {
                notices.push(format!("{} skipped: {why}", path.display()));
                return None;
            }
        };
        // Read no more than is kept: a huge (or sparse) file costs nothing.
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::fs::File::open(&resolved).ok()?, AGENTS_MD_CAP as u64 + 4),
            &mut bytes,
        )
        .ok()?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if text.len() > AGENTS_MD_CAP {
            let end = crate::text::shorten(&text, AGENTS_MD_CAP).len();
            text.truncate(end);
            text.push_str("\n[AGENTS.md truncated]");
        }
        Some((path, text))
    })
}

/// `path` resolved, when it is a regular file inside `project` (both resolved); else why
/// it may not be read.
fn inside(path: &Path, project: &Path) -> Result<PathBuf, String> {
    let resolved = path
        .canonicalize()
        .map_err(|e| format!("cannot resolve it ({e})"))?;
    let project = project
        .canonicalize()
        .map_err(|e| format!("cannot resolve the project folder ({e})"))?;
    if !resolved.starts_with(&project) {
        return Err(format!("it leads outside the project, to {}", resolved.display()));
    }
    let meta = std::fs::metadata(&resolved).map_err(|e| format!("cannot read it ({e})"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    Ok(resolved)
}

/// Whether `dir` is the user's home folder (both resolved).
fn is_home(dir: &Path) -> bool {
    let Some(home) = crate::environ::var_os("HOME").filter(|h| !h.is_empty()) else {
        return false;
    };
    let resolved = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    resolved(dir) == resolved(Path::new(&home))
}

/// The nearest ancestor (or `dir` itself) holding `.git`.
pub(crate) fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_environment_and_agents_md_from_git_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        let p = default_prompt(&sub, "2026-01-02").text;
        assert!(p.contains(&format!("Working directory: {}", sub.display())));
        assert!(p.contains("Use tabs."));
        std::fs::write(sub.join("AGENTS.md"), "Local rules.").unwrap();
        let p = default_prompt(&sub, "2026-01-02").text;
        assert!(p.contains("Local rules.") && !p.contains("Use tabs."));
    }

    #[test]
    fn what_differs_between_sessions_comes_last() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let p = default_prompt(dir.path(), "2026-01-02").text;
        let agents = p.find("Use tabs.").unwrap();
        let folder = p.find("Working directory:").unwrap();
        assert!(agents < folder, "{p}");
        assert!(p.ends_with("Date: 2026-01-02\n"), "{p}");
        // The same session's prompt is the same bytes, whenever it is made.
        assert_eq!(default_prompt(dir.path(), "2026-01-02").text, p);
        assert_eq!(date_of("2026-03-04T12:00:00+00:00").map(|d| d.len()), Some(10));
        assert_eq!(date_of("yesterday"), None);
    }

    #[test]
    fn no_agents_md_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let p = default_prompt(dir.path(), "2026-01-02");
        assert!(!p.text.contains("project's instructions"));
        assert!(p.notices.is_empty());
    }

    #[test]
    fn agents_md_outside_the_project_or_not_a_file_is_skipped_with_a_notice() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("creds"), "aws_secret_access_key = XYZ").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::os::unix::fs::symlink(outside.path().join("creds"), sub.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("AGENTS.md")).unwrap();
        let p = default_prompt(&sub, "2026-01-02");
        assert!(!p.text.contains("XYZ") && !p.text.contains("project's instructions"));
        assert_eq!(p.notices.len(), 2, "{:?}", p.notices);
        assert!(
            p.notices[0].contains("leads outside the project"),
            "{:?}",
            p.notices
        );
        // A symlink to a file inside the project is fine; a folder is not a file.
        std::fs::remove_file(sub.join("AGENTS.md")).unwrap();
        std::fs::write(dir.path().join("RULES.md"), "Be brief.").unwrap();
        std::os::unix::fs::symlink("../RULES.md", sub.join("AGENTS.md")).unwrap();
        assert!(default_prompt(&sub, "2026-01-02").text.contains("Be brief."));
        std::fs::remove_file(sub.join("AGENTS.md")).unwrap();
        std::fs::create_dir(sub.join("AGENTS.md")).unwrap();
        let p = default_prompt(&sub, "2026-01-02");
        assert!(p.notices[0].contains("not a regular file"), "{:?}", p.notices);
    }

    #[test]
    fn a_huge_agents_md_is_read_only_as_far_as_it_is_kept() {
        // 64 GiB, sparse (no disk used): read whole, it could not even be allocated.
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("AGENTS.md")).unwrap();
        std::io::Write::write_all(&mut &f, b"Rules first.").unwrap();
        f.set_len(64 << 30).unwrap();
        let p = default_prompt(dir.path(), "2026-01-02").text;
        // Cut there; what differs between sessions follows it.
        assert!(
            p.contains("Rules first.") && p.contains("[AGENTS.md truncated]\n\nWorking directory: "),
            "{}",
            &p[p.len() - 200..]
        );
        assert!(p.len() < AGENTS_MD_CAP + 4096, "{}", p.len());
    }
}
