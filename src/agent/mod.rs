//! The agent task: owns the conversation, runs turns, answers commands. Front ends talk to
//! it only through `Op` and `Event`; cancelling drops the turn in flight.

pub mod commands;
pub mod limit;
pub mod prompt;
pub mod resume;
pub mod retry;
pub mod state;
pub mod turn;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::message::Conversation;
use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};
use crate::provider::Provider;
use crate::store::Sessions;
use crate::tools::{Registry, ToolContext};
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
    /// A stored session to continue instead of a new one.
    pub resumed: Option<Resumed>,
}

/// The front end's side of a running agent.
pub struct AgentHandle {
    pub ops: UnboundedSender<Op>,
    pub task: JoinHandle<()>,
}

/// Starts the agent task; it reports on `events` until it receives `Op::Shutdown` or the
/// op channel closes. Its first event is `SessionStarted`.
pub fn spawn(setup: AgentSetup, events: UnboundedSender<Event>) -> AgentHandle {
    let (ops, rx) = unbounded_channel();
    let st = AgentState {
        model: setup.provider.spec().model.clone(),
        schemas: setup.registry.schemas(),
        tool_ctx: ToolContext {
            cwd: setup.cwd.clone(),
            max_output_size: setup.config.max_output_size,
            timeout: Duration::from_secs(setup.config.tool_timeout_secs),
        },
        config: setup.config,
        provider: setup.provider,
        registry: setup.registry,
        system_prompt: setup.system_prompt,
        conversation: Conversation::new(),
        cwd: setup.cwd,
        sessions: setup.sessions,
        session_id: state::new_session_id(),
        session_begun: false,
        events,
        partial: String::new(),
        usage: (0, 0),
    };
    let task = tokio::spawn(drive(st, setup.resumed, rx));
    AgentHandle { ops, task }
}

async fn drive(mut st: AgentState, resumed: Option<Resumed>, mut ops: UnboundedReceiver<Op>) {
    match resumed {
        Some(r) => resume::install(&mut st, r),
        None => st.emit(Event::SessionStarted {
            id: st.sessions.as_ref().map(|_| st.session_id.clone()),
            model: st.model.clone(),
            history: Vec::new(),
        }),
    }
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
        match op {
            Op::Submit(text) => {
                let events = st.events.clone();
                let outcome = {
                    let turn = turn::run(&mut st, text);
                    tokio::pin!(turn);
                    loop {
                        tokio::select! {
                            reason = &mut turn => break Some(reason),
                            op = ops.recv() => match op {
                                Some(Op::Cancel) => break None,
                                Some(Op::Submit(t)) => queued.push_back(t),
                                Some(Op::Command(c)) => {
                                    let _ = events.send(Event::notice(
                                        NoticeLevel::Warning,
                                        format!("{c}: wait until the current turn ends (or cancel it)"),
                                    ));
                                }
                                Some(Op::Shutdown) | None => {
                                    shutdown = true;
                                    break None;
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
                st.emit(Event::TurnEnded { reason });
            }
            Op::Cancel => {}
            Op::Command(line) => commands::handle(&mut st, &line).await,
            Op::Shutdown => shutdown = true,
        }
    }
    if let Some(store) = &st.sessions {
        store.flush().await;
    }
}
