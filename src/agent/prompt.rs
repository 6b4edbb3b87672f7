//! The default system prompt: what ikigai is, where it runs, and the project's AGENTS.md.

use std::path::{Path, PathBuf};

/// AGENTS.md larger than this is cut (it goes into every request).
const AGENTS_MD_CAP: usize = 64 * 1024;

/// The prompt for a session in `cwd`.
pub fn default_prompt(cwd: &Path) -> String {
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_string());
    let date = chrono::Local::now().format("%Y-%m-%d");
    let mut p = format!(
        "You are ikigai, a coding agent working in the user's terminal. You help with software \
engineering tasks in the project below by calling the tools you are given: find files, read \
them, search them, write and edit them, and run shell commands. Look before you change \
anything; prefer small, precise edits; run the project's tests when you change code. Tool \
results are JSON. Answer concisely in Markdown.\n\n\
Working directory: {}\nOS: {}\nShell: {shell}\nDate: {date}\n",
        cwd.display(),
        std::env::consts::OS,
    );
    if let Some((path, text)) = agents_md(cwd) {
        p.push_str(&format!(
            "\nThe project's instructions ({}):\n\n{text}\n",
            path.display()
        ));
    }
    p
}

/// AGENTS.md from the working directory, else from its git root.
pub fn agents_md(cwd: &Path) -> Option<(PathBuf, String)> {
    let mut candidates = vec![cwd.join("AGENTS.md")];
    if let Some(root) = git_root(cwd).filter(|r| r != cwd) {
        candidates.push(root.join("AGENTS.md"));
    }
    candidates.into_iter().find_map(|path| {
        let bytes = std::fs::read(&path).ok()?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if text.len() > AGENTS_MD_CAP {
            let end = crate::text::shorten(&text, AGENTS_MD_CAP).len();
            text.truncate(end);
            text.push_str("\n[AGENTS.md truncated]");
        }
        Some((path, text))
    })
}

/// The nearest ancestor (or `dir` itself) holding `.git`.
pub fn git_root(dir: &Path) -> Option<PathBuf> {
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
        let p = default_prompt(&sub);
        assert!(p.contains(&format!("Working directory: {}", sub.display())));
        assert!(p.contains("Use tabs."));
        std::fs::write(sub.join("AGENTS.md"), "Local rules.").unwrap();
        let p = default_prompt(&sub);
        assert!(p.contains("Local rules.") && !p.contains("Use tabs."));
    }

    #[test]
    fn no_agents_md_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let p = default_prompt(dir.path());
        assert!(!p.contains("project's instructions"));
    }
}
