//! The agent task's state: the authoritative conversation, the session it is recorded in,
//! and the channels out. Every message goes through `append`, so memory and store agree.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;
use crate::message::{Conversation, Message, interrupted_result_with};
use crate::protocol::{Event, History, NoticeLevel};
use crate::provider::Provider;
use crate::redact::{self, Redactor};
use crate::store::{MarkerKind, Record, SessionMeta, Sessions};
use crate::tools::partial::Partial;
use crate::tools::{Registry, ToolContext, ToolSchema};

pub struct AgentState {
    pub config: Config,
    pub model: String,
    pub provider: Arc<dyn Provider>,
    pub registry: Registry,
    pub schemas: Vec<ToolSchema>,
    pub tool_ctx: ToolContext,
    pub system_prompt: String,
    pub conversation: Conversation,
    pub cwd: PathBuf,
    pub sessions: Option<Arc<dyn Sessions>>,
    pub session_id: String,
    /// Whether the session row was queued yet (sessions begin at their first record).
    pub session_begun: bool,
    pub events: UnboundedSender<Event>,
    /// Assistant text of the response streaming now, not yet appended.
    pub partial: String,
    pub usage: (u64, u64),
    /// Hides configured secrets in every event and record (built from the config).
    pub redactor: Arc<Redactor>,
    /// Streamed text not shown yet because it may be the start of a secret.
    pub held: String,
    /// The context window and the request estimate (see `budget.rs`).
    pub budget: super::budget::Budget,
    /// The tool call running now (its id) and what its command printed so far, for the
    /// result of a call that is interrupted.
    pub running_call: Option<String>,
    pub tool_partial: Partial,
    /// The conversation while a front end may still hold it from `SessionStarted`
    /// (`conversation` is empty meanwhile); taken back by `reclaim_history`.
    pub shown: Option<History>,
    /// The approval mode in force (changed by the command loop while a turn runs).
    pub mode: crate::permissions::mode::SharedMode,
    /// The rules in force (config, remembered and session answers).
    pub policy: crate::permissions::Policy,
    /// Answers to approval questions, forwarded by the command loop.
    pub approvals: tokio::sync::mpsc::UnboundedReceiver<(String, crate::protocol::Answer)>,
    /// Where "always" answers are kept for this project (`None`: no data folder).
    pub remembered: Option<crate::permissions::remembered::Remembered>,
}

