//! The agent task: owns the conversation, runs turns, answers commands. Front ends talk to
//! it only through `Op` and `Event`; cancelling drops the turn in flight.

pub mod approval;
pub mod budget;
pub(crate) mod commands;
pub(crate) mod compact;
pub mod context;
pub(crate) mod elide;
pub(crate) mod guard;
pub(crate) mod hooks;
pub(crate) mod images;
pub(crate) mod instructions;
pub(crate) mod limit;
mod live;
pub(crate) mod mentions;
pub(crate) mod probe;
pub(crate) mod prompt;
pub mod resume;
pub(crate) mod retry;
mod round;
pub mod rules_cmd;
pub(crate) mod skill_use;
pub(crate) mod state;
pub(crate) mod switch;
pub(crate) mod task;
pub(crate) mod turn;
pub mod undo;
pub(crate) mod window;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};
use crate::provider::Provider;
use crate::store::Sessions;
use crate::tools::Registry;
pub use resume::Resumed;
use state::AgentState;

/// Which stored session to restore at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resume {
    /// An id or a unique prefix of one.
    Id(String),
    /// The newest session of the working directory.
    LatestInCwd,
}

/// Everything the agent task needs.
pub struct AgentSetup {
    pub config: Config,
    pub provider: Arc<dyn Provider>,
    pub registry: Registry,
    /// `None` runs without persistence.
    pub sessions: Option<Arc<dyn Sessions>>,
    pub cwd: PathBuf,
    pub system_prompt: String,
    /// Where the session runs and its date, sent beside the system prompt (see
    /// `provider::Request::environment`); empty for none.
    pub environment: String,
    /// The instruction files the system prompt carries, one line each in order (path,
    /// size, whose), for `/memory`.
    pub instructions: Vec<String>,
    /// The skills loaded at start (their listing is in the system prompt; the registry
    /// offers the `skill` tool when there are any): `$NAME` in a prompt sends one with it.
    pub skills: Arc<crate::skills::Skills>,
    /// The approval mode, shared with whoever must read it as it is now (the `task` tool
    /// runs a sub-agent in it); `None`: a new one from `config.approval`.
    pub mode: Option<crate::policy::mode::SharedMode>,
    /// A stored session to continue instead of a new one.
    pub resumed: Option<Resumed>,
    /// Follow the working tree between turns (checkpoints' tracker, from the first turn's
    /// end), so a later turn's first command waits only for what changed: worth it when
    /// more turns may follow (the TUI, piped prompts, an editor), not for one `-p` prompt
    /// (the process ends with its turn).
    pub follow_tree: bool,
}

/// The front end's side of a running agent.
pub struct AgentHandle {
    pub ops: UnboundedSender<Op>,
    pub task: JoinHandle<()>,
}

/// Starts the agent task; it reports on `events` until it receives `Op::Shutdown` or the
/// op channel closes. Its first event is `SessionStarted`.
pub fn spawn(mut setup: AgentSetup, events: UnboundedSender<Event>) -> AgentHandle {
    let (ops, rx) = unbounded_channel();
    let resumed = setup.resumed.take();
    let (approve_tx, approvals) = unbounded_channel();
    let mode = setup.mode.take().unwrap_or_else(|| {
        crate::policy::mode::SharedMode::new(setup.config.approval.unwrap_or(crate::policy::Mode::Auto))
    });
    let remembered = crate::permissions::remembered::Remembered::default_location(&setup.cwd).ok();
    let mut rules = setup.config.permissions.clone();
    if let Some(store) = &remembered {
        match store.rules() {
            Ok(r) => rules.allow.extend(r),
            Err(e) => {
                let _ = events.send(Event::notice(
                    NoticeLevel::Warning,
                    format!("remembered answers not used: {e}"),
                ));
            }
        }
    }
    let policy = crate::permissions::Policy::new(rules, &setup.cwd);
    let forwarded = state::Forwarded::default();
    let gatekeeping = state::Gatekeeping {
        mode: mode.clone(),
        policy,
        approvals,
        remembered,
        forwarded: forwarded.clone(),
    };
    let st = AgentState::new(setup, events, gatekeeping);
    // What the background tool discovery skipped or overrode, once it is done.
    let registry = st.registry().clone();
    let notices = st.events();
    tokio::spawn(async move {
        registry.discovered().await;
        for text in registry.take_notices() {
            let _ = notices.send(Event::notice(NoticeLevel::Warning, text));
        }
    });
    let task = tokio::spawn(drive(
        st,
        resumed,
        rx,
        Gate {
            approve_tx,
            mode,
            forwarded,
        },
    ));
    AgentHandle { ops, task }
}

