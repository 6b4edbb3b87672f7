//! The agent task's state: the authoritative conversation, the session it is recorded in,
//! and the channels out. Every message goes through `append`, so memory and store agree.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;
use crate::message::{Conversation, Message};
use crate::protocol::{Event, NoticeLevel};
use crate::provider::Provider;
use crate::store::{Record, SessionMeta, Sessions};
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
    /// The context window and the request estimate (see `budget.rs`).
    pub budget: super::budget::Budget,
}

/// A fresh random session id (random, so short prefixes are unique).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl AgentState {
    pub fn emit(&self, event: Event) {
        // A front end that went away is not the agent's problem.
        let _ = self.events.send(event);
    }

    pub fn notice(&self, level: NoticeLevel, text: impl Into<String>) {
        self.emit(Event::notice(level, text));
    }

    /// Queues a record for the current session, beginning the session first if needed.
    pub fn record(&mut self, record: Record) {
        let Some(sessions) = &self.sessions else { return };
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

    pub fn marker(&mut self, kind: &str, data: serde_json::Value) {
        self.record(Record::Marker {
            kind: kind.to_string(),
            data,
        });
    }

    /// Appends to the conversation and records it.
    pub fn append(&mut self, m: Message) {
        self.record(Record::Message(m.clone()));
        self.conversation.push(m);
    }

    /// Appends the streamed assistant text, if any.
    pub fn flush_partial(&mut self) {
        if !self.partial.is_empty() {
            let text = std::mem::take(&mut self.partial);
            self.append(Message::assistant(text));
        }
    }

    /// After a cancelled turn: keep what arrived, answer every unanswered tool call.
    pub fn interrupt(&mut self) {
        self.flush_partial();
        for m in self.conversation.repair_orphans() {
            self.record(Record::Message(m));
        }
        self.marker("interrupted", json!({}));
    }
}
