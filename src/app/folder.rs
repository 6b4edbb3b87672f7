//! The folder a run works in, as far as trust decides it: the folder whose `.ikigai/`
//! applies (`paths::settings_root`), its trust, what its own settings would add, and those
//! settings added to the loaded configuration when it is trusted. Every front end reads a
//! folder through here. Never asks and never prints: the TUI asks with what this lists,
//! other front ends tell it as notices.

use std::path::{Path, PathBuf};

use tokio::sync::mpsc::UnboundedSender;

use super::AppError;
use crate::config::{Config, ConfigError};
use crate::permissions::trust::State;
use crate::protocol::{Event, NoticeLevel};
use crate::tools::discovery::DiscoverySpec;

/// The folder whose `.ikigai/` applies in the working directory (the repository's root,
/// run from a subfolder) and its trust, read once: each read hashes the project's settings.
pub(super) struct Folder {
    pub root: PathBuf,
    pub trust: State,
}

impl Folder {
    pub(super) fn at(cwd: &Path) -> Self {
        let root = crate::paths::settings_root(cwd, &|k| crate::environ::var(k));
        let trust = crate::permissions::trust::state(&root);
        Folder { root, trust }
    }

    /// What the folder's own settings would add once trusted, one line each (empty when
    /// trusted).
    pub(super) fn untrusted_settings(&self) -> Vec<String> {
        match self.trust {
            State::Trusted => Vec::new(),
            _ => untrusted_settings(&self.root),
        }
    }

    /// A trusted folder whose settings changed since is told so (they are not used).
    pub(super) fn changed(&self, events: &UnboundedSender<Event>) {
        if self.trust == State::Changed {
            let _ = events.send(Event::notice(NoticeLevel::Warning, settings_changed(&self.root)));
        }
    }

    /// What a run that asks nobody tells: settings changed since trusted, or, in an
    /// untrusted folder, what is left out and how to use it.
    pub(super) fn tell(&self, discovery: &DiscoverySpec, events: &UnboundedSender<Event>) {
        match self.trust {
            State::Trusted => {}
            State::Changed => self.changed(events),
            _ => {
                let mut what = untrusted_settings(&self.root);
                what.extend(
                    discovery
                        .untrusted_tools()
                        .iter()
                        .map(|p| format!("project tool {}", p.display())),
                );
                if !what.is_empty() {
                    let text = format!(
                        "{} is not a trusted folder, so its own ikigai settings are not used ({}). \
                         Run `ikigai trust` in it to use them.",
                        self.root.display(),
                        what.join("; ")
                    );
                    let _ = events.send(Event::notice(NoticeLevel::Warning, text));
                }
            }
        }
    }
}

/// A trusted project's `.ikigai/config.toml` (the one whose settings apply in the working
/// directory: `paths::settings_root`) may add MCP servers (over the user's of the
/// same name) and permission rules; an untrusted one is never read.
pub(super) fn add_project_mcp_servers(config: &mut Config) -> Result<(), AppError> {
    let cwd = crate::paths::settings_root(&std::env::current_dir()?, &|k| crate::environ::var(k));
    if !project_trusted(&cwd) {
        return Ok(());
    }
    let rules = crate::permissions::project::load(&cwd).map_err(|e| {
        AppError::Config(ConfigError::Parse {
            path: e.file,
            message: format!("`permissions`: {}", e.message),
        })
    })?;
    crate::permissions::project::merge(&mut config.permissions, rules);
    let project = crate::config::mcp::load_project(&cwd).map_err(|e| {
        AppError::Config(ConfigError::Parse {
            path: e.file,
            message: format!("`{}`: {}", e.key, e.message),
        })
    })?;
    config.mcp_servers = crate::config::mcp::merge(&config.mcp_servers, project);
    // Its hooks run after the user's, for the same events.
    let hooks = crate::config::hooks::load_project(&cwd).map_err(|e| {
        AppError::Config(ConfigError::Parse {
            path: e.file,
            message: format!("`hooks`: {}", e.message),
        })
    })?;
    config.hooks.extend(hooks);
    Ok(())
}

/// What a folder's own settings (`.ikigai/config.toml`) would add once trusted: its MCP
/// servers (what each runs) and its permission rules, one line each, for the question.
/// Read only to be shown; nothing is run or applied.
fn untrusted_settings(cwd: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(servers) = crate::config::mcp::load_project(cwd) {
        for s in servers {
            out.push(format!("MCP server {}: {}", s.name, s.transport.target()));
        }
    }
    if let Ok(hooks) = crate::config::hooks::load_project(cwd) {
        for h in hooks {
            out.push(format!("{} hook: {}", h.event.as_str(), h.command));
        }
    }
    for s in crate::skills::in_project(cwd) {
        out.push(format!("skill {s}"));
    }
    for t in crate::agent_types::in_project(cwd) {
        out.push(format!("agent type {t}"));
    }
    if let Ok(rules) = crate::permissions::project::load(cwd) {
        for (kind, list) in [
            ("allow", &rules.allow),
            ("ask", &rules.ask),
            ("deny", &rules.deny),
        ] {
            if !list.is_empty() {
                let texts: Vec<&str> = list.iter().map(|r| r.text.as_str()).collect();
                out.push(format!("{kind} rules: {}", texts.join(", ")));
            }
        }
    }
    out
}

/// What a trusted folder whose settings changed since is told: what trust covers there.
pub(super) fn settings_changed(cwd: &std::path::Path) -> String {
    let reached = crate::permissions::reach::reached(cwd);
    let covered = crate::permissions::pin::covered(cwd, &reached);
    let what = if covered.is_empty() {
        "its .ikigai/ settings are gone".to_string()
    } else {
        format!("trust covers {}", covered.join(", "))
    };
    format!(
        "{}'s ikigai settings, or the project files they run, changed since you trusted it: \
         they are not used ({what}). Look at them (a command may have written them), then \
         run `ikigai trust` to use them again.",
        cwd.display()
    )
}

/// Whether the folder is trusted (`ikigai trust`, or `y` at the TUI's question).
fn project_trusted(cwd: &std::path::Path) -> bool {
    crate::permissions::trust::is_trusted(cwd)
}
