//! Files that a program other than the one being edited runs, or loads as its settings,
//! later — on its own, as a side effect of something ordinary that is not running this
//! project's code: opening a shell, logging in, `ssh`, committing, opening an editor,
//! starting ikigai. `ask` mode asks before a file tool writes one, wherever the working
//! directory is (`decide.rs` calls `why`), and names it when a bash line writes one.
//!
//! What counts, in order: ikigai's own folders; `TABLE` (a documented data table: shell
//! start-up files, `~/.ssh/`, git's configuration, editors' start-up files, login and
//! service units, tools' settings that name programs, system configuration, and the
//! folders of any project named `.git`, `.ikigai`, `.husky`…); the folder git's
//! `core.hooksPath` names; every folder on `PATH` (a program put there runs by name);
//! and the project files its ikigai settings run (`reach`, which the trust digest pins).
//! Files that only run when you run this project (`Makefile`, `package.json`, `build.rs`)
//! are ordinary edits. Reads settings and stats files (kept while their files are
//! unchanged); never writes, never asks.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where a table entry's path starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The home folder (`$HOME`).
    Home,
    /// The user's config folder (`$XDG_CONFIG_HOME`, else `~/.config`).
    Config,
    /// The file system's root: an absolute path.
    Root,
    /// A file or folder of this name anywhere (inside the project: below its folder).
    Named,
}

/// One kind of file that runs or configures something later.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub base: Base,
    /// Relative to `base` (a folder covers everything in it).
    pub path: &'static str,
    /// What it is, completing "changes …".
    pub what: &'static str,
}

const SHELL: &str = "a shell start-up file, which runs in every new shell";
const LOGIN: &str = "a login start-up file, which runs when you log in";
const SSH: &str = "ssh's settings and keys, which decide who logs in and what ssh runs";
const GIT: &str = "git's configuration, which can run programs (hooks, aliases, fsmonitor)";
const EDITOR: &str = "an editor's start-up settings, which run code when it opens";
const STARTED: &str = "a program or service started at login or on a timer";
const TOOLS: &str = "a tool's settings that name programs it runs";
const SYSTEM: &str = "the system's configuration";
const HOOKS: &str = "git hooks, which run at every commit";
const PROJECT_EDITOR: &str = "the editor's settings for this folder, which can run tasks when it opens";
const GIT_DIR: &str = "the project's .git settings, which can run commands later";
const IKIGAI_DIR: &str = "the project's .ikigai settings, which can run commands later";

const fn e(base: Base, path: &'static str, what: &'static str) -> Entry {
    Entry { base, path, what }
}

