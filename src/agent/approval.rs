//! The permission gate of the turn loop: decides each call before it runs (rules, then
//! the mode), asks the front end when the decision is "ask" and waits for the answer,
//! keeps "always" answers, and records every decision with the call. A refused call
//! gets a `NOT_APPROVED` result with a reason the model can act on.

use super::state::AgentState;
use crate::permissions::{Decision, Verdict};
use crate::policy::Pinned;
use crate::policy::record::{Decider, Outcome, Record};
use crate::policy::rule::{Rule, Source};
use crate::protocol::{Answer, Event, NoticeLevel};
use crate::store::MarkerKind;
use crate::tools::Executed;

/// The error code of a call that was not run because it was not approved.
pub const NOT_APPROVED: &str = "NOT_APPROVED";

/// The sandbox calls run under, as recorded with each decision: the configured mode
/// (`off`, `workspace-write`, `read-only`; it applies to `bash`, external tools and the
/// writes of the built-in file tools).
pub fn sandbox_in_force(st: &AgentState) -> String {
    st.config().sandbox.mode.to_string()
}

/// Decides call `id`; `Ok` lets it run — held, for a file tool, to the place the decision
/// judged (the `Pinned` goes into its context) — and `Err` is the result of a call not run.
/// `hook` is what a PreToolUse hook said: `Allow` only skips the mode's question (a deny
/// stays a deny, an ask rule still asks), `Ask` asks where the rules would allow.
pub(super) async fn gate(
    st: &mut AgentState,
    id: &str,
    name: &str,
    arguments: &str,
    hook: Option<crate::hooks::Permission>,
) -> Result<Option<Pinned>, Executed> {
    use crate::hooks::Permission;
    let mode = st.gate.mode.get();
    let mut d = st.gate.policy.decide(mode, name, arguments);
    match (d.verdict, hook) {
        // Only the mode's question: an ask rule or a protected file still asks.
        (Verdict::Ask, Some(Permission::Allow)) if d.by == crate::policy::decision::By::Mode => {
            d.verdict = Verdict::Allow;
            d.reason = format!("a PreToolUse hook allowed it ({})", d.reason);
        }
        (Verdict::Allow, Some(Permission::Ask)) => {
            d.verdict = Verdict::Ask;
            d.reason = "a PreToolUse hook asks for your approval".into();
        }
        _ => {}
    }
    match d.verdict {
        Verdict::Allow => {
            record(st, Record::of(id, name, &d, mode, &sandbox_in_force(st)));
            Ok(d.pinned)
        }
        Verdict::Deny => {
            record(st, Record::of(id, name, &d, mode, &sandbox_in_force(st)));
            Err(refused(name, &refusal(&d, mode)))
        }
        Verdict::Ask => {
            let always = st.gate.policy.suggest(mode, name, arguments);
            match ask_user(st, id, name, arguments, &d.reason, always).await {
                None => Ok(d.pinned),
                Some(refused) => Err(refused),
            }
        }
    }
}

