//! One round of tool calls (the calls of one response): each call judged in order (the
//! limit, the repeat guard, PreToolUse hooks, the permission gate), run, and answered in
//! call order (PostToolUse hooks, the result's caps, the result appended). When every call
//! of the round is of a tool that declares `ToolMeta::concurrent` (the `task` tool), the
//! judged calls run at the same time (the tool bounds how many) and are answered in call
//! order once all are done; otherwise one after the other. Cancelling drops the round;
//! `AgentState::interrupt` then answers every call that has no result.

use futures_util::future::join_all;

use super::guard::{RepeatGuard, repeated_envelope};
use super::limit::Action;
use super::state::AgentState;
use crate::message::Message;
use crate::policy::Pinned;
use crate::protocol::{Event, NoticeLevel};
use crate::tool_vocab::{Envelope, ErrorCode};
use crate::tools::Executed;

/// A tool call as the response gave it.
pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) arguments: String,
}

/// What the turn counts across its rounds.
pub(super) struct Counters {
    /// Calls run (or refused) this turn, against `max_tool_turns`.
    pub(super) executed: u32,
    /// Calls the guard refused this turn: a second refusal means the model is looping.
    pub(super) refusals: u32,
    pub(super) guard: RepeatGuard,
    pub(super) guard_noticed: bool,
}

/// What judging a call decided.
enum Step {
    /// Answered without running (skipped, refused, blocked).
    Done(Executed),
    /// To run: the call (as hooks left it), its arguments as judged, the place pinned.
    Run {
        call: Call,
        judged: String,
        pinned: Option<Pinned>,
        last: bool,
    },
}

/// The round of `calls`, planned by `plan`; `cut_off`: the response was cut inside its
/// last call; `surplus`: calls past the limit left out after the last.
pub(super) async fn run(
    st: &mut AgentState,
    calls: &[Call],
    plan: Vec<Action>,
    (limit, cut_off, surplus): (u32, bool, usize),
    n: &mut Counters,
) {
    let last = calls.len().saturating_sub(1);
    let together = calls.len() > 1
        && !cut_off
        && calls.iter().zip(&plan).all(|(c, a)| {
            *a != Action::Skip
                && st
                    .registry()
                    .get(&c.name)
                    .and_then(|t| t.meta())
                    .is_some_and(|m| m.concurrent)
        });
    if !together {
        for (i, (c, action)) in calls.iter().zip(plan).enumerate() {
            started(st, c);
            let more = if i == last { surplus } else { 0 };
            let done = match judge(st, c, action, (limit, cut_off && i == last, more), n).await {
                Step::Done(done) => done,
                Step::Run {
                    call,
                    judged,
                    pinned,
                    last,
                } => {
                    let done = run_call(st, &call, &judged, false, pinned.as_ref()).await;
                    complete(st, &call, &judged, pinned.as_ref(), (done, last, limit), n).await
                }
            };
            finish(st, c, done);
        }
        return;
    }
    let mut steps = Vec::with_capacity(calls.len());
    for (c, action) in calls.iter().zip(plan) {
        started(st, c);
        steps.push(judge(st, c, action, (limit, false, 0), n).await);
    }
    let ran = {
        let shared: &AgentState = st;
        join_all(steps.into_iter().map(|step| async move {
            match step {
                Step::Run {
                    call,
                    judged,
                    pinned,
                    last,
                } => {
                    let done = run_shared(shared, &call, pinned.as_ref()).await;
                    Ran::Ran(call, judged, pinned, last, done)
                }
                Step::Done(done) => Ran::Done(done),
            }
        }))
        .await
    };
    st.absorb_spent();
    for (c, ran) in calls.iter().zip(ran) {
        let done = match ran {
            Ran::Ran(call, judged, pinned, last, done) => {
                complete(st, &call, &judged, pinned.as_ref(), (done, last, limit), n).await
            }
            Ran::Done(done) => done,
        };
        finish(st, c, done);
    }
}

/// A call of a concurrent round once the round ran: answered without running, or run
/// (the call, its judged arguments, its pinned place, whether it reached the limit, what
/// it returned).
enum Ran {
    Done(Executed),
    Ran(Call, String, Option<Pinned>, bool, Executed),
}

fn started(st: &AgentState, c: &Call) {
    st.emit(Event::ToolCallStarted {
        id: c.id.clone(),
        name: c.name.clone(),
        arguments: c.arguments.clone(),
    });
}

