//! Where ikigai keeps its own files: the user's config folder (`$XDG_CONFIG_HOME/ikigai`,
//! else `~/.config/ikigai`) and data folder (`$XDG_DATA_HOME/ikigai`, else
//! `~/.local/share/ikigai`), read through a caller's environment lookup so tests can
//! name any; and which folder is a working directory's project (its git root) and whose
//! `.ikigai/` settings apply there. Computes paths (looking only at whether a name
//! exists): creates, reads and decides nothing.

use std::path::{Path, PathBuf};

/// How a caller reads one environment variable (`crate::environ::var`, or a test's map).
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `$VAR` when set and absolute, else `$HOME/fallback`.
pub(crate) fn xdg_dir(env: Env<'_>, var: &str, fallback: &str) -> Option<PathBuf> {
    if let Some(v) = env(var).filter(|s| Path::new(s).is_absolute()) {
        return Some(PathBuf::from(v));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(fallback))
}

/// The user's config home: `$XDG_CONFIG_HOME`, else `~/.config`.
pub(crate) fn config_home(env: Env<'_>) -> Option<PathBuf> {
    xdg_dir(env, "XDG_CONFIG_HOME", ".config")
}

/// The user's data home: `$XDG_DATA_HOME`, else `~/.local/share`.
pub(crate) fn data_home(env: Env<'_>) -> Option<PathBuf> {
    xdg_dir(env, "XDG_DATA_HOME", ".local/share")
}

/// The user's state home: `$XDG_STATE_HOME`, else `~/.local/state`.
pub(crate) fn state_home(env: Env<'_>) -> Option<PathBuf> {
    xdg_dir(env, "XDG_STATE_HOME", ".local/state")
}

/// The nearest ancestor of `dir` (or `dir` itself) holding `.git`.
pub(crate) fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The project of a working directory: its git root, except a home folder that is a
/// git repository (dotfiles), which is not the project of every folder beneath it; else
/// `cwd` itself.
pub(crate) fn project_of(cwd: &Path, env: Env<'_>) -> PathBuf {
    git_root(cwd)
        .filter(|r| r == cwd || !is_home(r, env))
        .unwrap_or_else(|| cwd.to_path_buf())
}

/// The folder whose `.ikigai/` settings (config, tools, commands, hooks, skills) apply in
/// `cwd`: the nearest folder from `cwd` up to its project's root that holds `.ikigai`;
/// `cwd` when none does. Run in a subfolder of a repository, that is the repository's
/// root (under the root's trust); a subfolder with its own `.ikigai/` keeps its own.
pub(crate) fn settings_root(cwd: &Path, env: Env<'_>) -> PathBuf {
    let project = project_of(cwd, env);
    cwd.ancestors()
        .take_while(|d| d.starts_with(&project))
        .find(|d| std::fs::symlink_metadata(d.join(".ikigai")).is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Whether `dir` is the user's home folder (both resolved).
fn is_home(dir: &Path, env: Env<'_>) -> bool {
    let Some(home) = env("HOME").filter(|h| !h.is_empty()) else {
        return false;
    };
    let resolved = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    resolved(dir) == resolved(Path::new(&home))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_from_the_nearest_ikigai_folder_up_to_the_project_root() {
        let t = tempfile::tempdir().unwrap();
        let no_home = |_: &str| None;
        let repo = t.path().join("repo");
        let deep = repo.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        // No repository: the working directory alone.
        std::fs::create_dir_all(t.path().join(".ikigai")).unwrap();
        assert_eq!(settings_root(&deep, &no_home), deep);
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(
            settings_root(&deep, &no_home),
            deep,
            "no .ikigai in the repository"
        );
        // Never above the repository's root.
        std::fs::create_dir(repo.join(".ikigai")).unwrap();
        assert_eq!(settings_root(&deep, &no_home), repo);
        assert_eq!(settings_root(&repo, &no_home), repo);
        std::fs::create_dir(repo.join("a/.ikigai")).unwrap();
        assert_eq!(settings_root(&deep, &no_home), repo.join("a"));
        // A home folder that is a repository is not every folder's project.
        let home = repo.to_string_lossy().into_owned();
        let env = move |k: &str| (k == "HOME").then(|| home.clone());
        std::fs::remove_dir(repo.join("a/.ikigai")).unwrap();
        assert_eq!(settings_root(&deep, &env), deep);
        assert_eq!(project_of(&deep, &env), deep);
        assert_eq!(project_of(&repo, &env), repo);
    }

    #[test]
    fn an_absolute_xdg_variable_wins_and_a_relative_one_falls_back_to_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let both = env(&[("XDG_DATA_HOME", "/x/data"), ("HOME", "/home/u")]);
        assert_eq!(data_home(&both), Some(PathBuf::from("/x/data")));
        let relative = env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/home/u")]);
        assert_eq!(config_home(&relative), Some(PathBuf::from("/home/u/.config")));
        assert_eq!(state_home(&relative), Some(PathBuf::from("/home/u/.local/state")));
        assert_eq!(data_home(&env(&[("HOME", "")])), None);
    }
}
