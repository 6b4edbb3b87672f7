//! Whether a read-only `git` command (`git status`, `git diff`, `git log`…) run in the
//! project could run a program the repository chose: a hook, or a config key that names
//! a command (`core.fsmonitor`, `diff.external`, a textconv or filter driver, an
//! `include`…). Fails closed: git counts as read-only only when this module has read
//! **every** configuration git would read for the command — the repository's `config`,
//! `config.worktree` (of the worktree and of the main one), the configuration of every
//! populated submodule the index records (git recurses into them) and of every
//! repository under `.git/modules/`, found the way git finds a repository (a `.git`
//! folder, a `.git` file's `gitdir:`, a folder that is itself a bare repository) — and
//! found nothing but keys that describe the repository. `GIT_DIR`-style variables in
//! ikigai's environment, an index it cannot read whole, or an unreadable file fail it.
//! Reads files; never runs git, never writes.

use std::path::{Path, PathBuf};

use super::git_index;

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
/// `core.hooksPath`, `core.sshCommand`, `core.editor`… are not among them; `core.worktree`, which
/// a submodule's config names, only says where the files are).
const PLAIN_CORE_KEYS: [&str; 19] = [
    "worktree",
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

/// Variables that make git read another repository, index or configuration than the
/// one found from the folder.
const REDIRECTS: [&str; 6] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_CONFIG",
    "GIT_NAMESPACE",
];

/// How many nested submodules are followed.
const MAX_NESTING: usize = 4;

/// Why a read-only git command in `dir` could run a program of the repository's, or
/// `None` when everything git would read is plain (or there is no repository).
pub(crate) fn runs_own_programs(dir: &Path) -> Option<String> {
    if let Some(v) = REDIRECTS.iter().find(|v| crate::environ::var_os(v).is_some()) {
        return Some(format!(
            "{v} is set, so git reads a repository ikigai has not checked"
        ));
    }
    let found = match discover(dir) {
        Ok(Some(f)) => f,
        Ok(None) => return None,
        Err(why) => return Some(why),
    };
    repository(&found, 0)
}

/// A repository git would use: its git directory and its working tree (none for a bare
/// one).
struct Found {
    git_dir: PathBuf,
    work_tree: Option<PathBuf>,
}

/// Finds the repository of `dir` as git does, walking up: a `.git` folder, a `.git`
/// file (`gitdir: PATH`), or a folder that is itself a git directory.
fn discover(dir: &Path) -> Result<Option<Found>, String> {
    for d in dir.ancestors() {
        let dot_git = d.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(_) => return at_dot_git(d, &dot_git).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Err(format!("{} cannot be read", dot_git.display())),
        }
        if is_git_dir(d) {
            return Ok(Some(Found {
                git_dir: d.to_path_buf(),
                work_tree: None,
            }));
        }
    }
    Ok(None)
}

/// The repository whose `.git` (a folder, a link to one, or a file) is at `dot_git`.
fn at_dot_git(work_tree: &Path, dot_git: &Path) -> Result<Found, String> {
    let git_dir = if dot_git.is_dir() {
        dot_git.to_path_buf()
    } else {
        let text =
            std::fs::read_to_string(dot_git).map_err(|_| format!("{} cannot be read", dot_git.display()))?;
        let target = text
            .strip_prefix("gitdir:")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("{} is not a `gitdir:` file ikigai can follow", dot_git.display()))?;
        work_tree.join(target)
    };
    Ok(Found {
        git_dir,
        work_tree: Some(work_tree.to_path_buf()),
    })
}

/// What git takes for a git directory: `HEAD`, `objects/` and `refs/`.
fn is_git_dir(d: &Path) -> bool {
    d.join("HEAD").is_file() && d.join("objects").is_dir() && d.join("refs").is_dir()
}

/// Checks one repository (and, through its index, its populated submodules).
fn repository(found: &Found, nesting: usize) -> Option<String> {
    if nesting > MAX_NESTING {
        return Some("submodules nest too deeply for ikigai to check".into());
    }
    let git_dir = &found.git_dir;
    let mut dirs = vec![git_dir.clone()];
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        dirs.push(git_dir.join(common.trim()));
    }
    for d in &dirs {
        if let Some(why) = hook(d)
            .or_else(|| config_file(&d.join("config")))
            .or_else(|| config_file(&d.join("config.worktree")))
            .or_else(|| modules(&d.join("modules"), 0))
        {
            return Some(why);
        }
    }
    let work_tree = found.work_tree.as_ref()?;
    let links = match git_index::gitlinks(&git_dir.join("index")) {
        Ok(l) => l,
        Err(e) => return Some(e.to_string()),
    };
    for link in links {
        let sub = work_tree.join(&link);
        let dot_git = sub.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_err() {
            // Not populated: git does not go into it.
            continue;
        }
        let inner = match at_dot_git(&sub, &dot_git) {
            Ok(f) => f,
            Err(why) => return Some(why),
        };
        if let Some(why) = repository(&inner, nesting + 1) {
            return Some(format!("{why} (in the submodule {link})"));
        }
    }
    None
}

/// Every repository kept under `.git/modules/` (submodules' git directories).
fn modules(dir: &Path, depth: usize) -> Option<String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => return Some(format!("{} cannot be read", dir.display())),
    };
    if depth > MAX_NESTING * 3 {
        return Some("submodules nest too deeply for ikigai to check".into());
    }
    for e in entries.flatten() {
        let path = e.path();
        if !path.is_dir() {
            continue;
        }
        if is_git_dir(&path)
            && let Some(why) = hook(&path)
                .or_else(|| config_file(&path.join("config")))
                .or_else(|| config_file(&path.join("config.worktree")))
        {
            return Some(why);
        }
        // Submodule names may hold `/`, and submodules have their own `modules/`.
        if let Some(why) = modules(&path, depth + 1) {
            return Some(why);
        }
    }
    None
}

/// A hook that git would run (any file in `hooks/` but the `.sample`s).
fn hook(git_dir: &Path) -> Option<String> {
    let entries = std::fs::read_dir(git_dir.join("hooks")).ok()?;
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| !name.ends_with(".sample"))
        .map(|name| {
            format!(
                "the repository has a git hook ({}/hooks/{name})",
                git_dir.display()
            )
        })
}

/// The first key of the config file at `path` outside the plain ones, as `section.key`.
fn config_file(path: &Path) -> Option<String> {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => return Some(format!("the git config {} cannot be read", path.display())),
    };
    config_text(&text).map(|why| format!("{why} ({})", path.display()))
}

fn config_text(text: &str) -> Option<String> {
    let mut section = String::new();
    // A line continued with `\` goes on: judged as one.
    let joined = text.replace("\\\r\n", "").replace("\\\n", "");
    for line in joined.lines() {
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
#[path = "git_repo_tests.rs"]
mod tests;