/// The table (the README's "Files that run later" lists it).
pub const TABLE: &[Entry] = &[
    // Shells: bash, sh, zsh, fish, csh, ksh, nushell, readline.
    e(Base::Home, ".bashrc", SHELL),
    e(Base::Home, ".bashrc.d", SHELL),
    e(Base::Home, ".bash_profile", SHELL),
    e(Base::Home, ".bash_login", SHELL),
    e(Base::Home, ".bash_logout", SHELL),
    e(Base::Home, ".bash_aliases", SHELL),
    e(Base::Home, ".profile", SHELL),
    e(Base::Home, ".inputrc", SHELL),
    e(Base::Home, ".zshenv", SHELL),
    e(Base::Home, ".zprofile", SHELL),
    e(Base::Home, ".zshrc", SHELL),
    e(Base::Home, ".zlogin", SHELL),
    e(Base::Home, ".zlogout", SHELL),
    e(Base::Home, ".oh-my-zsh", SHELL),
    e(Base::Home, ".cshrc", SHELL),
    e(Base::Home, ".tcshrc", SHELL),
    e(Base::Home, ".login", SHELL),
    e(Base::Home, ".logout", SHELL),
    e(Base::Home, ".kshrc", SHELL),
    e(Base::Home, ".mkshrc", SHELL),
    e(Base::Config, "fish", SHELL),
    e(Base::Config, "nushell", SHELL),
    // Graphical and session log-in.
    e(Base::Home, ".xprofile", LOGIN),
    e(Base::Home, ".xinitrc", LOGIN),
    e(Base::Home, ".xsession", LOGIN),
    e(Base::Home, ".xsessionrc", LOGIN),
    e(Base::Home, ".pam_environment", LOGIN),
    e(Base::Config, "environment.d", LOGIN),
    // ssh: authorized_keys, config (ProxyCommand, LocalCommand), rc.
    e(Base::Home, ".ssh", SSH),
    // git: hooks, aliases, fsmonitor, credential helpers, pagers.
    e(Base::Home, ".gitconfig", GIT),
    e(Base::Config, "git", GIT),
    // Editors that run code at start.
    e(Base::Home, ".vimrc", EDITOR),
    e(Base::Home, ".gvimrc", EDITOR),
    e(Base::Home, ".vim", EDITOR),
    e(Base::Config, "nvim", EDITOR),
    e(Base::Home, ".emacs", EDITOR),
    e(Base::Home, ".emacs.d", EDITOR),
    e(Base::Config, "emacs", EDITOR),
    e(Base::Config, "Code/User", EDITOR),
    // Started at login or on a timer.
    e(Base::Config, "autostart", STARTED),
    e(Base::Config, "systemd", STARTED),
    e(Base::Home, ".local/share/systemd", STARTED),
    e(Base::Root, "/var/spool/cron", STARTED),
    // Tools whose settings name programs they run (cargo's rustc-wrapper, npm's
    // script-shell, docker's credential helpers, tmux's run-shell).
    e(Base::Home, ".cargo/config", TOOLS),
    e(Base::Home, ".cargo/config.toml", TOOLS),
    e(Base::Home, ".npmrc", TOOLS),
    e(Base::Home, ".docker/config.json", TOOLS),
    e(Base::Home, ".tmux.conf", TOOLS),
    e(Base::Config, "tmux", TOOLS),
    // The system's own (run in `/` or as root).
    e(Base::Root, "/etc", SYSTEM),
    e(Base::Root, "/usr/lib/systemd", SYSTEM),
    e(Base::Root, "/lib/systemd", SYSTEM),
    // In any folder: git's and ikigai's settings, hook managers, editors' folder settings.
    e(Base::Named, ".git", GIT_DIR),
    e(Base::Named, ".ikigai", IKIGAI_DIR),
    e(Base::Named, ".husky", HOOKS),
    e(Base::Named, ".githooks", HOOKS),
    e(Base::Named, ".pre-commit-config.yaml", HOOKS),
    e(Base::Named, "lefthook.yml", HOOKS),
    e(Base::Named, ".lefthook.yml", HOOKS),
    e(Base::Named, "lefthook-local.yml", HOOKS),
    e(Base::Named, ".lefthook", HOOKS),
    e(Base::Named, ".vscode", PROJECT_EDITOR),
    e(Base::Named, ".exrc", PROJECT_EDITOR),
    e(Base::Named, ".nvimrc", PROJECT_EDITOR),
    e(Base::Named, ".nvim.lua", PROJECT_EDITOR),
];

/// Why writing `abs` (absolute, resolved as the write would reach it) is not an ordinary
/// edit, as "changes …" (`None`: it is one). `root` is the project folder, canonical.
pub fn why(root: &Path, abs: &Path) -> Option<String> {
    let known = Known::of(root);
    known.why(root, abs)
}

/// The environment `why` reads (ikigai's own).
fn process_env(k: &str) -> Option<String> {
    crate::environ::var(k).filter(|v| !v.is_empty())
}

