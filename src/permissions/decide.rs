//! The decision for one tool call: deny rules, then ask rules, then allow rules (the
//! first match of the strictest list wins), then the mode. A compound `bash` command is
//! denied or asked when any part is, and allowed only when every part is. Pure: no I/O
//! beyond resolving a path's existing folders; never asks and never prints.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::mode::Mode;
use super::readonly;
use super::rule::{FILE_TOOLS, List, Rule, Source};
use super::shell::{self, Analysis};
use crate::tools::Pinned;

/// The rules in force, by list (user, trusted project, remembered and session answers).
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
}

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    pub fn list(&self, list: List) -> &[Rule] {
        match list {
            List::Allow => &self.allow,
            List::Ask => &self.ask,
            List::Deny => &self.deny,
        }
    }

    /// Every rule with its list, strictest first.
    pub fn all(&self) -> impl Iterator<Item = (List, &Rule)> {
        let tag = |l: List| move |r| (l, r);
        self.deny
            .iter()
            .map(tag(List::Deny))
            .chain(self.ask.iter().map(tag(List::Ask)))
            .chain(self.allow.iter().map(tag(List::Allow)))
    }
}

/// What happens to the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// Who or what decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum By {
    /// A rule (for a compound command allowed part by part, the rules joined by `, `).
    Rule {
        list: List,
        rule: String,
        source: Source,
    },
    /// The mode alone.
    Mode,
    /// The built-in list of read-only tools and commands.
    ReadOnlyList,
}

impl By {
    /// One line: `rule deny bash(rm *) (user config)`, `mode ask`, `the read-only list`.
    pub fn describe(&self, mode: Mode) -> String {
        match self {
            By::Rule { list, rule, source } => {
                format!("rule {} {rule} ({})", list.as_str(), source.as_str())
            }
            By::Mode => format!("mode {mode}"),
            By::ReadOnlyList => "the built-in read-only list".to_string(),
        }
    }
}

/// The decision and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub by: By,
    /// Why, in a sentence (for `ask` and `deny`; empty when allowed).
    pub reason: String,
    /// For a file tool, the place it judged: the tool acts on exactly that place, so what
    /// changes on the way afterwards (a folder swapped for a link) cannot move the call.
    pub pinned: Option<Pinned>,
}

impl Decision {
    fn new(verdict: Verdict, by: By, reason: impl Into<String>) -> Decision {
        Decision {
            verdict,
            by,
            reason: reason.into(),
            pinned: None,
        }
    }

    fn rule(verdict: Verdict, list: List, r: &Rule, reason: impl Into<String>) -> Decision {
        Decision::new(
            verdict,
            By::Rule {
                list,
                rule: r.text.clone(),
                source: r.source.clone(),
            },
            reason,
        )
    }
}

/// What a call is about, as the rules see it.
enum Subject {
    Bash {
        command: String,
        analysis: Analysis,
    },
    /// Relative to the project (`Ok`), or absolute outside it (`Err`).
    Path(Result<PathBuf, PathBuf>),
    Arguments(String),
    /// `web_fetch`'s URL, normalised (`HTTPS://Docs.rs` → `https://docs.rs/`).
    Url(String),
}

/// The decision maker for one project folder.
#[derive(Clone, Debug)]
pub struct Policy {
    pub rules: Rules,
    /// The project folder, canonical.
    root: PathBuf,
}

