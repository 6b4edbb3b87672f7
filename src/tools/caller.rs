//! Where the running call stands: the stored session it belongs to and its own id; where
//! a tool that runs a model of its own (the `task` tool's sub-agent) reports the tokens
//! that spent, so the session counts them as its own; and how such a tool puts its agent's
//! question to whoever answers the session's (the same approver, front end and rules).
//! The agent's turn sets one on each call's context; this is data and channels, no
//! accounting, no decision and no rendering.

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::protocol::{Answer, Event};

/// Puts an `ApprovalRequested` event to the session's approver; the answer comes on the
/// receiver (`None`: the event was no question).
type Ask = dyn Fn(Event) -> Option<oneshot::Receiver<Answer>> + Send + Sync;

/// Tokens a call spent on a model, as one response reported them.
#[derive(Clone, Debug, PartialEq)]
pub struct Spent {
    pub model: String,
    pub input: u64,
    /// The part of `input` read from the vendor's prompt cache.
    pub cached: u64,
    pub output: u64,
    /// USD, when the model has a price (never guessed).
    pub cost: Option<f64>,
    /// The session the tokens were spent in (a sub-agent's), when stored.
    pub session: Option<String>,
}

/// The calling session and call, for a tool that needs them.
#[derive(Clone)]
pub struct Caller {
    /// The session the call belongs to; `None` when the session is not stored.
    pub session_id: Option<String>,
    /// The call's id, as the model's response gave it.
    pub call_id: String,
    spent: Arc<dyn Fn(Spent) + Send + Sync>,
    ask: Option<Arc<Ask>>,
    report: Option<Arc<dyn Fn(Event) + Send + Sync>>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("session_id", &self.session_id)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl Caller {
    pub fn new(
        session_id: Option<String>,
        call_id: String,
        spent: impl Fn(Spent) + Send + Sync + 'static,
    ) -> Self {
        Caller {
            session_id,
            call_id,
            spent: Arc::new(spent),
            ask: None,
            report: None,
        }
    }

    /// This caller, showing the events the call reports with `report`.
    pub fn with_report(mut self, report: impl Fn(Event) + Send + Sync + 'static) -> Self {
        self.report = Some(Arc::new(report));
        self
    }

    /// Shows an event of the call's own agent (a `SubAgent` event) to the session's front
    /// ends.
    pub fn report(&self, event: Event) {
        if let Some(report) = &self.report {
            report(event)
        }
    }

    /// This caller, putting questions to the session's approver with `ask`.
    pub fn with_ask(
        mut self,
        ask: impl Fn(Event) -> Option<oneshot::Receiver<Answer>> + Send + Sync + 'static,
    ) -> Self {
        self.ask = Some(Arc::new(ask));
        self
    }

    /// Asks the session's approver `question` (an `ApprovalRequested` whose id is this
    /// call's); `Answer::Unattended` when nobody can answer.
    pub async fn ask(&self, question: Event) -> Answer {
        let Some(rx) = self.ask.as_ref().and_then(|ask| ask(question)) else {
            return Answer::Unattended;
        };
        rx.await.unwrap_or(Answer::Unattended)
    }

    /// Reports tokens the call spent; the session adds them to its totals.
    pub fn spent(&self, s: Spent) {
        (self.spent)(s)
    }
}
