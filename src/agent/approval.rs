//! The permission gate of the turn loop: decides each call before it runs (rules, then
//! the mode), asks the front end when the decision is "ask" and waits for the answer,
//! keeps "always" answers, and records every decision with the call. A refused call
//! gets a `NOT_APPROVED` result with a reason the model can act on.

use super::state::AgentState;
use crate::permissions::record::{Decider, Outcome, Record};
use crate::permissions::rule::{Rule, Source};
use crate::permissions::{Decision, Verdict};
use crate::protocol::{Answer, Event, NoticeLevel};
use crate::store::MarkerKind;
use crate::tools::Executed;

/// The error code of a call that was not run because it was not approved.
pub const NOT_APPROVED: &str = "NOT_APPROVED";

/// The sandbox calls run under, as recorded with each decision: the configured mode
/// (`off`, `workspace-write`, `read-only`; it applies to `bash` and external tools).
pub fn sandbox_in_force(st: &AgentState) -> String {
    st.config().sandbox.mode.to_string()
}

/// Decides call `id`; `None` lets it run, `Some` is the result of a call not run.
pub(super) async fn gate(st: &mut AgentState, id: &str, name: &str, arguments: &str) -> Option<Executed> {
    let mode = st.gate.mode.get();
    let d = st.gate.policy.decide(mode, name, arguments);
    match d.verdict {
        Verdict::Allow => {
            record(st, Record::of(id, name, &d, mode, &sandbox_in_force(st)));
            None
        }
        Verdict::Deny => {
            record(st, Record::of(id, name, &d, mode, &sandbox_in_force(st)));
            Some(refused(name, &refusal(&d, mode)))
        }
        Verdict::Ask => {
            let always = st.gate.policy.suggest(mode, name, arguments);
            ask_user(st, id, name, arguments, &d.reason, always).await
        }
    }
}

/// Asks the front end about call `id` (why: `reason`; `always`: the rules an "always"
/// answer keeps) and waits for the answer; records it. `None` lets the call run.
/// Also the way to ask again for a call the sandbox stopped (`reason` says what it hit):
/// in scripted mode the answer is `NOT_APPROVED`.
pub async fn ask_user(
    st: &mut AgentState,
    id: &str,
    name: &str,
    arguments: &str,
    reason: &str,
    always: Vec<String>,
) -> Option<Executed> {
    let mode = st.gate.mode.get();
    st.emit(Event::ApprovalRequested {
        id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
        reason: reason.to_string(),
        always: always.clone(),
    });
    let answer = loop {
        match st.gate.approvals.recv().await {
            Some((answered, answer)) if answered == id => break answer,
            // An answer to a question of a cancelled turn.
            Some(_) => continue,
            None => break Answer::Unattended,
        }
    };
    let mut rec = Record {
        tool_call_id: id.to_string(),
        tool: name.to_string(),
        decision: Outcome::Approved,
        by: Decider::User,
        rule: None,
        rule_source: None,
        mode,
        sandbox: sandbox_in_force(st),
        reason: String::new(),
    };
    let result = match answer {
        Answer::Yes => None,
        Answer::Session | Answer::Always if always.is_empty() => None,
        Answer::Session => {
            keep(st, &always, Source::Session);
            rec.rule = Some(format!("allow {}", always.join(", ")));
            rec.rule_source = Some(Source::Session.as_str().into());
            None
        }
        Answer::Always => {
            remember(st, &always);
            rec.rule = Some(format!("allow {}", always.join(", ")));
            rec.rule_source = Some(Source::Remembered.as_str().into());
            None
        }
        Answer::No(why) => {
            rec.decision = Outcome::Refused;
            let why = why.map(|w| w.trim().to_string()).filter(|w| !w.is_empty());
            rec.reason = why.clone().unwrap_or_default();
            let text = match why {
                Some(w) => format!("The user did not approve this call and said: {w}"),
                None => "The user did not approve this call. Do not run it again as it was; ask \
                         the user what they want instead."
                    .to_string(),
            };
            Some(refused(name, &text))
        }
        Answer::Unattended => {
            rec.decision = Outcome::Refused;
            rec.by = Decider::Unattended;
            rec.reason = reason.to_string();
            Some(refused(name, &unattended(reason, mode, &always)))
        }
    };
    record(st, rec);
    result
}

/// Adds allow rules for the rest of the session (`source` says why they exist).
fn keep(st: &mut AgentState, rules: &[String], source: Source) {
    let home = crate::environ::var("HOME").map(std::path::PathBuf::from);
    for text in rules {
        match Rule::parse(text, source.clone(), home.as_deref()) {
            Ok(r) => st.gate.policy.rules.allow.push(r),
            Err(e) => st.notice(NoticeLevel::Warning, e.to_string()),
        }
    }
}

/// Keeps rules for this project in the user's data, and in force now.
fn remember(st: &mut AgentState, rules: &[String]) {
    keep(st, rules, Source::Remembered);
    match &st.gate.remembered {
        Some(store) => {
            if let Err(e) = store.add(rules) {
                st.notice(
                    NoticeLevel::Warning,
                    format!("the answer holds for this session only: {e}"),
                );
            }
        }
        None => st.notice(
            NoticeLevel::Warning,
            "the answer holds for this session only: no place to keep it (set HOME or XDG_DATA_HOME)",
        ),
    }
}

fn record(st: &mut AgentState, rec: Record) {
    let data = serde_json::to_value(&rec).unwrap_or_default();
    st.marker(MarkerKind::Permission, data);
    st.emit(Event::Permission(rec));
}

/// What the model reads for a call the rules or the mode refused.
fn refusal(d: &Decision, mode: crate::permissions::Mode) -> String {
    match &d.by {
        crate::permissions::By::Rule { list, rule, source } => format!(
            "Not run: the user's {} rule `{rule}` ({}) forbids it ({}). Do not try to get \
             around the rule; do without it, or ask the user.",
            list.as_str(),
            source.as_str(),
            d.reason
        ),
        _ => format!(
            "Not run: {} (approval mode {mode}). Use read-only tools and commands, or ask \
             the user to switch the mode.",
            d.reason
        ),
    }
}

/// What the model reads when nobody was there to approve.
fn unattended(reason: &str, mode: crate::permissions::Mode, always: &[String]) -> String {
    let rule = always
        .first()
        .map(|r| format!(" (e.g. `allow = [\"{r}\"]` under [permissions])"))
        .unwrap_or_default();
    format!(
        "Not run: this call needs the user's approval ({reason}; approval mode {mode}), and \
         nobody is there to give it in this scripted run. Do the task without it if you can; \
         otherwise stop and say which command you need, so the user can run it, allow it with \
         a rule{rule}, or rerun with --approval auto."
    )
}

/// The result of a call that was not run.
fn refused(_name: &str, text: &str) -> Executed {
    Executed {
        // The error itself, so a front end shows it as one line.
        summary: format!("{NOT_APPROVED}: {text}"),
        envelope: crate::tools::envelope::Envelope::failure(
            crate::tools::envelope::ErrorCode::NotApproved,
            text,
        ),
        success: false,
    }
}