/// Everything `why` compares with, for one project and one environment.
#[derive(Debug)]
struct Known {
    /// The files and settings it was computed from, as they were.
    stamp: Vec<Stamp>,
    own: Vec<PathBuf>,
    /// (prefix, what) from `TABLE`'s non-`Named` entries, lexical and resolved forms.
    prefixes: Vec<(PathBuf, &'static str)>,
    /// Folders whose direct files run by name (`PATH`).
    path_dirs: Vec<PathBuf>,
    /// `core.hooksPath` values of the user's and the system's git configuration.
    global_hooks: Vec<String>,
    home: Option<PathBuf>,
    reached: Vec<super::reach::Reached>,
}

/// A settings file and its bytes, or a variable and its value: what the cache is keyed by.
type Stamp = (PathBuf, Vec<u8>);

static CACHE: Mutex<Option<(PathBuf, Arc<Known>)>> = Mutex::new(None);

impl Known {
    /// For `root`, from the cache while nothing it was computed from has changed.
    fn of(root: &Path) -> Arc<Known> {
        let stamp = stamp(root, &process_env);
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((r, k)) = cache.as_ref()
            && r == root
            && k.stamp == stamp
        {
            return k.clone();
        }
        let known = Arc::new(Known::compute(root, stamp, &process_env));
        *cache = Some((root.to_path_buf(), known.clone()));
        known
    }

    fn compute(root: &Path, stamp: Vec<Stamp>, env: &dyn Fn(&str) -> Option<String>) -> Known {
        let home = env("HOME")
            .map(PathBuf::from)
            .map(|h| h.canonicalize().unwrap_or(h));
        let config = crate::paths::config_home(env);
        let data = crate::paths::data_home(env);
        let own: Vec<PathBuf> = [
            config.as_ref().map(|d| d.join("ikigai")),
            data.map(|d| d.join("ikigai")),
            home.as_ref().map(|h| h.join(".ikigai")),
        ]
        .into_iter()
        .flatten()
        .flat_map(forms)
        .collect();
        let mut prefixes = Vec::new();
        for entry in TABLE {
            let base = match entry.base {
                Base::Home => home.clone(),
                Base::Config => config.clone(),
                Base::Root => Some(PathBuf::from("/")),
                Base::Named => None,
            };
            if let Some(base) = base {
                for p in forms(base.join(entry.path)) {
                    prefixes.push((p, entry.what));
                }
            }
        }
        // Absolute entries only: a relative one (`.`) would make every file of the
        // project a program.
        let path_dirs = env("PATH")
            .map(|p| {
                std::env::split_paths(&p)
                    .filter(|d| d.is_absolute())
                    .flat_map(forms)
                    .collect()
            })
            .unwrap_or_default();
        let global_hooks = global_git_configs(home.as_deref(), config.as_deref(), env)
            .iter()
            .flat_map(|f| hooks_path_of(f))
            .collect();
        Known {
            stamp,
            own,
            prefixes,
            path_dirs,
            global_hooks,
            home,
            reached: super::reach::reached(root),
        }
    }

