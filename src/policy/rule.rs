//! One permission rule, `tool` or `tool(pattern)`, parsed and compiled once: for `bash` a
//! glob over a command (`bash(git status*)`); for the file tools a gitignore-style path
//! pattern relative to the project (`file_edit(src/**)`), or `//abs/glob` and `~/glob`
//! outside it; for `web_fetch` a URL pattern matched part by part (url_rule.rs:
//! `web_fetch(https://docs.rs/*)`); for any other tool a glob over its arguments as JSON.
//! Matches; never decides.

use std::path::Path;

use globset::{Glob, GlobBuilder, GlobMatcher};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::url_rule::UrlPattern;
use crate::tool_vocab::meta;

/// Which list a rule is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum List {
    Allow,
    Ask,
    Deny,
}

impl List {
    pub fn as_str(self) -> &'static str {
        match self {
            List::Allow => "allow",
            List::Ask => "ask",
            List::Deny => "deny",
        }
    }
}

/// Where a rule came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The user's config file.
    User,
    /// The trusted project's `.ikigai/config.toml`.
    Project,
    /// An "always" answer kept in the user's data for this project.
    Remembered,
    /// An "always in this session" answer.
    Session,
}

impl Source {
    pub fn as_str(&self) -> &'static str {
        match self {
            Source::User => "user config",
            Source::Project => "project config",
            Source::Remembered => "remembered answer",
            Source::Session => "this session",
        }
    }
}

/// A rule that does not parse; the message names it and says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid rule `{rule}`: {message}")]
pub struct RuleError {
    pub rule: String,
    pub message: String,
}

#[derive(Clone, Debug)]
enum Pattern {
    /// Every call of the tool.
    Any,
    /// A glob over a command; `bare` also matches the command without arguments when the
    /// glob ends in ` *` (`bash(ls *)` matches `ls`). `prefix` is the glob's literal start
    /// (up to its first `*`, `?`, `[` or `{`), `open_end` says the glob is that prefix and
    /// one `*` (so it matches the prefix followed by anything).
    Command {
        glob: GlobMatcher,
        bare: Option<GlobMatcher>,
        prefix: String,
        open_end: bool,
    },
    /// A `web_fetch` URL pattern.
    Url(UrlPattern),
    /// A path relative to the project (gitignore-style).
    ProjectPath(Gitignore),
    /// A glob over an absolute path (`//…`, or `~/…` expanded when compiled).
    AbsolutePath(GlobMatcher),
    /// A glob over the arguments' JSON.
    Arguments(GlobMatcher),
}

/// A compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// As written, e.g. `bash(cargo test*)`.
    pub text: String,
    pub source: Source,
    tool: GlobMatcher,
    /// The tool as written (a glob when it has `*`).
    tool_name: String,
    pattern: Pattern,
}

