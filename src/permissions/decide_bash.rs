//! The rules' judgement of one `bash` line, from its analysis (shell/): a rule that
//! matches a part decides (deny, ask); a rule that *may* match — a part with words decided
//! when it runs, a command an unknown program may run from its arguments or input, a
//! redirection to a file named when it runs, a folder change before paths — asks; a line
//! that cannot all be seen asks whenever a rule for bash or for files is in force. Allow
//! rules and the read-only list allow a line only when they cover every part with
//! certainty. Path rules (`file_read`, `file_write`, `file_edit`) see the paths the line
//! names: literal arguments and redirections.

use std::path::PathBuf;

use super::super::git_repo;
use super::super::readonly;
use super::super::rule::{List, Rule};
use super::super::shell::{Analysis, Part, base_name};
use super::{By, Decision, Policy, Verdict};
use crate::tool_vocab::meta::{BASH, FILE_EDIT, FILE_READ, FILE_WRITE};

/// The file tools whose path rules also judge the paths a bash line names.
const PATH_TOOLS: [&str; 3] = [FILE_READ.name, FILE_WRITE.name, FILE_EDIT.name];

impl Policy {
    /// The deny (or ask) step for a bash line.
    pub(super) fn bash_rules(&self, list: List, command: &str, a: &Analysis) -> Option<Decision> {
        let verdict = if list == List::Deny {
            Verdict::Deny
        } else {
            Verdict::Ask
        };
        let rules = self.rules.list(list);
        let commands: Vec<&Rule> = rules.iter().filter(|r| r.names(BASH.name)).collect();
        let paths: Vec<&Rule> = rules
            .iter()
            .filter(|r| !r.names(BASH.name) && PATH_TOOLS.iter().any(|t| r.names(t)))
            .collect();
        if commands.is_empty() && paths.is_empty() {
            return None;
        }
        let matched = |r: &Rule, what: &str| {
            Decision::rule(
                verdict,
                list,
                r,
                format!("`{what}` matches the {} rule `{}`", list.as_str(), r.text),
            )
        };
        // What the line certainly runs or names.
        for r in &commands {
            if r.matches_command(command) {
                return Some(matched(r, command));
            }
            if let Some(p) = a.parts.iter().find(|p| part_matches(r, p)) {
                return Some(matched(r, &p.text));
            }
        }
        for r in &paths {
            if let Some(path) = self.names_path(r, a) {
                return Some(Decision::rule(
                    verdict,
                    list,
                    r,
                    format!(
                        "the line names `{path}`, a path the {} rule `{}` covers",
                        list.as_str(),
                        r.text
                    ),
                ));
            }
        }
        // What it may run: somebody decides.
        let may = |r: &Rule, why: String| {
            Decision::rule(
                Verdict::Ask,
                list,
                r,
                format!("{why}, which may match the {} rule `{}`", list.as_str(), r.text),
            )
        };
        for r in &commands {
            if let Some(why) = may_run(r, a) {
                return Some(may(r, why));
            }
        }
        for r in &paths {
            if let Some(why) = &a.unseen_redirect {
                return Some(may(r, why.clone()));
            }
            if a.moves {
                return Some(may(
                    r,
                    "the line changes folder (`cd`), so the paths after it are not the project's".into(),
                ));
            }
        }
        let why = a.opaque.as_ref()?;
        Some(Decision::new(
            Verdict::Ask,
            By::Mode,
            format!(
                "{why}, so the {} rules for bash and files cannot be checked",
                list.as_str()
            ),
        ))
    }

