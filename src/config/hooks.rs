//! `[hooks]`: commands run at named points of a session, as Claude Code's hooks are. The
//! user's config and a trusted project's `.ikigai/config.toml` each may list them per
//! event; a matcher (a glob such as `file_*` or `mcp__*`, or `/regex/`) picks the tools a
//! tool event applies to. Data and validation only: running them is `crate::hooks`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The default time a hook may run, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// When a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    PreCompact,
    Notification,
    SessionEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 8] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::PreCompact,
        HookEvent::Notification,
        HookEvent::SessionEnd,
    ];

    /// Its name, as Claude Code spells it (the key in `[hooks]`, `hook_event_name`).
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    fn parse(s: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// Where a hook was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookSource {
    User(PathBuf),
    Project(PathBuf),
}

impl HookSource {
    pub fn describe(&self) -> String {
        match self {
            HookSource::User(p) => format!("user, {}", p.display()),
            HookSource::Project(p) => format!("project, {}", p.display()),
        }
    }
}

/// One configured hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    pub event: HookEvent,
    /// `None`: every tool (and events without a tool).
    pub matcher: Option<String>,
    /// Run with `bash -c` in the project folder.
    pub command: String,
    pub timeout_secs: u64,
    pub source: HookSource,
}

impl Hook {
    /// Whether this hook applies to tool `name`: no matcher (or `*`) is every tool; a
    /// `/regex/` must match the whole name; else a glob, matched case-insensitively so
    /// Claude Code's `Bash` names ikigai's `bash`. Alternatives separate with `|`.
    pub fn matches(&self, name: &str) -> bool {
        let Some(m) = self.matcher.as_deref().filter(|m| !m.is_empty() && *m != "*") else {
            return true;
        };
        if let Some(re) = m.strip_prefix('/').and_then(|r| r.strip_suffix('/')) {
            return regex::Regex::new(&format!("^(?:{re})$")).is_ok_and(|r| r.is_match(name));
        }
        m.split('|').any(|alt| {
            globset::GlobBuilder::new(alt.trim())
                .case_insensitive(true)
                .build()
                .is_ok_and(|g| g.compile_matcher().is_match(name))
        })
    }
}

/// A hook entry as written: flat (`matcher`, `command`, `timeout`), or Claude Code's
/// shape (`matcher` and a list `hooks` of `{type = "command", command, timeout}`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    pub matcher: Option<String>,
    pub command: Option<String>,
    pub timeout: Option<u64>,
    pub hooks: Option<Vec<CommandEntry>>,
}

/// One command of Claude Code's nested shape.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandEntry {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: String,
    pub timeout: Option<u64>,
}

/// `[hooks]` as written: `[[hooks.PreToolUse]]` tables.
pub type HooksSection = BTreeMap<String, Vec<HookEntry>>;

/// Why `[hooks]` is not valid.
#[derive(Debug, thiserror::Error)]
#[error("{file}: `hooks`: {message}")]
pub struct HooksError {
    pub file: PathBuf,
    pub message: String,
}