fn glob(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

impl Rule {
    /// Parses `text` (`tool` or `tool(pattern)`); `home` expands `~/` patterns.
    pub fn parse(text: &str, source: Source, home: Option<&Path>) -> Result<Rule, RuleError> {
        let err = |message: &str| RuleError {
            rule: text.to_string(),
            message: message.to_string(),
        };
        let t = text.trim();
        let (tool_name, inner) = match t.find('(') {
            None => (t, None),
            Some(open) => {
                let Some(inner) = t[open + 1..].strip_suffix(')') else {
                    return Err(err(
                        "a pattern is written `tool(pattern)`, closed by `)` at the end",
                    ));
                };
                (t[..open].trim(), Some(inner))
            }
        };
        if tool_name.is_empty()
            || !tool_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*'))
        {
            return Err(err(
                "the tool name is letters, digits, `_`, `-`, `.` (and `*` for any), e.g. `bash(git status*)`",
            ));
        }
        let tool = glob(tool_name).map_err(|m| err(&m))?;
        // What the tool declares picks the pattern's kind: a command line, a URL, a path.
        let declared = meta::of(tool_name);
        let runs = declared.is_some_and(|m| m.command.is_some());
        let fetches = declared.is_some_and(|m| m.url.is_some());
        let pattern = match inner.map(str::trim) {
            None => Pattern::Any,
            Some("") => {
                return Err(err(
                    "the pattern in `()` is empty; write the tool alone to match every call",
                ));
            }
            Some("*") if runs || fetches => Pattern::Any,
            Some(p) if runs => {
                let bare = p.strip_suffix(" *").map(glob).transpose().map_err(|m| err(&m))?;
                let (prefix, rest) = literal_prefix(p);
                Pattern::Command {
                    glob: glob(p).map_err(|m| err(&m))?,
                    bare,
                    prefix,
                    open_end: rest == "*",
                }
            }
            Some(p) if fetches => Pattern::Url(UrlPattern::parse(p).map_err(|m| err(&m))?),
            Some(p) if meta::has_path(tool_name) => path_pattern(p, home).map_err(|m| err(&m))?,
            Some(p) => Pattern::Arguments(glob(p).map_err(|m| err(&m))?),
        };
        Ok(Rule {
            text: t.to_string(),
            source,
            tool,
            tool_name: tool_name.to_string(),
            pattern,
        })
    }

    /// Whether the rule is about tool `name` at all.
    pub fn names(&self, name: &str) -> bool {
        self.tool.is_match(name)
    }

    /// Whether the rule names exactly `bash` (its pattern is over commands).
    pub fn is_bash(&self) -> bool {
        meta::of(&self.tool_name).is_some_and(|m| m.command.is_some())
    }

    /// Whether it matches every call of the tools it names.
    pub fn is_any(&self) -> bool {
        matches!(self.pattern, Pattern::Any)
    }

    /// For a bash rule: whether it matches one command.
    pub fn matches_command(&self, command: &str) -> bool {
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Command { glob, bare, .. } => {
                glob.is_match(command) || bare.as_ref().is_some_and(|b| b.is_match(command))
            }
            _ => false,
        }
    }

    /// For a bash rule: the literal start of its glob (empty for every command).
    pub fn command_prefix(&self) -> &str {
        match &self.pattern {
            Pattern::Command { prefix, .. } => prefix,
            _ => "",
        }
    }

    /// For a bash rule: the command its glob names (its first word, when literal).
    pub fn command_name(&self) -> Option<&str> {
        match &self.pattern {
            Pattern::Command { prefix, .. } => prefix.split_once(' ').map(|(first, _)| first),
            _ => None,
        }
    }

    /// For a bash rule: whether it matches `start` followed by any text at all (a command
    /// whose words after `start` are decided when it runs). Only a glob that is a literal
    /// start and one `*` can say so.
    pub fn matches_any_continuation(&self, start: &str) -> bool {
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Command { prefix, open_end, .. } => *open_end && start.starts_with(prefix.as_str()),
            _ => false,
        }
    }

    /// For a `web_fetch` rule: whether it matches the URL (`broad` for deny and ask
    /// rules: url_rule.rs).
    pub fn matches_url(&self, url: &reqwest::Url, broad: bool) -> bool {
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Url(p) => p.matches(url, broad),
            _ => false,
        }
    }

    /// For a file tool's rule: whether it matches the path, given relative to the project
    /// (`Ok`) or as an absolute path outside it (`Err`).
    pub fn matches_path(&self, path: &Result<std::path::PathBuf, std::path::PathBuf>) -> bool {
        match (&self.pattern, path) {
            (Pattern::Any, _) => true,
            (Pattern::ProjectPath(gi), Ok(rel)) => gi.matched_path_or_any_parents(rel, false).is_ignore(),
            (Pattern::AbsolutePath(g), Err(abs)) => g.is_match(abs),
            _ => false,
        }
    }

    /// For any other tool's rule: whether it matches the arguments' JSON (`web_fetch`'s:
    /// its URL).
    pub fn matches_arguments(&self, json: &str) -> bool {
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Arguments(g) => g.is_match(json),
            _ => false,
        }
    }
}

/// A glob's literal start (escapes resolved) and the rest from its first metacharacter.
fn literal_prefix(p: &str) -> (String, &str) {
    let mut out = String::new();
    let mut chars = p.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e)) => out.push(e),
                None => return (out, ""),
            },
            '*' | '?' | '[' | '{' => return (out, &p[i..]),
            c => out.push(c),
        }
    }
    (out, "")
}