    /// The allow step for a bash line: every part covered by an allow rule or (outside
    /// `auto`) by the read-only list, and every file it writes by a `file_write` rule.
    pub(super) fn bash_allowed(
        &self,
        read_only_counts: bool,
        allow: &[&Rule],
        a: &Analysis,
    ) -> Option<Decision> {
        if a.opaque.is_some() || a.unseen_redirect.is_some() {
            // Unless a rule allows every bash call, what cannot be seen is not allowed.
            let any = allow.iter().find(|r| r.is_any())?;
            return Some(Decision::rule(Verdict::Allow, List::Allow, any, ""));
        }
        let mut used: Vec<&Rule> = Vec::new();
        for part in &a.parts {
            if let Some(r) = allow.iter().find(|r| allows_part(r, part)) {
                if !used.iter().any(|u| u.text == r.text) {
                    used.push(r);
                }
            } else if !(read_only_counts && self.is_read_only_part(part)) {
                return None;
            }
        }
        for path in &a.writes {
            let rel = self.resolve(path);
            let r = self
                .rules
                .allow
                .iter()
                .find(|r| r.names(FILE_WRITE.name) && r.matches_path(&rel))?;
            if !used.iter().any(|u| u.text == r.text) {
                used.push(r);
            }
        }
        if a.parts.is_empty() && a.writes.is_empty() {
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

    /// Whether an allow rule for bash covers `part` (for "always": is it covered yet).
    pub(super) fn part_covered(&self, part: &Part, read_only_counts: bool) -> bool {
        self.rules
            .allow
            .iter()
            .any(|r| r.names(BASH.name) && allows_part(r, part))
            || (read_only_counts && self.is_read_only_part(part))
    }

    /// Whether one part of a command only reads: on the read-only list, and for `git`,
    /// in a repository that runs no program of its own (git_repo.rs).
    pub(super) fn is_read_only_part(&self, part: &Part) -> bool {
        readonly::is_read_only_part(part)
            && !(part.words.first().is_some_and(|w| w.text == "git")
                && git_repo::runs_own_programs(&self.root).is_some())
    }

    /// A path rule `r` covers a path the line names: a redirection it writes (for
    /// `file_write`/`file_edit` rules) or reads (for `file_read`), or a literal argument
    /// of any command (`cat .env`, `cp x .env`, `--file=.env`).
    fn names_path(&self, r: &Rule, a: &Analysis) -> Option<String> {
        let writes = r.names(FILE_WRITE.name) || r.names(FILE_EDIT.name);
        let redirections = a
            .writes
            .iter()
            .filter(|_| writes)
            .chain(a.reads.iter().filter(|_| r.names(FILE_READ.name)));
        for p in redirections {
            if r.matches_path(&self.resolve(p)) {
                return Some(p.clone());
            }
        }
        for part in a.parts.iter().chain(&a.maybe) {
            for w in part.words.iter().skip(1).filter(|w| w.is_literal()) {
                let value = w
                    .text
                    .strip_prefix('-')
                    .and_then(|o| o.split_once('=').map(|(_, v)| v));
                for candidate in std::iter::once(w.text.as_str()).chain(value) {
                    if !candidate.is_empty() && r.matches_path(&self.word_path(candidate)) {
                        return Some(candidate.to_string());
                    }
                }
            }
        }
        None
    }

    /// A word as a path, resolved like the file tools' paths; a plain name that does not
    /// exist is taken as written (one `stat` instead of a walk through every folder).
    fn word_path(&self, word: &str) -> Result<PathBuf, PathBuf> {
        if !word.contains('/') && !word.starts_with('~') && word != ".." {
            let joined = self.root.join(word);
            if std::fs::symlink_metadata(&joined).is_err() {
                return Ok(PathBuf::from(word));
            }
        }
        self.resolve(word)
    }
}

/// Whether rule `r` matches `p` for certain: its text, or with the program named by its
/// last path component (`/bin/rm -rf x` meets `bash(rm -rf*)`).
fn part_matches(r: &Rule, p: &Part) -> bool {
    r.matches_command(&p.text)
        || (p.words.first().is_some_and(|w| w.text.contains('/')) && r.matches_command(&p.by_name()))
}

/// Whether allow rule `r` covers every run of `part`: its literal text, or, when some
/// words are decided at run time, the literal words before them followed by anything.
fn allows_part(r: &Rule, part: &Part) -> bool {
    if part.is_literal() {
        return r.matches_command(&part.text);
    }
    r.matches_any_continuation(&literal_start(part))
}

/// The literal words before the first one decided at run time, each followed by a space.
fn literal_start(part: &Part) -> String {
    let mut s = String::new();
    for w in part.words.iter().take_while(|w| w.is_literal()) {
        s.push_str(&w.text);
        s.push(' ');
    }
    s
}

/// Why rule `r` may match something the line runs without matching it for certain.
fn may_run(r: &Rule, a: &Analysis) -> Option<String> {
    for p in &a.parts {
        if let Some(why) = may_match(r, p) {
            return Some(why);
        }
    }
    for p in &a.maybe {
        if part_matches(r, p) {
            return Some(format!("a program in the line may run `{}`", p.text));
        }
        if let Some(why) = may_match(r, p) {
            return Some(why);
        }
    }
    None
}

/// Whether rule `r` may match a run of `p` (words decided at run time), or a command
/// that `p`, an unknown program, may run from its arguments.
fn may_match(r: &Rule, p: &Part) -> Option<String> {
    if !p.is_literal() {
        if p.unknown {
            return Some(format!(
                "`{}` runs a program that may run its arguments, some decided when it runs",
                p.text
            ));
        }
        let start = literal_start(p);
        let prefix = r.command_prefix();
        let by_name = p
            .words
            .first()
            .map(|w| start.replacen(w.text.as_str(), base_name(&w.text), 1))
            .unwrap_or_default();
        if [start.as_str(), by_name.as_str()]
            .iter()
            .any(|s| s.starts_with(prefix) || prefix.starts_with(s))
        {
            return Some(format!("`{}` has words decided when it runs", p.text));
        }
    }
    if p.unknown {
        let name = r.command_name();
        for i in 0..p.words.len() {
            let w = &p.words[i];
            if !w.is_literal() {
                continue;
            }
            // `--to-command=rm`, and the punctuation a program's own syntax puts before a
            // command (`!rm` in an editor, `:!rm`, `(rm`).
            let first = w
                .text
                .split_once('=')
                .map_or(w.text.as_str(), |(_, v)| v)
                .trim_start_matches(|c: char| "!:%@({[`'\"".contains(c));
            if name.is_some_and(|n| base_name(first) != n) {
                continue;
            }
            let mut text = first.to_string();
            for rest in &p.words[i + 1..] {
                text.push(' ');
                text.push_str(&rest.text);
            }
            let by_name = text.replacen(first, base_name(first), 1);
            if r.matches_command(&text) || r.matches_command(&by_name) {
                return Some(format!("`{}` may run `{text}`", p.text));
            }
        }
    }
    None
}
