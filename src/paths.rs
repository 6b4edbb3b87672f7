//! Where ikigai keeps its own files: the user's config folder (`$XDG_CONFIG_HOME/ikigai`,
//! else `~/.config/ikigai`) and data folder (`$XDG_DATA_HOME/ikigai`, else
//! `~/.local/share/ikigai`), read through a caller's environment lookup so tests can
//! name any. Computes paths only: creates, reads and decides nothing.

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

#[cfg(test)]
mod tests {
    use super::*;

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