/// Judges call `c` (`cut_off`: cut by the output limit; `more`: calls left out after it).
async fn judge(
    st: &mut AgentState,
    c: &Call,
    action: Action,
    (limit, cut_off, more): (u32, bool, usize),
    n: &mut Counters,
) -> Step {
    if cut_off {
        // The output limit cut the response inside its last call: never run it.
        return Step::Done(cut_off_call(&c.arguments));
    }
    if action == Action::Skip {
        return Step::Done(skipped(limit, more));
    }
    if !n.guard.allow(&c.name, &c.arguments) {
        n.refusals += 1;
        if !n.guard_noticed {
            n.guard_noticed = true;
            st.notice(
                NoticeLevel::Warning,
                format!(
                    "{} was asked for again with the same arguments; not run again (max_identical_calls = {})",
                    c.name,
                    n.guard.max()
                ),
            );
        }
        // A refused repeat still counts against the limit: loops end.
        n.executed += 1;
        let mut done = repeated(&c.name, n.guard.max());
        if action == Action::ExecuteLast {
            done.envelope.mark_limit(limit);
        }
        return Step::Done(done);
    }
    // PreToolUse hooks first: they may block the call or change its input (judged below
    // like any input), never widen what the rules allow.
    let pre = super::hooks::pre_tool(st, &c.id, &c.name, &c.arguments).await;
    if let Some(why) = pre.blocked {
        n.executed += 1;
        return Step::Done(super::approval::refused_by_hook(&c.name, &why));
    }
    let call = Call {
        id: c.id.clone(),
        name: c.name.clone(),
        arguments: pre.arguments.unwrap_or_else(|| c.arguments.clone()),
    };
    // What the tool will get (aliases read as the real names) is what is judged.
    let judged = st.registry().judged_arguments(&call.name, &call.arguments);
    let hook = pre.permission.map(|(p, _)| p);
    match super::approval::gate(st, &call.id, &call.name, &judged, hook).await {
        Ok(pinned) => Step::Run {
            call,
            judged,
            pinned,
            last: action == Action::ExecuteLast,
        },
        Err(mut done) => {
            // A refused call counts against the limit too: loops end.
            n.executed += 1;
            if action == Action::ExecuteLast {
                done.envelope.mark_limit(limit);
            }
            Step::Done(done)
        }
    }
}

/// After a call ran: run again outside the sandbox when it was denied there and the user
/// agrees, count it, mark the limit, PostToolUse hooks and the result's caps.
async fn complete(
    st: &mut AgentState,
    c: &Call,
    judged: &str,
    pinned: Option<&Pinned>,
    (mut done, last, limit): (Executed, bool, u32),
    n: &mut Counters,
) -> Executed {
    if let Some(why) = done.envelope.sandbox_denial() {
        let denied = done;
        done = match super::approval::outside_sandbox(st, &c.id, &c.name, judged, denied, &why).await {
            None => run_call(st, c, judged, true, pinned).await,
            Some(refused) => refused,
        };
    }
    n.executed += 1;
    if last {
        done.envelope.mark_limit(limit);
    }
    super::hooks::post_tool(st, &c.id, &c.name, &c.arguments, &mut done).await;
    super::context::after_tool(st, &mut done);
    done
}

/// Reports call `c` done and appends its result.
fn finish(st: &mut AgentState, c: &Call, done: Executed) {
    let output = done.envelope.to_string();
    let plan = (done.success && c.name == crate::tools::update_plan::NAME)
        .then(|| crate::tools::update_plan::steps(&c.arguments))
        .flatten();
    st.emit(Event::ToolCallFinished {
        id: c.id.clone(),
        summary: done.summary.clone(),
        output: output.clone(),
        success: done.success,
    });
    st.append(
        Message::tool_result(&c.id, &c.name, done.summary, output, done.success).with_images(done.images),
    );
    if let Some(steps) = plan {
        st.emit(Event::PlanUpdated { steps });
    }
}

