//! The default system prompt: what ikigai is and the instruction files (`instructions`: the
//! user's global AGENTS.md, then AGENTS.md or CLAUDE.md from the project's root down to
//! the working directory, with their `@path` imports) and the skills' listing (name and
//! one line each, when there are skills); and apart from it the session's environment
//! (where it runs, the date), which the provider layer places
//! (`provider::Request::environment`). Byte-stable for a session (servers' prompt
//! caches hit on every request), and the same for every session of a project on any
//! day: chat templates render the tools after the system prompt, so a folder or date
//! in it would make a local server read the whole tool list again for each new session.
//! The date is the day the session began, also when it is resumed on another day.

use std::path::Path;

use super::instructions::{self, Instruction, Whose};

/// A system prompt and what the user should be told about how it was made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub text: String,
    /// Where the session runs and its date (`provider::Request::environment`).
    pub environment: String,
    /// Files skipped, and why.
    pub notices: Vec<String>,
    /// The instruction files it carries, in order.
    pub files: Vec<Instruction>,
}

/// The prompt for a session in `cwd` that began on `date` (`YYYY-MM-DD`); `global` is
/// ikigai's config folder, where the user's own AGENTS.md is; `skills` is the skills'
/// listing (`Skills::listing`, empty without skills).
pub(crate) fn default_prompt(cwd: &Path, global: Option<&Path>, date: &str, skills: &str) -> Prompt {
    let shell = crate::environ::var("SHELL").unwrap_or_else(|| "/bin/sh".to_string());
    let mut p = String::from(
        "You are ikigai, a coding agent working in the user's terminal. You help with software \
engineering tasks in the project described at the start of the conversation by calling the tools you are given: find \
files, read them, search them, write and edit them, and run shell commands. Look before you \
change anything; prefer small, precise edits; run the project's tests when you change code. \
Answer concisely in Markdown.\n",
    );
    let read = instructions::read(cwd, global, &|k| crate::environ::var(k));
    for f in &read.files {
        let whose = match f.whose {
            Whose::User => "The user's instructions",
            Whose::Project => "The project's instructions",
        };
        let by = match &f.imported_by {
            Some(by) => format!(", imported by {}", by.display()),
            None => String::new(),
        };
        p.push_str(&format!("\n{whose} ({}{by}):\n\n{}\n", f.path.display(), f.text));
    }
    p.push_str(skills);
    let environment = format!(
        "Working directory: {}\nOS: {}\nShell: {shell}\nDate: {date}\n",
        cwd.display(),
        std::env::consts::OS,
    );
    Prompt {
        text: p,
        environment,
        notices: read.notices,
        files: read.files,
    }
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
        let made = default_prompt(&sub, None, "2026-01-02", "");
        assert!(
            made.environment
                .contains(&format!("Working directory: {}", sub.display()))
        );
        assert!(made.text.contains("Use tabs."));
        std::fs::write(sub.join("AGENTS.md"), "Local rules.").unwrap();
        // Every level is sent, the root's first.
        let p = default_prompt(&sub, None, "2026-01-02", "").text;
        let (root, local) = (p.find("Use tabs.").unwrap(), p.find("Local rules.").unwrap());
        assert!(root < local, "{p}");
    }

    #[test]
    fn what_differs_between_sessions_is_not_in_the_system_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let p = default_prompt(dir.path(), None, "2026-01-02", "");
        assert!(
            !p.text.contains("Working directory") && !p.text.contains("2026"),
            "{}",
            p.text
        );
        assert!(p.environment.ends_with("Date: 2026-01-02\n"), "{}", p.environment);
        // Another folder, another day: the same system prompt, another environment.
        let q = default_prompt(other.path(), None, "2027-05-06", "");
        assert_eq!(q.text, p.text);
        assert_ne!(q.environment, p.environment);
        // The same session's prompt is the same bytes, whenever it is made.
        assert_eq!(default_prompt(dir.path(), None, "2026-01-02", ""), p);
        assert_eq!(date_of("2026-03-04T12:00:00+00:00").map(|d| d.len()), Some(10));
        assert_eq!(date_of("yesterday"), None);
    }

    #[test]
    fn no_agents_md_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let p = default_prompt(dir.path(), None, "2026-01-02", "");
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
        let p = default_prompt(&sub, None, "2026-01-02", "");
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
        assert!(
            default_prompt(&sub, None, "2026-01-02", "")
                .text
                .contains("Be brief.")
        );
        std::fs::remove_file(sub.join("AGENTS.md")).unwrap();
        std::fs::create_dir(sub.join("AGENTS.md")).unwrap();
        let p = default_prompt(&sub, None, "2026-01-02", "");
        // The root's link to /proc is told first (the root's file comes first).
        assert!(p.notices[1].contains("not a regular file"), "{:?}", p.notices);
    }

    #[test]
    fn a_huge_agents_md_is_read_only_as_far_as_it_is_kept() {
        // 64 GiB, sparse (no disk used): read whole, it could not even be allocated.
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("AGENTS.md")).unwrap();
        std::io::Write::write_all(&mut &f, b"Rules first.").unwrap();
        f.set_len(64 << 30).unwrap();
        let p = default_prompt(dir.path(), None, "2026-01-02", "").text;
        // Cut there, and marked.
        assert!(
            p.contains("Rules first.") && p.ends_with("[AGENTS.md truncated]\n"),
            "{}",
            &p[p.len() - 200..]
        );
        assert!(p.len() < instructions::CAP + 4096, "{}", p.len());
    }

    #[test]
    fn the_skills_listing_comes_after_the_instructions_and_the_session_s_place_apart() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let without = default_prompt(dir.path(), None, "2026-01-02", "");
        let with = default_prompt(dir.path(), None, "2026-01-02", "\nSkills: …\n- fmt: d\n");
        let p = &with.text;
        let (agents, skills) = (p.find("Use tabs.").unwrap(), p.find("- fmt: d").unwrap());
        assert!(agents < skills && p.ends_with("- fmt: d\n"), "{p}");
        assert_eq!(p.replace("\nSkills: …\n- fmt: d\n", ""), without.text);
        // Where the session runs is not in the prompt, skills or none.
        assert!(!p.contains("Working directory:"), "{p}");
        assert_eq!(with.environment, without.environment);
    }
}