/// What the command loop needs to answer approval ops while a turn runs.
struct Gate {
    approve_tx: UnboundedSender<(String, crate::protocol::Answer)>,
    mode: crate::policy::mode::SharedMode,
    /// Questions of running calls (sub-agents) put to this session's approver.
    forwarded: state::Forwarded,
}

impl Gate {
    /// Handles an approval op (at any time); `false` for any other op.
    fn handle(&self, op: &Op, events: &UnboundedSender<Event>) -> bool {
        match op {
            Op::Approve { id, answer } => {
                let waiting = self.forwarded.lock().ok().and_then(|mut f| f.remove(id));
                match waiting {
                    Some(tx) => {
                        let _ = tx.send(answer.clone());
                    }
                    None => {
                        let _ = self.approve_tx.send((id.clone(), answer.clone()));
                    }
                }
                true
            }
            Op::SetApprovalMode(m) => {
                self.mode.set(*m);
                let _ = events.send(Event::ApprovalMode { mode: *m });
                true
            }
            _ => false,
        }
    }
}

async fn drive(mut st: AgentState, resumed: Option<Resumed>, mut ops: UnboundedReceiver<Op>, gate: Gate) {
    let source = if resumed.is_some() { "resume" } else { "startup" };
    match resumed {
        Some(r) => resume::install(&mut st, r),
        None => st.announce_session(Vec::new()),
    }
    hooks::session_start(&mut st, source).await;
    let mut queued: VecDeque<String> = VecDeque::new();
    let mut shutdown = false;
    while !shutdown {
        let op = match queued.pop_front() {
            Some(text) => Op::Submit(text),
            None => match ops.recv().await {
                Some(op) => op,
                None => break,
            },
        };
        // A resumed history shown to the front ends is the conversation again.
        st.reclaim_history();
        match op {
            Op::Submit(text) => {
                let events = st.events();
                let outcome = {
                    let turn = turn::run(&mut st, text);
                    tokio::pin!(turn);
                    loop {
                        tokio::select! {
                            reason = &mut turn => break Some(reason),
                            op = ops.recv() => match op {
                                Some(Op::Cancel) => break None,
                                Some(op) if gate.handle(&op, &events) => {}
                                Some(Op::Submit(t)) => queued.push_back(t),
                                Some(Op::Shutdown) | None => {
                                    shutdown = true;
                                    break None;
                                }
                                Some(other) => {
                                    let _ = events.send(Event::notice(
                                        NoticeLevel::Warning,
                                        format!("{}: wait until the current turn ends (or cancel it)", commands::name(&other)),
                                    ));
                                }
                            },
                        }
                    }
                };
                let reason = match outcome {
                    Some(reason) => reason,
                    None => {
                        st.interrupt();
                        TurnEndReason::Interrupted
                    }
                };
                undo::finish_turn(&mut st).await;
                st.emit(Event::TurnEnded { reason });
            }
            Op::Cancel => {}
            Op::Shutdown => shutdown = true,
            op if gate.handle(&op, &st.events()) => {}
            other => commands::handle(&mut st, other).await,
        }
    }
    st.reclaim_history();
    hooks::notify(
        &mut st,
        crate::config::hooks::HookEvent::SessionEnd,
        serde_json::json!({"reason": "exit"}),
    )
    .await;
    if let Some(store) = st.store() {
        store.flush().await;
    }
}