/// The hooks of one section, checked: known events, a command, a valid matcher and a
/// timeout from 1 to 3600 s.
pub fn validate(section: &HooksSection, file: &Path, source: &HookSource) -> Result<Vec<Hook>, HooksError> {
    let err = |message: String| HooksError {
        file: file.to_path_buf(),
        message,
    };
    let mut out = Vec::new();
    for (name, entries) in section {
        let event = HookEvent::parse(name).ok_or_else(|| {
            let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
            err(format!("unknown event `{name}` (known: {})", known.join(", ")))
        })?;
        for e in entries {
            let mut commands: Vec<(String, Option<u64>)> = Vec::new();
            if let Some(c) = &e.command {
                commands.push((c.clone(), e.timeout));
            }
            for c in e.hooks.iter().flatten() {
                if c.kind.as_deref().is_some_and(|k| k != "command") {
                    return Err(err(format!(
                        "a {name} hook of type `{}`: only `command` hooks run here",
                        c.kind.as_deref().unwrap_or_default()
                    )));
                }
                commands.push((c.command.clone(), c.timeout.or(e.timeout)));
            }
            if commands.is_empty() || commands.iter().any(|(c, _)| c.trim().is_empty()) {
                return Err(err(format!("a {name} hook has no command")));
            }
            if let Some(m) = &e.matcher {
                if let Some(re) = m.strip_prefix('/').and_then(|r| r.strip_suffix('/')) {
                    regex::Regex::new(re).map_err(|x| err(format!("matcher `{m}`: {x}")))?;
                } else {
                    for alt in m.split('|') {
                        globset::Glob::new(alt.trim()).map_err(|x| err(format!("matcher `{m}`: {x}")))?;
                    }
                }
            }
            for (command, timeout) in commands {
                let timeout_secs = timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
                if !(1..=3600).contains(&timeout_secs) {
                    return Err(err(format!("timeout {timeout_secs}: use 1 to 3600 seconds")));
                }
                out.push(Hook {
                    event,
                    matcher: e.matcher.clone(),
                    command,
                    timeout_secs,
                    source: source.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// The `[hooks]` of a project's `.ikigai/config.toml` (nothing when there is no file).
/// The caller reads it only in a trusted folder.
pub fn load_project(root: &Path) -> Result<Vec<Hook>, HooksError> {
    let file = root.join(".ikigai/config.toml");
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(HooksError {
                file,
                message: format!("cannot read the file: {e}"),
            });
        }
    };
    #[derive(Deserialize)]
    struct Project {
        #[serde(default)]
        hooks: HooksSection,
    }
    let project: Project = toml::from_str(&text).map_err(|e| HooksError {
        file: file.clone(),
        message: e.to_string().trim_end().to_string(),
    })?;
    validate(&project.hooks, &file, &HookSource::Project(file.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(matcher: Option<&str>) -> Hook {
        Hook {
            event: HookEvent::PreToolUse,
            matcher: matcher.map(String::from),
            command: "true".into(),
            timeout_secs: 60,
            source: HookSource::User(PathBuf::from("/c")),
        }
    }

    #[test]
    fn matchers_are_globs_or_regexes_over_the_whole_name() {
        let table: &[(Option<&str>, &str, bool)] = &[
            (None, "bash", true),
            (Some("*"), "gh__issue", true),
            (Some("bash"), "bash", true),
            (Some("Bash"), "bash", true),
            (Some("bash"), "bash2", false),
            (Some("file_*"), "file_edit", true),
            (Some("file_*"), "list_dir", false),
            (Some("mcp__*"), "mcp__gh__x", true),
            (Some("Edit|Write|file_*"), "file_write", true),
            (Some("/file_(edit|write)/"), "file_edit", true),
            (Some("/file_(edit|write)/"), "file_editor", false),
            (Some("/edit/"), "file_edit", false),
        ];
        for (m, name, want) in table {
            assert_eq!(hook(*m).matches(name), *want, "{m:?} vs {name}");
        }
    }

    #[test]
    fn sections_are_validated() {
        let parse = |t: &str| -> Result<Vec<Hook>, HooksError> {
            #[derive(Deserialize)]
            struct F {
                hooks: HooksSection,
            }
            let f: F = toml::from_str(t).unwrap();
            validate(
                &f.hooks,
                Path::new("/c.toml"),
                &HookSource::User("/c.toml".into()),
            )
        };
        let ok = parse("[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"x\"\n").unwrap();
        assert_eq!(ok[0].timeout_secs, DEFAULT_TIMEOUT_SECS);
        // Claude Code's nested shape, as TOML.
        let nested = parse(
            "[[hooks.PostToolUse]]\nmatcher = \"Edit|Write\"\nhooks = [{type = \"command\", command = \"a\", timeout = 5}, {command = \"b\"}]\n",
        )
        .unwrap();
        let got: Vec<(&str, u64)> = nested
            .iter()
            .map(|h| (h.command.as_str(), h.timeout_secs))
            .collect();
        assert_eq!(got, [("a", 5), ("b", DEFAULT_TIMEOUT_SECS)]);
        for bad in [
            "[[hooks.PreToolUsed]]\ncommand = \"x\"\n",
            "[[hooks.Stop]]\ncommand = \" \"\n",
            "[[hooks.PreToolUse]]\nmatcher = \"/(/\"\ncommand = \"x\"\n",
            "[[hooks.PreToolUse]]\ncommand = \"x\"\ntimeout = 0\n",
            "[[hooks.PreToolUse]]\nmatcher = \"x\"\n",
            "[[hooks.PreToolUse]]\nhooks = [{type = \"prompt\", command = \"x\"}]\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