/// Asks the front end about call `id` (why: `reason`; `always`: the rules an "always"
/// answer keeps) and waits for the answer; records it. `None` lets the call run.
pub async fn ask_user(
    st: &mut AgentState,
    id: &str,
    name: &str,
    arguments: &str,
    reason: &str,
    always: Vec<String>,
) -> Option<Executed> {
    let mode = st.gate.mode.get();
    let answer = ask(st, id, name, arguments, reason, &always, false).await;
    let mut rec = user_record(st, id, name, mode);
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
            let why = said(why);
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

/// After call `id` failed because the sandbox stopped it (`denied` is its result, `why`
/// what the sandbox denied): asks whether to run it again outside the sandbox, in every
/// approval mode, since the user chose the sandbox apart from the mode. `None`: the user
/// approved (the caller runs it again unconfined); `Some`: the result the model gets, a
/// `NOT_APPROVED` failure that keeps what the command printed. Nobody there to ask
/// (scripted mode) is a refusal.
pub(super) async fn outside_sandbox(
    st: &mut AgentState,
    id: &str,
    name: &str,
    arguments: &str,
    denied: Executed,
    why: &str,
) -> Option<Executed> {
    let mode = st.gate.mode.get();
    let reason = format!("It ran in the sandbox and failed: {why}.");
    let answer = ask(st, id, name, arguments, &reason, &[], true).await;
    let mut rec = user_record(st, id, name, mode);
    let text = match answer {
        Answer::Yes | Answer::Session | Answer::Always => {
            rec.sandbox = "off".to_string();
            rec.reason = format!("run again outside the sandbox after: {why}");
            record(st, rec);
            return None;
        }
        Answer::No(said_why) => {
            let said_why = said(said_why);
            rec.reason = said_why.clone().unwrap_or_default();
            match said_why {
                Some(w) => format!(
                    "The sandbox stopped this call ({why}), and the user did not approve \
                     running it outside the sandbox and said: {w}"
                ),
                None => format!(
                    "The sandbox stopped this call ({why}), and the user did not approve \
                     running it outside the sandbox. Do not ask again; do the task inside the \
                     workspace, or ask the user what they want instead."
                ),
            }
        }
        Answer::Unattended => {
            rec.by = Decider::Unattended;
            rec.reason = format!("outside the sandbox after: {why}");
            format!(
                "The sandbox stopped this call ({why}). Running it outside the sandbox needs \
                 the user's approval, and nobody is there to give it in this scripted run. Do \
                 the task inside the workspace if you can; otherwise stop and say which command \
                 you need, so the user can run it, add its folder to `writable_roots`, or \
                 rerun with --sandbox off."
            )
        }
    };
    rec.decision = Outcome::Refused;
    record(st, rec);
    let mut result = refused(name, &text);
    // What the command printed stays with the refusal.
    result.envelope.result = denied.envelope.result;
    result.envelope.partial_output = denied.envelope.partial_output;
    Some(result)
}

/// Emits the question and waits for its answer (`Unattended` when nobody can answer).
async fn ask(
    st: &mut AgentState,
    id: &str,
    name: &str,
    arguments: &str,
    reason: &str,
    always: &[String],
    outside_sandbox: bool,
) -> Answer {
    st.emit(Event::ApprovalRequested {
        id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
        reason: reason.to_string(),
        always: always.to_vec(),
        outside_sandbox,
    });
    // ikigai waits for the user: Notification hooks (a desktop notice, a sound).
    super::hooks::notify(
        st,
        crate::config::hooks::HookEvent::Notification,
        serde_json::json!({"message": format!("ikigai needs your permission to use {name}")}),
    )
    .await;
    loop {
        match st.gate.approvals.recv().await {
            Some((answered, answer)) if answered == id => break answer,
            // An answer to a question of a cancelled turn.
            Some(_) => continue,
            None => break Answer::Unattended,
        }
    }
}

/// An approval by the user, to be amended by the answer.
fn user_record(st: &AgentState, id: &str, name: &str, mode: crate::policy::Mode) -> Record {
    Record {
        tool_call_id: id.to_string(),
        tool: name.to_string(),
        decision: Outcome::Approved,
        by: Decider::User,
        rule: None,
        rule_source: None,
        mode,
        sandbox: sandbox_in_force(st),
        reason: String::new(),
    }
}

/// The reason typed with a "no", when there is one.
fn said(why: Option<String>) -> Option<String> {
    why.map(|w| w.trim().to_string()).filter(|w| !w.is_empty())
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
fn refusal(d: &Decision, mode: crate::policy::Mode) -> String {
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
fn unattended(reason: &str, mode: crate::policy::Mode, always: &[String]) -> String {
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
/// The result of a call a PreToolUse hook blocked (exit 2, or `deny`), with its reason.
pub(super) fn refused_by_hook(name: &str, why: &str) -> Executed {
    refused(name, &format!("A PreToolUse hook blocked this call: {why}"))
}

fn refused(_name: &str, text: &str) -> Executed {
    Executed {
        images: Vec::new(),
        // The error itself, so a front end shows it as one line.
        summary: format!("{NOT_APPROVED}: {text}"),
        envelope: crate::tool_vocab::envelope::Envelope::failure(
            crate::tool_vocab::envelope::ErrorCode::NotApproved,
            text,
        ),
        success: false,
    }
}
