//! The decision for one tool call: deny rules, then ask rules, then allow rules (the
//! first match of the strictest list wins), then the mode. A `bash` line is judged from
//! what the parser can prove (decide_bash.rs): denied or asked when any part is, asked
//! when a rule may match what cannot all be seen, allowed only when every part is. Pure:
//! no I/O beyond resolving a path's existing folders, reading a repository's git
//! configuration and `protected`'s reading of the settings that say which files run
//! later; never asks and never prints.

use std::path::{Component, Path, PathBuf};

use super::mode::Mode;
use super::readonly;
use super::rule::{List, Rule};
use super::shell::{self, Analysis};
pub use crate::policy::decision::{By, Decision, Pinned, Rules, Verdict};
use crate::tool_vocab::meta;

#[path = "decide_bash.rs"]
mod bash;

/// What a call is about, as the rules see it.
enum Subject {
    Bash {
        command: String,
        analysis: Analysis,
    },
    /// Relative to the project (`Ok`), or absolute outside it (`Err`).
    Path(Result<PathBuf, PathBuf>),
    Arguments(String),
    /// `web_fetch`'s URL, parsed (`HTTPS://Docs.rs` → `https://docs.rs/`), or as given
    /// when it does not parse.
    Url(Result<reqwest::Url, String>),
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
        let file_tool = meta::has_path(name);
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
            let found = match subject {
                Subject::Bash { command, analysis } => self.bash_rules(list, command, analysis),
                _ => self.tool_rules(list, name, subject),
            };
            if let Some(d) = found {
                return d;
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

    /// The deny (or ask) step for a call other than `bash`.
    fn tool_rules(&self, list: List, name: &str, subject: &Subject) -> Option<Decision> {
        let verdict = if list == List::Deny {
            Verdict::Deny
        } else {
            Verdict::Ask
        };
        let rules = self.rules.list(list);
        for r in rules.iter().filter(|r| r.names(name)) {
            if let Some(what) = self.matches_any(r, subject, true) {
                return Some(Decision::rule(
                    verdict,
                    list,
                    r,
                    format!("`{what}` matches the {} rule `{}`", list.as_str(), r.text),
                ));
            }
        }
        if let Subject::Url(Err(url)) = subject
            && rules.iter().any(|r| r.names(name))
        {
            return Some(Decision::new(
                Verdict::Ask,
                By::Mode,
                format!(
                    "`{url}` is not a URL, so the {} rules for {name} cannot be checked",
                    list.as_str()
                ),
            ));
        }
        None
    }

    fn ask_mode(&self, name: &str, subject: &Subject) -> Decision {
        if meta::of(name).is_some_and(|m| m.writes)
            && let Subject::Path(Ok(rel)) = subject
        {
            // Files something else runs or loads later (start-up files, git's and
            // ikigai's settings, what the project's settings run): never an ordinary edit.
            return match super::protected::why(&self.root, &self.root.join(rel)) {
                Some(why) => Decision::new(
                    Verdict::Ask,
                    By::Mode,
                    format!("{name} of {} {why}", rel.display()),
                ),
                None => Decision::new(Verdict::Allow, By::Mode, ""),
            };
        }
        if let Some(why) = self.protected_write(subject) {
            return Decision::new(Verdict::Ask, By::Mode, why);
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

    /// Why a bash line's redirection writes a file that runs later (`protected`).
    fn protected_write(&self, subject: &Subject) -> Option<String> {
        let Subject::Bash { command, analysis } = subject else {
            return None;
        };
        analysis.writes.iter().find_map(|w| {
            let abs = match self.resolve(w) {
                Ok(rel) => self.root.join(rel),
                Err(abs) => abs,
            };
            super::protected::why(&self.root, &abs)
                .map(|why| format!("the command `{command}` writes {w}, which {why}"))
        })
    }

    /// The allow step: the call (every part of a command) is covered by allow rules or,
    /// outside `auto`, by the read-only list.
    fn allowed(&self, mode: Mode, name: &str, subject: &Subject) -> Option<Decision> {
        let read_only_counts = mode != Mode::Auto;
        let allow: Vec<&Rule> = self.rules.allow.iter().filter(|r| r.names(name)).collect();
        match subject {
            Subject::Bash { analysis, .. } => self.bash_allowed(read_only_counts, &allow, analysis),
            _ => {
                if let Some(r) = allow
                    .iter()
                    .find(|r| self.matches_any(r, subject, false).is_some())
                {
                    return Some(Decision::rule(Verdict::Allow, List::Allow, r, ""));
                }
                (read_only_counts && readonly::is_read_only_tool(name))
                    .then(|| Decision::new(Verdict::Allow, By::ReadOnlyList, ""))
            }
        }
    }

    /// What of a call other than `bash` matches rule `r` (the path, the arguments, the
    /// URL); `broad` for deny and ask rules.
    fn matches_any(&self, r: &Rule, subject: &Subject, broad: bool) -> Option<String> {
        match subject {
            Subject::Bash { .. } => None,
            Subject::Path(p) => r.matches_path(p).then(|| match p {
                Ok(rel) | Err(rel) => rel.display().to_string(),
            }),
            Subject::Arguments(json) => r.matches_arguments(json).then(|| json.clone()),
            Subject::Url(Ok(url)) => r.matches_url(url, broad).then(|| url.to_string()),
            Subject::Url(Err(_)) => None,
        }
    }

    /// What the call is about, and for a file tool the place its path leads to.
    fn subject(&self, name: &str, arguments: &str) -> (Subject, Option<Pinned>) {
        let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
        let text = |k: &str| args.get(k).and_then(|v| v.as_str()).map(str::to_string);
        // What the tool declares says what its call is about: a command line, a path, a URL.
        let declared = meta::of(name);
        if let Some(arg) = declared.and_then(|m| m.command) {
            let command = text(arg).unwrap_or_default();
            let analysis = shell::analyse(&command);
            return (Subject::Bash { command, analysis }, None);
        }
        if let Some(arg) = declared.and_then(|m| m.path) {
            let path = text(arg).filter(|p| !p.is_empty()).unwrap_or_else(|| ".".into());
            let (judged, real) = self.resolved(&path);
            return (Subject::Path(judged), Some(Pinned { given: path, real }));
        }
        if let Some(arg) = declared.and_then(|m| m.url) {
            let url = text(arg).unwrap_or_default();
            return (
                Subject::Url(reqwest::Url::parse(url.trim()).map_err(|_| url)),
                None,
            );
        }
        // Compact JSON with sorted keys, so a glob does not depend on the model's spacing
        // or key order (serde_json keeps the order it read: sorted here).
        let mut args = args;
        args.sort_all_objects();
        (
            Subject::Arguments(serde_json::to_string(&args).unwrap_or_default()),
            None,
        )
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
                if analysis.opaque.is_some() || analysis.unseen_redirect.is_some() {
                    return Vec::new();
                }
                let mut out: Vec<String> = Vec::new();
                for part in &analysis.parts {
                    let covered = self.part_covered(part, mode != Mode::Auto);
                    let words: Vec<&str> = part.texts().collect();
                    let rule = format!("bash({})", prefix(&words));
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
            Subject::Url(url) => match url {
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
fn prefix(words: &[&str]) -> String {
    let esc = |w: &str| globset::escape(w);
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
        Subject::Url(Ok(url)) => format!("{name} of {url}"),
        Subject::Url(Err(url)) => format!("{name} of {url}"),
    }
}

/// `a/./b/../c` → `a/c`, without touching the disk.
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