impl Policy {
    pub fn new(rules: Rules, cwd: &Path) -> Policy {
        let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        Policy { rules, root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Decides one call of tool `name` with its raw `arguments`.
    pub fn decide(&self, mode: Mode, name: &str, arguments: &str) -> Decision {
        // The common case costs one comparison: nothing to check (but a file tool's path,
        // whose place the tool is held to).
        let file_tool = FILE_TOOLS.contains(&name);
        if mode == Mode::Auto && self.rules.deny.is_empty() && self.rules.ask.is_empty() && !file_tool {
            return Decision::new(Verdict::Allow, By::Mode, "");
        }
        let (subject, pinned) = self.subject(name, arguments);
        let mut d = self.judge(mode, name, &subject);
        d.pinned = pinned;
        d
    }

    /// The decision about `subject`, a call of tool `name`.
    fn judge(&self, mode: Mode, name: &str, subject: &Subject) -> Decision {
        if mode == Mode::Auto && self.rules.deny.is_empty() && self.rules.ask.is_empty() {
            return Decision::new(Verdict::Allow, By::Mode, "");
        }
        for list in [List::Deny, List::Ask] {
            let verdict = if list == List::Deny {
                Verdict::Deny
            } else {
                Verdict::Ask
            };
            let is_bash = matches!(subject, Subject::Bash { .. });
            // A bash line's redirections write files: `file_write` rules see them.
            let relevant = |r: &&Rule| r.names(name) || (is_bash && r.names("file_write"));
            for r in self.rules.list(list).iter().filter(relevant) {
                if let Some(what) = self.matches_any(r, subject) {
                    return Decision::rule(
                        verdict,
                        list,
                        r,
                        format!("`{what}` matches the {} rule `{}`", list.as_str(), r.text),
                    );
                }
            }
            // A line whose commands cannot all be seen cannot be cleared of a rule about
            // commands: somebody decides.
            if let Subject::Bash { analysis, .. } = subject
                && let Some(why) = &analysis.opaque
                && self
                    .rules
                    .list(list)
                    .iter()
                    .any(|r| r.names("bash") && !r.is_any())
            {
                return Decision::new(
                    Verdict::Ask,
                    By::Mode,
                    format!("{why}, so the {} rules for bash cannot be checked", list.as_str()),
                );
            }
        }
        if let Some(d) = self.allowed(mode, name, subject) {
            return d;
        }
        match mode {
            Mode::Auto => Decision::new(Verdict::Allow, By::Mode, ""),
            Mode::Ask => self.ask_mode(name, subject),
            Mode::ReadOnly => Decision::new(
                Verdict::Deny,
                By::Mode,
                format!(
                    "{} {}, and approval mode read-only runs only what reads",
                    describe(name, subject),
                    if matches!(subject, Subject::Url(_)) {
                        "reaches the network"
                    } else {
                        "may change something"
                    }
                ),
            ),
        }
    }

    fn ask_mode(&self, name: &str, subject: &Subject) -> Decision {
        if matches!(name, "file_write" | "file_edit")
            && let Subject::Path(Ok(rel)) = subject
        {
            // ikigai's and git's settings configure and run things later (rules, MCP
            // servers, tools, hooks): never an ordinary edit.
            let abs = self.root.join(rel);
            if own_folders().iter().any(|d| abs.starts_with(d)) {
                // Run in the home folder, ikigai's own settings, trust list and remembered
                // answers are inside the working directory too.
                return Decision::new(
                    Verdict::Ask,
                    By::Mode,
                    format!(
                        "{name} of {} changes ikigai's own settings or data",
                        abs.display()
                    ),
                );
            }
            let Some(folder) = rel
                .components()
                .filter_map(|c| c.as_os_str().to_str())
                .find(|c| PROTECTED_FOLDERS.contains(c))
            else {
                return Decision::new(Verdict::Allow, By::Mode, "");
            };
            return Decision::new(
                Verdict::Ask,
                By::Mode,
                format!(
                    "{name} of {} changes the project's {folder} settings, which can run commands later",
                    rel.display()
                ),
            );
        }
        let why = match subject {
            Subject::Path(Err(p)) => format!("{name} of {} is outside the working directory", p.display()),
            Subject::Bash { analysis, .. } if analysis.opaque.is_some() => {
                format!(
                    "{} ({})",
                    describe(name, subject),
                    analysis.opaque.clone().unwrap_or_default()
                )
            }
            Subject::Url(_) => format!("{} reaches the network", describe(name, subject)),
            _ => format!("{} is not on the read-only list", describe(name, subject)),
        };
        Decision::new(Verdict::Ask, By::Mode, why)
    }

    /// The allow step: the call (every part of a command) is covered by allow rules or,
    /// outside `auto`, by the read-only list.
    fn allowed(&self, mode: Mode, name: &str, subject: &Subject) -> Option<Decision> {
        let read_only_counts = mode != Mode::Auto;
        let allow: Vec<&Rule> = self.rules.allow.iter().filter(|r| r.names(name)).collect();
        match subject {
            Subject::Bash { analysis, .. } => {
                if analysis.opaque.is_some() {
                    // Unless a rule allows every bash call, what cannot be seen is not allowed.
                    let any = allow.iter().find(|r| r.is_any())?;
                    return Some(Decision::rule(Verdict::Allow, List::Allow, any, ""));
                }
                let mut used: Vec<&Rule> = Vec::new();
                for part in &analysis.parts {
                    if let Some(r) = allow.iter().find(|r| r.matches_command(&part.text)) {
                        if !used.iter().any(|u| u.text == r.text) {
                            used.push(r);
                        }
                    } else if !(read_only_counts && self.is_read_only_part(part)) {
                        return None;
                    }
                }
                for path in &analysis.writes {
                    let rel = self.resolve(path);
                    let r = self
                        .rules
                        .allow
                        .iter()
                        .find(|r| r.names("file_write") && r.matches_path(&rel))?;
                    if !used.iter().any(|u| u.text == r.text) {
                        used.push(r);
                    }
                }
                if analysis.parts.is_empty() && analysis.writes.is_empty() {
                    return None;
                }
                Some(match used.as_slice() {
                    [] => Decision::new(Verdict::Allow, By::ReadOnlyList, ""),
                    [one] => Decision::rule(Verdict::Allow, List::Allow, one, ""),
                    many => Decision::new(
                        Verdict::Allow,
                        By::Rule {
                            list: List::Allow,
                            rule: many
                                .iter()
                                .map(|r| r.text.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                            source: many[0].source.clone(),
                        },
                        "",
                    ),
                })
            }
            _ => {
                if let Some(r) = allow.iter().find(|r| self.matches_any(r, subject).is_some()) {
                    return Some(Decision::rule(Verdict::Allow, List::Allow, r, ""));
                }
                (read_only_counts && readonly::is_read_only_tool(name))
                    .then(|| Decision::new(Verdict::Allow, By::ReadOnlyList, ""))
            }
        }
    }

    /// What of the call matches rule `r` (a part of a command, the path, the arguments).
    fn matches_any(&self, r: &Rule, subject: &Subject) -> Option<String> {
        match subject {
            Subject::Bash { command, analysis } if !r.names("bash") => analysis
                .writes
                .iter()
                .find(|w| r.matches_path(&self.resolve(w)))
                .cloned(),
            Subject::Bash { command, analysis } => {
                if r.matches_command(command) {
                    return Some(command.clone());
                }
                // A program given by its path is still that program: `/bin/rm -rf x`
                // meets `bash(rm -rf*)`.
                analysis
                    .parts
                    .iter()
                    .find(|p| r.matches_command(&p.text) || r.matches_command(&p.by_name()))
                    .map(|p| p.text.clone())
            }
            Subject::Path(p) => r.matches_path(p).then(|| match p {
                Ok(rel) | Err(rel) => rel.display().to_string(),
            }),
            Subject::Arguments(json) => r.matches_arguments(json).then(|| json.clone()),
            Subject::Url(url) => r.matches_arguments(url).then(|| url.clone()),
        }
    }

    /// What the call is about, and for a file tool the place its path leads to.
    fn subject(&self, name: &str, arguments: &str) -> (Subject, Option<Pinned>) {
        let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
        let text = |k: &str| args.get(k).and_then(|v| v.as_str()).map(str::to_string);
        if name == "bash" {
            let command = text("command").unwrap_or_default();
            let analysis = shell::analyse(&command);
            return (Subject::Bash { command, analysis }, None);
        }
        if FILE_TOOLS.contains(&name) {
            let path = text("path")
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| ".".into());
            let (judged, real) = self.resolved(&path);
            return (Subject::Path(judged), Some(Pinned { given: path, real }));
        }
        if name == crate::tools::web_fetch::NAME {
            let url = text("url").unwrap_or_default();
            let url = reqwest::Url::parse(url.trim()).map_or(url, |u| u.to_string());
            return (Subject::Url(url), None);
        }
        // Compact JSON with sorted keys, so a glob does not depend on the model's spacing.
        (
            Subject::Arguments(serde_json::to_string(&args).unwrap_or_default()),
            None,
        )
    }

    /// Whether one part of a command only reads: on the read-only list, and for `git`,
    /// in a repository that runs no program of its own (no hook, no command in its
    /// config: an archive's `.git/config` may set `core.fsmonitor`).
    fn is_read_only_part(&self, part: &shell::Part) -> bool {
        readonly::is_read_only_part(part)
            && !(part.words.first().is_some_and(|w| w == "git")
                && super::git_repo::runs_own_programs(&self.root).is_some())
    }

    /// A path as the rules see it: relative to the project when inside it, else absolute.
    /// It is where the tool would reach: `~/` is the home folder (as the file tools and
    /// the shell read it), and each existing component is followed through its links
    /// before a `..` after it applies, as the kernel does (`link/../x` is beside the
    /// link's target, not beside the link).
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathBuf> {
        self.resolved(path).0
    }

    /// `resolve`, with the absolute place the path leads to (`None`: a link loop).
    fn resolved(&self, path: &str) -> (Result<PathBuf, PathBuf>, Option<PathBuf>) {
        let home = path
            .strip_prefix("~/")
            .zip(crate::environ::var_os("HOME"))
            .map(|(rest, home)| PathBuf::from(home).join(rest));
        let joined = match home {
            Some(p) => p,
            None if Path::new(path).is_absolute() => PathBuf::from(path),
            None => self.root.join(path),
        };
        // A link loop reaches nothing the rules could name: judged as outside the project.
        let Some(abs) = super::sandbox_writes::resolve(&joined) else {
            return (Err(normalise(&joined)), None);
        };
        let judged = match abs.strip_prefix(&self.root) {
            Ok(rel) => Ok(rel.to_path_buf()),
            Err(_) => Err(abs.clone()),
        };
        (judged, Some(abs))
    }

    /// The rules "always" would add for this call: the command's prefix for each part
    /// that is not allowed yet (`bash(cargo test *)`), the file's folder for a file tool,
    /// the tool for any other. Empty when the call cannot be judged part by part.
    pub fn suggest(&self, mode: Mode, name: &str, arguments: &str) -> Vec<String> {
        match self.subject(name, arguments).0 {
            Subject::Bash { analysis, .. } => {
                if analysis.opaque.is_some() {
                    return Vec::new();
                }
                let mut out: Vec<String> = Vec::new();
                for part in &analysis.parts {
                    let covered = self
                        .rules
                        .allow
                        .iter()
                        .any(|r| r.names("bash") && r.matches_command(&part.text))
                        || (mode != Mode::Auto && self.is_read_only_part(part));
                    let rule = format!("bash({})", prefix(&part.words));
                    if !covered && !out.contains(&rule) {
                        out.push(rule);
                    }
                }
                for w in &analysis.writes {
                    if let Ok(rel) = self.resolve(w) {
                        out.push(format!(
                            "file_write(/{})",
                            globset::escape(&rel.display().to_string())
                        ));
                    }
                }
                out
            }
            Subject::Path(Ok(rel)) => {
                let folder = rel.parent().map(|p| p.display().to_string()).unwrap_or_default();
                if folder.is_empty() {
                    vec![format!(
                        "{name}(/{})",
                        globset::escape(&rel.display().to_string())
                    )]
                } else {
                    vec![format!("{name}(/{}/**)", globset::escape(&folder))]
                }
            }
            Subject::Path(Err(abs)) => {
                let folder = abs.parent().unwrap_or(Path::new("/")).display().to_string();
                vec![format!("{name}(/{}/**)", globset::escape(&folder))]
            }
            Subject::Arguments(_) => vec![name.to_string()],
            // The site: `web_fetch(https://docs.rs/*)`.
            Subject::Url(url) => match reqwest::Url::parse(&url) {
                Ok(u) if u.has_host() => vec![format!(
                    "{name}({}/*)",
                    globset::escape(&u.origin().ascii_serialization())
                )],
                _ => vec![name.to_string()],
            },
        }
    }
}

/// Commands whose second word names what they do (`cargo test`, `git push`): "always"
/// remembers both words for them, the command alone for any other.
const WITH_SUBCOMMANDS: [&str; 24] = [
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "npx",
    "docker",
    "podman",
    "kubectl",
    "go",
    "rustup",
    "pip",
    "uv",
    "poetry",
    "make",
    "just",
    "gh",
    "dotnet",
    "mvn",
    "gradle",
    "systemctl",
    "brew",
];

/// `cargo test --release` → `cargo test *`; `rm -rf x` → `rm *`; `touch a` → `touch *`.
fn prefix(words: &[String]) -> String {
    let esc = |w: &String| globset::escape(w);
    let takes_sub = words
        .first()
        .is_some_and(|w| WITH_SUBCOMMANDS.contains(&shell::base_name(w)));
    let sub = words.get(1).filter(|_| takes_sub).filter(|w| {
        w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
    });
    match (words.first(), sub) {
        (Some(name), Some(sub)) => format!("{} {} *", esc(name), esc(sub)),
        (Some(name), None) => format!("{} *", esc(name)),
        (None, _) => "*".into(),
    }
}

/// How a call is named in a reason.
fn describe(name: &str, subject: &Subject) -> String {
    match subject {
        Subject::Bash { command, .. } => format!("the command `{command}`"),
        Subject::Path(Ok(p) | Err(p)) => format!("{name} of {}", p.display()),
        Subject::Arguments(_) => format!("the tool {name}"),
        Subject::Url(url) => format!("{name} of {url}"),
    }
}

/// `a/./b/../c` → `a/c`, without touching the disk.
/// Folders inside the project whose files configure or run things later (`.ikigai`:
/// permission rules, MCP servers, tools, commands; `.git`: hooks and config): `ask` mode
/// asks before a file tool writes in them.
const PROTECTED_FOLDERS: [&str; 2] = [".ikigai", ".git"];

/// ikigai's own folders (its config, its data: trust list, remembered answers, sessions;
/// `~/.ikigai`: user tools), resolved.
fn own_folders() -> Vec<PathBuf> {
    let env = |k: &str| crate::environ::var(k);
    let home = env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".ikigai"));
    [
        crate::config::xdg_dir(&env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("ikigai")),
        crate::config::xdg_dir(&env, "XDG_DATA_HOME", ".local/share").map(|d| d.join("ikigai")),
        home,
    ]
    .into_iter()
    .flatten()
    .map(|d| d.canonicalize().unwrap_or(d))
    .collect()
}

fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