/// Runs call `c` (`outside`: with its processes started, and its built-in writes made,
/// outside the sandbox, after the user approved that). What the command prints is kept outside the call: if the turn is
/// cancelled, `AgentState::interrupt` puts it in the call's result. A file tool acts on
/// `pinned`, the place its decision judged (run again outside the sandbox too: the place
/// the question named).
async fn run_call(
    st: &mut AgentState,
    c: &Call,
    judged: &str,
    outside: bool,
    pinned: Option<&Pinned>,
) -> Executed {
    // What the call is about to change (by the arguments as the tool reads them, at the
    // place judged) is saved first, for /undo.
    super::undo::before_call(st, &c.name, judged, pinned).await;
    st.set_running_call(Some(c.id.clone()));
    let partial = st.tool_partial();
    let progress = progress_sink(st, &c.id);
    let live = super::live::LiveOutput::new(st, &c.id);
    // Outside the sandbox, the built-in file tools write unconfined too.
    let mut ctx = st.tool_ctx().clone();
    if outside {
        ctx.sandbox = None;
    }
    ctx.pinned = pinned.cloned();
    ctx.caller = Some(st.caller(&c.id));
    let call = live
        .sink()
        .scope(progress.scope(partial.scope(st.registry().execute_with_stderr(&c.name, &c.arguments, &ctx))));
    let (done, stderr) = if outside {
        crate::permissions::sandbox_in_force::unsandboxed(call).await
    } else {
        call.await
    };
    live.finish();
    st.set_running_call(None);
    st.absorb_spent();
    let _ = partial.take_text();
    stderr_of(st, c, stderr);
    done
}

/// Runs call `c` of a concurrent round beside the others: a tool that changes nothing
/// itself (`ToolMeta::concurrent`), so nothing is saved for /undo and no output is kept
/// for an interrupted result.
async fn run_shared(st: &AgentState, c: &Call, pinned: Option<&Pinned>) -> Executed {
    let progress = progress_sink(st, &c.id);
    let live = super::live::LiveOutput::new(st, &c.id);
    let mut ctx = st.tool_ctx().clone();
    ctx.pinned = pinned.cloned();
    ctx.caller = Some(st.caller(&c.id));
    let (done, stderr) = live
        .sink()
        .scope(progress.scope(st.registry().execute_with_stderr(&c.name, &c.arguments, &ctx)))
        .await;
    live.finish();
    stderr_of(st, c, stderr);
    done
}

fn stderr_of(st: &AgentState, c: &Call, stderr: Option<String>) {
    if let Some(text) = stderr {
        st.emit(Event::ToolStderr {
            id: c.id.clone(),
            text,
        });
    }
}

/// Where the running call's progress goes: a `ToolCallProgress` event for its line.
fn progress_sink(st: &AgentState, id: &str) -> crate::tools::progress::Sink {
    let events = st.events();
    let redactor = st.redactor();
    let id = id.to_string();
    crate::tools::progress::Sink::new(move |text| {
        let mut e = Event::ToolCallProgress { id: id.clone(), text };
        crate::redact::scrub_event(&redactor, &mut e);
        let _ = events.send(e);
    })
}

/// The result of a repeated call that was not run again.
fn repeated(name: &str, times: u32) -> Executed {
    Executed {
        images: Vec::new(),
        summary: "not run again: identical to an earlier call".to_string(),
        envelope: repeated_envelope(name, times),
        success: false,
    }
}

/// The result of a call the output token limit cut off: not run; the model is told.
fn cut_off_call(arguments: &str) -> Executed {
    Executed {
        images: Vec::new(),
        summary: "not executed: the response was cut off by the output token limit".to_string(),
        envelope: Envelope::failure(
            ErrorCode::InvalidParams,
            format!(
                "Not executed: your response was cut off by the output token limit \
                 (finish_reason: length) while writing this call, so its arguments are \
                 incomplete ({} bytes arrived). Write the call again, smaller.",
                arguments.len()
            ),
        ),
        success: false,
    }
}

/// The result of a call that was not run because the limit was reached; `more` calls of
/// the same response after it were left out, and it answers for them too.
fn skipped(limit: u32, more: usize) -> Executed {
    let message = if more == 0 {
        format!("Not executed: the tool call limit ({limit}) was reached.")
    } else {
        format!(
            "Not executed: the tool call limit ({limit}) was reached. The {more} call{} after this \
             one in your response {} not run either and {} not kept in the conversation.",
            if more == 1 { "" } else { "s" },
            if more == 1 { "was" } else { "were" },
            if more == 1 { "is" } else { "are" },
        )
    };
    let mut envelope = Envelope::failure(ErrorCode::LimitReached, message);
    envelope.mark_limit(limit);
    Executed {
        images: Vec::new(),
        summary: "not executed: tool call limit reached".to_string(),
        envelope,
        success: false,
    }
}