/// A fresh random session id (random, so short prefixes are unique).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl AgentState {
    pub fn emit(&self, mut event: Event) {
        redact::scrub_event(&self.redactor, &mut event);
        // A front end that went away is not the agent's problem.
        let _ = self.events.send(event);
    }

    /// Streams assistant text: kept for the answer, shown except a tail that may be the
    /// start of a secret (shown by `flush_partial` or the next delta).
    pub fn stream_text(&mut self, text: &str) {
        self.partial.push_str(text);
        self.held.push_str(text);
        self.redactor.scrub_in_place(&mut self.held);
        let keep = self.redactor.hold_back(&self.held);
        let cut = self.held.len() - keep;
        if cut > 0 {
            let rest = self.held.split_off(cut);
            let shown = std::mem::replace(&mut self.held, rest);
            self.emit(Event::TextDelta { text: shown });
        }
    }

    /// Shows the text `stream_text` held back.
    fn release_held(&mut self) {
        if !self.held.is_empty() {
            let text = std::mem::take(&mut self.held);
            self.emit(Event::TextDelta { text });
        }
    }

    pub fn notice(&self, level: NoticeLevel, text: impl Into<String>) {
        self.emit(Event::notice(level, text));
    }

    /// Queues a record for the current session, beginning the session first if needed.
    pub fn record(&mut self, mut record: Record) {
        let Some(sessions) = &self.sessions else { return };
        match &mut record {
            Record::Message(m) => redact::scrub_message(&self.redactor, m),
            Record::Marker { data, .. } => self.redactor.scrub_json(data),
        }
        if !self.session_begun {
            sessions.begin(SessionMeta {
                id: self.session_id.clone(),
                cwd: self.cwd.display().to_string(),
                provider: self.provider.name().to_string(),
                model: self.model.clone(),
            });
            self.session_begun = true;
        }
        sessions.record(&self.session_id, record);
        self.budget.records += 1;
    }

    pub fn marker(&mut self, kind: MarkerKind, data: serde_json::Value) {
        self.record(Record::Marker { kind, data });
    }

    /// Makes another session current: `id` (stored already when `begun`), its conversation
    /// and the tokens it used so far. Clears what belonged to the previous one; returns
    /// the previous session's id. Emits nothing (the caller announces the session).
    pub fn switch_session(
        &mut self,
        id: String,
        begun: bool,
        conversation: Conversation,
        usage: (u64, u64),
    ) -> String {
        self.session_begun = begun;
        self.conversation = conversation;
        self.partial.clear();
        self.held.clear();
        self.usage = usage;
        self.budget.reset_sizes();
        self.budget.records = 0;
        std::mem::replace(&mut self.session_id, id)
    }

    /// Tells the front ends which session is current, with its history and tokens so far.
    pub fn announce_session(&self, history: Vec<Message>) {
        self.announce_session_marked(history.into(), Vec::new());
    }

    /// Announces the current conversation as a resumed session's history (with its
    /// interrupted turns), shared with the front ends rather than copied: `conversation`
    /// stays empty until `reclaim_history` takes it back, before the next op uses it.
    pub fn announce_conversation(&mut self, interrupted: Vec<usize>) {
        let shared = History::from(std::mem::take(&mut self.conversation.messages));
        self.announce_session_marked(shared.clone(), interrupted);
        self.shown = Some(shared);
    }

    /// Takes the conversation back after `announce_conversation`: without a copy once
    /// the front ends are done with it (the plain one is before its first prompt).
    pub fn reclaim_history(&mut self) {
        if let Some(shown) = self.shown.take() {
            self.conversation.messages = shown.into_vec();
        }
    }

    /// `announce_session` for a history with its interrupted turns.
    pub fn announce_session_marked(&self, history: History, interrupted: Vec<usize>) {
        self.emit(Event::SessionStarted {
            id: self.sessions.as_ref().map(|_| self.session_id.clone()),
            model: self.model.clone(),
            history,
            tokens: self.usage.0.saturating_add(self.usage.1),
            interrupted,
        });
    }

    /// Appends to the conversation and records it.
    pub fn append(&mut self, mut m: Message) {
        // Scrubbed before it is kept or sent: the provider never gets a secret back.
        redact::scrub_message(&self.redactor, &mut m);
        self.record(Record::Message(m.clone()));
        self.conversation.push(m);
    }

    /// Appends the streamed assistant text, if any.
    pub fn flush_partial(&mut self) {
        self.release_held();
        if !self.partial.is_empty() {
            let text = std::mem::take(&mut self.partial);
            self.append(Message::assistant(text));
        }
    }

    /// After a cancelled turn: keep what arrived, answer every unanswered tool call (the
    /// one that was running with what it printed so far).
    pub fn interrupt(&mut self) {
        self.flush_partial();
        let running = self.running_call.take();
        let printed = self.tool_partial.take_text();
        for c in self.conversation.orphan_tool_calls() {
            let partial = printed
                .as_deref()
                .filter(|_| running.as_deref() == Some(c.id.as_str()));
            let m = interrupted_result_with(&c.id, &c.function.name, partial);
            // Scrubbed like every message: the partial output may hold a secret.
            self.append(m);
            let Some(m) = self.conversation.messages.last() else {
                continue;
            };
            // Front ends close the call they showed with this result line.
            if let Some(r) = m.as_tool_result() {
                self.emit(Event::ToolCallFinished {
                    id: r.tool_call_id.clone(),
                    summary: m.content.clone(),
                    output: r.output.clone(),
                    success: false,
                });
            }
        }
        self.marker(MarkerKind::Interrupted, json!({}));
    }
}
