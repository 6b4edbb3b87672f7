//! Whether the project's own git repository would run a program of its own when a
//! read-only `git` command (`git status`, `git diff`, `git log`…) runs in it: a hook, or a
//! config key that names a command (`core.fsmonitor`, `diff.external`, a textconv or
//! filter driver, an `include` of another file). `git clone` writes none of these, but a
//! repository that came as an archive or a copied folder can carry them. Reads the
//! repository's `config` and `hooks/`; never runs git, never writes.

use std::path::{Path, PathBuf};

/// Sections whose every key only describes the repository (what `git clone`, `git init`
/// and everyday use write); no key in them runs a program during a read-only command.
const PLAIN_SECTIONS: [&str; 20] = [
    "remote",
    "branch",
    "submodule",
    "extensions",
    "user",
    "pull",
    "push",
    "fetch",
    "gc",
    "maintenance",
    "lfs",
    "init",
    "color",
    "advice",
    "index",
    "pack",
    "feature",
    "log",
    "status",
    "worktree",
];

/// `core` keys that only describe the repository (`core.fsmonitor`, `core.pager`,
/// `core.hooksPath`, `core.sshCommand`… are not among them).
const PLAIN_CORE_KEYS: [&str; 18] = [
    "repositoryformatversion",
    "filemode",
    "bare",
    "logallrefupdates",
    "ignorecase",
    "precomposeunicode",
    "symlinks",
    "sparsecheckout",
    "sparsecheckoutcone",
    "autocrlf",
    "eol",
    "safecrlf",
    "quotepath",
    "compression",
    "untrackedcache",
    "splitindex",
    "checkstat",
    "trustctime",
];

/// Why a read-only git command in `dir` could run a program of the repository's, or
/// `None` when its config and hooks are plain (or there is no repository).
pub(crate) fn runs_own_programs(dir: &Path) -> Option<String> {
    let dot_git = dir.ancestors().map(|d| d.join(".git")).find(|g| g.exists())?;
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        dot_git.parent().unwrap_or(dir).join(target)
    };
    let mut dirs = vec![git_dir.clone()];
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        dirs.push(git_dir.join(common.trim()));
    }
    dirs.iter()
        .find_map(|d| hook(d).or_else(|| config_key(&d.join("config"))))
}

/// A hook that git would run (any file in `hooks/` but the `.sample`s).
fn hook(git_dir: &Path) -> Option<String> {
    let entries = std::fs::read_dir(git_dir.join("hooks")).ok()?;
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| !name.ends_with(".sample"))
        .map(|name| format!("the repository has a git hook (.git/hooks/{name})"))
}

/// The first key of `config` outside the plain ones, as `section.key`.
fn config_key(config: &PathBuf) -> Option<String> {
    let text = match std::fs::read(config) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => return Some("the repository's git config cannot be read".into()),
    };
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let head = rest.split(']').next().unwrap_or("");
            section = head
                .split(|c: char| c.is_whitespace() || c == '"' || c == '.')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            // `[core] fsmonitor = x` may follow on the same line.
            let after = rest.split_once(']').map_or("", |(_, a)| a.trim());
            if after.is_empty() || after.starts_with('#') || after.starts_with(';') {
                continue;
            }
            if let Some(why) = judge(&section, after) {
                return Some(why);
            }
            continue;
        }
        if let Some(why) = judge(&section, line) {
            return Some(why);
        }
    }
    None
}

/// Why `line` (a `key = value` in `section`) may run a program, if it may.
fn judge(section: &str, line: &str) -> Option<String> {
    let key = line
        .split(|c: char| c == '=' || c.is_whitespace())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let plain =
        PLAIN_SECTIONS.contains(&section) || (section == "core" && PLAIN_CORE_KEYS.contains(&key.as_str()));
    (!plain)
        .then(|| format!("the repository's git config sets `{section}.{key}`, which git may run or follow"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cloned_config_is_plain_and_commands_hooks_and_includes_are_not() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(runs_own_programs(d.path()), None, "no repository");
        let git = d.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "").unwrap();
        let cloned = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                      [remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                      [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        std::fs::write(git.join("config"), cloned).unwrap();
        assert_eq!(runs_own_programs(&d.path().join("sub")), None);
        for bad in [
            "[core]\n\tfsmonitor = touch x\n",
            "[core] pager = less\n",
            "[diff]\n\texternal = x\n",
            "[diff \"x\"]\n\ttextconv = x\n",
            "[filter \"x\"]\n\tclean = x\n",
            "[include]\n\tpath = ../evil\n",
            "[Core]\n\tHooksPath = h\n",
        ] {
            std::fs::write(git.join("config"), format!("{cloned}{bad}")).unwrap();
            assert!(runs_own_programs(d.path()).is_some(), "{bad}");
        }
        std::fs::write(git.join("config"), cloned).unwrap();
        std::fs::write(git.join("hooks/post-index-change"), "").unwrap();
        assert!(runs_own_programs(d.path()).unwrap().contains("post-index-change"));
    }
}