    fn why(&self, root: &Path, abs: &Path) -> Option<String> {
        if self.own.iter().any(|d| abs.starts_with(d)) {
            return Some("changes ikigai's own settings or data".into());
        }
        // Named entries: below the project when inside it, else anywhere on the path.
        let named_in = abs.strip_prefix(root).unwrap_or(abs);
        for c in named_in.components() {
            let name = c.as_os_str();
            if let Some(e) = TABLE.iter().find(|e| e.base == Base::Named && name == e.path) {
                return Some(format!("changes {}", e.what));
            }
        }
        if let Some((_, what)) = self.prefixes.iter().find(|(p, _)| abs.starts_with(p)) {
            return Some(format!("changes {what}"));
        }
        if let Some(h) = self.hook_folders(abs).iter().find(|h| abs.starts_with(h)) {
            return Some(format!(
                "changes git hooks (core.hooksPath {}), which run at every commit",
                h.display()
            ));
        }
        if abs
            .parent()
            .is_some_and(|p| self.path_dirs.iter().any(|d| d == p))
        {
            return Some("puts a program in a folder on PATH, where shells find commands by name".into());
        }
        self.reached.iter().find(|r| abs.starts_with(&r.path)).map(|r| {
            format!(
                "changes a file the project's ikigai settings run ({}); trust pins it",
                r.by
            )
        })
    }
}

/// `p` as written and as a write would reach it (links of its existing part followed).
fn forms(p: PathBuf) -> Vec<PathBuf> {
    let resolved = super::sandbox_writes::resolve(&p);
    let mut out = vec![p];
    if let Some(r) = resolved
        && r != out[0]
    {
        out.push(r);
    }
    out
}

impl Known {
    /// The folders git runs hooks from for the repository holding `abs` (its
    /// `core.hooksPath`, the repository's own or the user's; a relative one is taken from
    /// the repository's top; husky's `.husky/_` brings `.husky`, whose hooks it calls).
    /// Read now: the repository is the one of the file written, not of the project.
    fn hook_folders(&self, abs: &Path) -> Vec<PathBuf> {
        let top = abs.ancestors().skip(1).find(|d| d.join(".git").exists());
        let mut values = self.global_hooks.clone();
        if let Some(top) = top {
            let dot_git = top.join(".git");
            let git_dir = match std::fs::read_to_string(&dot_git) {
                Ok(text) => text
                    .strip_prefix("gitdir:")
                    .map(|t| top.join(t.trim()))
                    .unwrap_or(dot_git),
                Err(_) => dot_git,
            };
            for f in ["config", "config.worktree"] {
                values.extend(hooks_path_of(&git_dir.join(f)));
            }
        }
        let base = top.unwrap_or(abs);
        let mut out = Vec::new();
        for value in values {
            let p = match (value.strip_prefix("~/"), &self.home) {
                (Some(rest), Some(h)) => h.join(rest),
                _ => base.join(&value),
            };
            if p.file_name().is_some_and(|n| n == "_")
                && let Some(parent) = p.parent()
            {
                out.extend(forms(parent.to_path_buf()));
            }
            out.extend(forms(p));
        }
        out
    }
}

/// The user's and the system's git configuration files.
fn global_git_configs(
    home: Option<&Path>,
    config: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = env("GIT_CONFIG_GLOBAL").map(PathBuf::from).into_iter().collect();
    out.extend(config.map(|c| c.join("git/config")));
    out.extend(home.map(|h| h.join(".gitconfig")));
    out.push(PathBuf::from("/etc/gitconfig"));
    out
}

/// The `core.hooksPath` values of one git config file (none when it cannot be read).
fn hooks_path_of(file: &Path) -> Vec<String> {
    std::fs::read(file)
        .map(|b| hooks_path(&String::from_utf8_lossy(&b)))
        .unwrap_or_default()
}

/// Every `core.hooksPath` value in a git config file's text.
fn hooks_path(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_core = false;
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let (head, after) = rest.split_once(']').unwrap_or((rest, ""));
            in_core = head.trim().eq_ignore_ascii_case("core");
            line = after.trim();
        }
        if !in_core || line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some((k, v)) = line.split_once('=')
            && k.trim().eq_ignore_ascii_case("hookspath")
        {
            let v = v.trim().trim_matches('"').trim();
            if !v.is_empty() {
                out.push(v.to_string());
            }
        }
    }
    out
}

/// What `Known` for `root` depends on: the variables it reads, the settings files'
/// contents and the project tools' names and links (compared whole: a rewrite within the
/// same clock tick is still seen).
fn stamp(root: &Path, env: &dyn Fn(&str) -> Option<String>) -> Vec<Stamp> {
    let mut out: Vec<Stamp> = [
        "HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "PATH",
        "GIT_CONFIG_GLOBAL",
    ]
    .iter()
    .map(|k| (PathBuf::from(k), env(k).unwrap_or_default().into_bytes()))
    .collect();
    let home = env("HOME").map(PathBuf::from);
    let config = crate::paths::config_home(env);
    let mut files = vec![root.join(".ikigai/config.toml")];
    files.extend(global_git_configs(home.as_deref(), config.as_deref(), env));
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_default();
        out.push((f, bytes));
    }
    let tools = root.join(".ikigai/tools");
    let mut links: Vec<u8> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&tools) {
        let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        names.sort();
        for n in names {
            links.extend_from_slice(n.as_os_str().as_encoded_bytes());
            links.push(0);
            if let Ok(t) = std::fs::read_link(&n) {
                links.extend_from_slice(t.as_os_str().as_encoded_bytes());
            }
            links.push(0);
        }
    }
    out.push((tools, links));
    out
}

#[cfg(test)]
#[path = "protected_tests.rs"]
mod tests;
