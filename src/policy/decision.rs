//! A permission decision as data: the rules in force by list, the verdict, who decided,
//! and for a file tool the place it judged (`Pinned`). Made by `permissions::decide`,
//! read by the agent, the tools and the front ends. Data only: decides nothing.

use std::path::PathBuf;

use serde::Serialize;

use super::mode::Mode;
use super::rule::{List, Rule, Source};

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
    pub(crate) fn new(verdict: Verdict, by: By, reason: impl Into<String>) -> Decision {
        Decision {
            verdict,
            by,
            reason: reason.into(),
            pinned: None,
        }
    }

    pub(crate) fn rule(verdict: Verdict, list: List, r: &Rule, reason: impl Into<String>) -> Decision {
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

/// The path a permission decision judged for a file tool: the `path` argument as given
/// and where it led then — absolute, every link followed, no `..` (`None`: nowhere, a
/// link loop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    pub given: String,
    pub real: Option<PathBuf>,
}