fn path_pattern(p: &str, home: Option<&Path>) -> Result<Pattern, String> {
    if let Some(abs) = p.strip_prefix("//") {
        return Ok(Pattern::AbsolutePath(glob(&format!("/{abs}"))?));
    }
    if let Some(rest) = p.strip_prefix("~/") {
        let Some(home) = home else {
            return Err("`~/` needs HOME to be set".into());
        };
        let base = Glob::new(&globset::escape(&home.display().to_string()))
            .map(|g| g.glob().to_string())
            .map_err(|e| e.kind().to_string())?;
        return Ok(Pattern::AbsolutePath(glob(&format!("{base}/{rest}"))?));
    }
    if p.starts_with('!') {
        return Err("`!` negations are not rules; put the path in another list instead".into());
    }
    let mut b = GitignoreBuilder::new("/");
    b.add_line(None, p).map_err(|e| e.to_string())?;
    let gi = b.build().map_err(|e| e.to_string())?;
    Ok(Pattern::ProjectPath(gi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(t: &str) -> Rule {
        Rule::parse(t, Source::User, Some(Path::new("/home/u"))).unwrap()
    }

    #[test]
    fn bash_patterns_are_globs_over_the_command() {
        let r = rule("bash(git status*)");
        assert!(r.names("bash") && r.is_bash());
        assert!(r.matches_command("git status"));
        assert!(r.matches_command("git status --short src/a/b"));
        assert!(!r.matches_command("git push"));
        let r = rule("bash(ls *)");
        assert!(r.matches_command("ls") && r.matches_command("ls -la /tmp"));
        assert!(!r.matches_command("lsblk"));
        assert!(rule("bash").matches_command("anything at all"));
    }

    #[test]
    fn a_bash_glob_knows_its_literal_start_and_whether_it_ends_open() {
        let r = rule("bash(cargo test*)");
        assert_eq!(r.command_prefix(), "cargo test");
        assert_eq!(r.command_name(), Some("cargo"));
        assert!(r.matches_any_continuation("cargo test "));
        assert!(!r.matches_any_continuation("cargo "));
        let r = rule("bash(rm -r ??)");
        assert_eq!(r.command_prefix(), "rm -r ");
        assert!(!r.matches_any_continuation("rm -r "), "`??` is not any text");
        let r = rule("bash(*rm*)");
        assert_eq!((r.command_prefix(), r.command_name()), ("", None));
        assert_eq!(rule("bash(\\*x *)").command_prefix(), "*x ");
        assert!(rule("bash(*)").matches_any_continuation(""));
    }

    #[test]
    fn file_patterns_are_gitignore_style_paths() {
        let rel = |p: &str| Ok(std::path::PathBuf::from(p));
        let r = rule("file_edit(src/**)");
        assert!(r.matches_path(&rel("src/a/b.rs")));
        assert!(!r.matches_path(&rel("tests/a.rs")));
        let r = rule("file_read(.env)");
        assert!(r.matches_path(&rel(".env")) && r.matches_path(&rel("sub/.env")));
        assert!(!r.matches_path(&rel(".envrc")));
        let r = rule("file_write(/build/)");
        assert!(r.matches_path(&rel("build/x/y.o")) && !r.matches_path(&rel("src/build.rs")));
        let abs = |p: &str| Err(std::path::PathBuf::from(p));
        assert!(rule("file_read(//etc/**)").matches_path(&abs("/etc/passwd")));
        assert!(rule("file_read(~/.ssh/**)").matches_path(&abs("/home/u/.ssh/id_rsa")));
        assert!(!rule("file_read(src/**)").matches_path(&abs("/src/x")));
    }

    #[test]
    fn other_tools_match_their_arguments_json() {
        let r = rule("github__create_issue(*\"repo\":\"me/*\"*)");
        assert!(r.matches_arguments(r#"{"repo":"me/x","title":"t"}"#));
        assert!(!r.matches_arguments(r#"{"repo":"you/x"}"#));
        assert!(rule("github__*").names("github__list"));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (bad, says) in [
            ("bash(ls", "closed by `)`"),
            ("bash()", "empty"),
            ("ba sh(ls)", "tool name"),
            ("bash([)", "unclosed"),
            ("file_read(!x)", "negations"),
            ("", "tool name"),
        ] {
            let e = Rule::parse(bad, Source::User, None).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("invalid rule"), "{bad}: {e}");
        }
    }
}
