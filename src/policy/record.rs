//! How one call was decided, as stored with the call (a `permission` marker) and emitted
//! under `--json`: approved or refused, by whom (the user, a rule and which, the mode, the
//! read-only list), in which mode, under which sandbox. Data only.

use serde::{Deserialize, Serialize};

use super::decision::{By, Decision, Verdict};
use super::mode::Mode;

/// Approved or refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Approved,
    Refused,
}

/// Who decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// The user answered (`y`, `n`, `a`, `s`).
    User,
    /// A rule (named in `rule`).
    Rule,
    /// The approval mode alone.
    Mode,
    /// The built-in read-only list.
    ReadOnlyList,
    /// Nobody was there to ask (scripted mode).
    Unattended,
}

/// One decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub tool_call_id: String,
    pub tool: String,
    pub decision: Outcome,
    pub by: Decider,
    /// The rule, as `LIST RULE` (`deny bash(rm *)`), when a rule decided or the user's
    /// "always" answer added one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rule: Option<String>,
    /// Where that rule came from (`user config`, `project config`, `remembered answer`…).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rule_source: Option<String>,
    pub mode: Mode,
    /// The sandbox the call ran under (`off` until a sandbox is configured).
    pub sandbox: String,
    /// Why it was refused (or asked), when it was.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub reason: String,
}

impl Record {
    /// The record of a decision the rules or the mode made alone.
    pub fn of(id: &str, tool: &str, d: &Decision, mode: Mode, sandbox: &str) -> Record {
        let (by, rule, rule_source) = match &d.by {
            By::Rule { list, rule, source } => (
                Decider::Rule,
                Some(format!("{} {rule}", list.as_str())),
                Some(source.as_str().to_string()),
            ),
            By::Mode => (Decider::Mode, None, None),
            By::ReadOnlyList => (Decider::ReadOnlyList, None, None),
        };
        Record {
            tool_call_id: id.to_string(),
            tool: tool.to_string(),
            decision: if d.verdict == Verdict::Allow {
                Outcome::Approved
            } else {
                Outcome::Refused
            },
            by,
            rule,
            rule_source,
            mode,
            sandbox: sandbox.to_string(),
            reason: d.reason.clone(),
        }
    }

    /// One line for a transcript: `approved by rule allow bash(ls *) (user config); mode ask`.
    pub fn describe(&self) -> String {
        let what = match self.decision {
            Outcome::Approved => "approved",
            Outcome::Refused => "refused",
        };
        let by = match (self.by, &self.rule) {
            (Decider::Rule, Some(r)) => format!(
                "rule {r}{}",
                self.rule_source
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            ),
            (Decider::User, Some(r)) => format!("the user, remembering {r}"),
            (Decider::User, None) => "the user".into(),
            (Decider::Mode, _) | (Decider::Rule, None) => "the mode".into(),
            (Decider::ReadOnlyList, _) => "the read-only list".into(),
            (Decider::Unattended, _) => "nobody (scripted run)".into(),
        };
        let mut line = format!("{what} by {by}; mode {}, sandbox {}", self.mode, self.sandbox);
        if !self.reason.is_empty() {
            line.push_str(&format!(": {}", self.reason));
        }
        line
    }
}
