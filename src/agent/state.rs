//! The agent task's state, in four groups with one owner each: the session and its store
//! (where records go, and how many went), the transcript (the authoritative conversation
//! and what is streaming into it), the budget (the window and the estimate), and the
//! runtime (settings, provider and model, tools, the channel out). Fields are private:
//! the other agent modules go through these methods, so every message passes `append`
//! and memory and store agree. Sends no request and runs no tool.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

use super::budget::Budget;
use crate::config::Config;
use crate::message::{Conversation, Message};
use crate::protocol::{Event, History, NoticeLevel};
use crate::provider::Provider;
use crate::redact::{self, Redactor};
use crate::store::{MarkerKind, Record, SessionMeta, Sessions};
use crate::tools::partial::Partial;
use crate::tools::{Registry, ToolContext};

/// The session the conversation is recorded in.
struct Session {
    /// `None` runs without persistence.
    store: Option<Arc<dyn Sessions>>,
    id: String,
    /// Whether the session row was queued yet (sessions begin at their first record).
    begun: bool,
    /// Records queued for this session so far (the position of the next one).
    records: i64,
    cwd: PathBuf,
}

/// The conversation in memory and what streams into it.
struct Transcript {
    conversation: Conversation,
    /// Assistant text of the response streaming now, not yet appended.
    partial: String,
    /// Streamed text not shown yet because it may be the start of a secret.
    held: String,
    /// The conversation while a front end may still hold it from `SessionStarted`
    /// (`conversation` is empty meanwhile); taken back by `reclaim_history`.
    shown: Option<History>,
    /// Input and output tokens used in this session.
    usage: (u64, u64),
    /// Tokens and cost per model in this session.
    spend: crate::spend::Spend,
    /// The tool call running now (its id) and what its command printed so far, for the
    /// result of a call that is interrupted.
    running_call: Option<String>,
    tool_partial: Partial,
    /// Tokens the running calls spent on models of their own (sub-agents), not yet
    /// counted (`absorb_spent`).
    spent: Arc<std::sync::Mutex<Vec<crate::tools::caller::Spent>>>,
}

/// The permission gate's state.
pub(crate) struct Gatekeeping {
    /// The approval mode in force (changed by the command loop while a turn runs).
    pub(crate) mode: crate::policy::mode::SharedMode,
    /// The rules in force (config, remembered and session answers).
    pub(crate) policy: crate::permissions::Policy,
    /// Answers to approval questions, forwarded by the command loop.
    pub(crate) approvals: tokio::sync::mpsc::UnboundedReceiver<(String, crate::protocol::Answer)>,
    /// Where "always" answers are kept for this project (`None`: no data folder).
    pub(crate) remembered: Option<crate::permissions::remembered::Remembered>,
    /// A running call's questions put to this session's approver (a sub-agent's), by the
    /// id asked with: the command loop sends their answers here instead of `approvals`.
    pub(crate) forwarded: Forwarded,
}

/// Questions of running calls waiting for the approver's answer, by id.
pub(crate) type Forwarded = Arc<
    std::sync::Mutex<
        std::collections::HashMap<String, tokio::sync::oneshot::Sender<crate::protocol::Answer>>,
    >,
>;

/// What runs the turns.
struct Runtime {
    config: Config,
    provider: Arc<dyn Provider>,
    /// The model asked for (the one place it is kept; `/model` changes it).
    model: String,
    registry: Registry,
    tool_ctx: ToolContext,
    system_prompt: String,
    /// Where the session runs and its date (`provider::Request::environment`).
    environment: String,
    /// The instruction files the system prompt carries, for `/memory`.
    instructions: Vec<String>,
    /// The skills loaded at start (`$NAME` in a prompt, `/skills`).
    skills: Arc<crate::skills::Skills>,
    events: UnboundedSender<Event>,
    /// Hides configured secrets in every event and record (built from the config).
    redactor: Arc<Redactor>,
}

/// The agent task's state; see the module comment.
pub struct AgentState {
    session: Session,
    transcript: Transcript,
    budget: Budget,
    runtime: Runtime,
    /// What decides whether a call may run (public to the agent: `approval.rs` drives it).
    pub(crate) gate: Gatekeeping,
    /// What the session's turns changed, for `/undo` (driven by `undo.rs`).
    pub(crate) checkpoints: crate::checkpoints::Checkpoints,
    /// Whether the tree is followed between turns (`AgentSetup::follow_tree`).
    pub(crate) follow_tree: bool,
    /// The server's answer about its window, while in flight (driven by `window.rs`).
    pub(crate) probe: super::probe::Probe,
    /// What SessionStart hooks said, sent with the next prompt (`hooks.rs`).
    pub(crate) hook_context: Vec<String>,
}

/// A fresh random session id (random, so short prefixes are unique).
pub(crate) fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl AgentState {
    /// A new, empty session on `provider`'s model.
    pub(super) fn new(setup: super::AgentSetup, events: UnboundedSender<Event>, gate: Gatekeeping) -> Self {
        let key_vars = crate::provider::key_vars(&setup.config);
        let redactor = Arc::new(setup.config.redactor(&key_vars));
        let model = setup.provider.spec().model.clone();
        let mut budget = Budget::from_config(&setup.config, setup.provider.spec(), &model);
        budget.set_fixed(
            &format!("{}{}", setup.system_prompt, setup.environment),
            &setup.registry.schemas(),
        );
        // Checkpoints are stored with the session: a run that keeps no session keeps none.
        let limit = setup.config.checkpoint_limit_mb.saturating_mul(1_000_000);
        let checkpoints = match setup.sessions {
            // Followed from the end of the first turn (`undo::finish_turn`) when more turns
            // may follow, not from the start: a one-shot `-p` turn pays for no snapshot it
            // does not use.
            Some(_) => crate::checkpoints::Checkpoints::for_user(setup.cwd.clone(), limit),
            None => crate::checkpoints::Checkpoints::new(setup.cwd.clone(), None, limit),
        };
        AgentState {
            session: Session {
                store: setup.sessions,
                id: new_session_id(),
                begun: false,
                records: 0,
                cwd: setup.cwd.clone(),
            },
            transcript: Transcript {
                conversation: Conversation::new(),
                partial: String::new(),
                held: String::new(),
                shown: None,
                usage: (0, 0),
                spend: Default::default(),
                running_call: None,
                tool_partial: Partial::default(),
                spent: Arc::default(),
            },
            budget,
            runtime: Runtime {
                // The built-in file tools write under the sandbox tool processes get.
                tool_ctx: ToolContext::from_config(setup.cwd, &setup.config, key_vars)
                    .with_sandbox(crate::permissions::sandbox_in_force::sandbox())
                    .with_unreadable(crate::permissions::unreadable::Unreadable::of(&gate.policy))
                    // A front end may serve the file tools' text (an editor's buffers).
                    .with_files(setup.registry.files()),
                config: setup.config,
                provider: setup.provider,
                model,
                registry: setup.registry,
                system_prompt: setup.system_prompt,
                environment: setup.environment,
                instructions: setup.instructions,
                skills: setup.skills,
                events,
                redactor,
            },
            gate,
            checkpoints,
            follow_tree: setup.follow_tree,
            probe: Default::default(),
            hook_context: Vec::new(),
        }
    }

    // The runtime.

    pub fn config(&self) -> &Config {
        &self.runtime.config
    }

    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.runtime.provider
    }

    /// The model every request asks for.
    pub fn model(&self) -> &str {
        &self.runtime.model
    }

    /// Uses `model` of the current provider (whose own configured window is `window`, 0
    /// when unknown) from the next request on; the budget follows its window.
    pub fn set_model(&mut self, model: String, window: u64) {
        self.probe.forget();
        self.budget
            .provider_changed(&self.runtime.config, self.runtime.provider.spec(), window, &model);
        self.runtime.model = model;
    }

    /// Makes `provider` current (the caller sets its model).
    pub fn set_provider(&mut self, provider: Arc<dyn Provider>) {
        self.runtime.provider = provider;
    }

    pub fn registry(&self) -> &Registry {
        &self.runtime.registry
    }

    pub fn tool_ctx(&self) -> &ToolContext {
        &self.runtime.tool_ctx
    }

    /// The image types tools may hand the model (none when it takes no images).
    pub fn set_tool_images(&mut self, images: &'static [&'static str]) {
        self.runtime.tool_ctx.images = images;
    }

    /// Caps what one tool result may take (the budget sizes it to the window).
    pub fn set_tool_cap(&mut self, bytes: usize) {
        self.runtime.tool_ctx.max_output_size = bytes;
    }

    /// The instruction files the system prompt carries (`/memory`), one line each.
    pub fn instructions(&self) -> &[String] {
        &self.runtime.instructions
    }

    /// The skills loaded at start.
    pub(crate) fn skills(&self) -> &crate::skills::Skills {
        &self.runtime.skills
    }

    pub fn system_prompt(&self) -> &str {
        &self.runtime.system_prompt
    }

    /// Where the session runs and its date (`provider::Request::environment`); empty for none.
    pub fn environment(&self) -> &str {
        &self.runtime.environment
    }

    /// The channel to the front ends (for tasks that report later).
    pub fn events(&self) -> UnboundedSender<Event> {
        self.runtime.events.clone()
    }

    /// What hides secrets in events (for tasks that report later).
    pub fn redactor(&self) -> Arc<Redactor> {
        self.runtime.redactor.clone()
    }

    pub fn emit(&self, mut event: Event) {
        redact::scrub_event(&self.runtime.redactor, &mut event);
        // A front end that went away is not the agent's problem.
        let _ = self.runtime.events.send(event);
    }

    pub fn notice(&self, level: NoticeLevel, text: impl Into<String>) {
        self.emit(Event::notice(level, text));
    }

    // The budget.

    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    pub fn budget_mut(&mut self) -> &mut Budget {
        &mut self.budget
    }

    /// Brings the budget's per-message sizes in line with the conversation.
    pub fn sync_budget(&mut self) {
        self.budget.sync(&self.transcript.conversation.messages);
    }

    // The session.

    /// The store, when sessions are kept.
    pub fn store(&self) -> Option<&Arc<dyn Sessions>> {
        self.session.store.as_ref()
    }

    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    pub fn cwd(&self) -> &Path {
        &self.session.cwd
    }

    /// Records queued for the current session (the position of the next one).
    pub fn records(&self) -> i64 {
        self.session.records
    }

    /// A resumed session already holds `n` records.
    pub fn set_records(&mut self, n: i64) {
        self.session.records = n;
    }

    /// Queues a record for the current session, beginning the session first if needed.
    pub fn record(&mut self, mut record: Record) {
        let Some(store) = &self.session.store else { return };
        match &mut record {
            Record::Message(m) => redact::scrub_message(&self.runtime.redactor, m),
            Record::Marker { data, .. } => self.runtime.redactor.scrub_json(data),
        }
        if !self.session.begun {
            store.begin(SessionMeta {
                id: self.session.id.clone(),
                cwd: self.session.cwd.display().to_string(),
                provider: self.runtime.provider.name().to_string(),
                model: self.runtime.model.clone(),
                // A sub-agent's store sets it (`agent::task`).
                parent: None,
            });
            self.session.begun = true;
        }
        store.record(&self.session.id, record);
        self.session.records += 1;
    }

    pub fn marker(&mut self, kind: MarkerKind, data: serde_json::Value) {
        self.record(Record::Marker { kind, data });
    }

    /// Makes another session current: `id` (stored already when `begun`, with `records`
    /// records), its conversation and the tokens it used so far. Clears what belonged to
    /// the previous one; returns the previous session's id. Emits nothing (the caller
    /// announces the session).
    pub fn switch_session(
        &mut self,
        id: String,
        begun: bool,
        records: i64,
        conversation: Conversation,
        usage: (u64, u64),
    ) -> String {
        self.session.begun = begun;
        self.session.records = records;
        let t = &mut self.transcript;
        t.conversation = conversation;
        t.partial.clear();
        t.held.clear();
        t.usage = usage;
        t.spend = Default::default();
        self.budget.reset_sizes();
        std::mem::replace(&mut self.session.id, id)
    }

    // The transcript.

    pub fn messages(&self) -> &[Message] {
        &self.transcript.conversation.messages
    }

    pub fn conversation(&self) -> &Conversation {
        &self.transcript.conversation
    }

    /// Adds a response's reported tokens to the session's, with their cost when the model
    /// has a price; returns that cost.
    pub fn add_usage(&mut self, input: u64, cached: u64, output: u64) -> Option<f64> {
        self.transcript.usage.0 += input;
        self.transcript.usage.1 += output;
        let model = self.runtime.model.clone();
        let cost = self
            .provider()
            .spec()
            .pricing
            .price(&model)
            .map(|p| p.cost(input, cached, output));
        self.transcript.spend.add(&model, input, cached, output, cost);
        cost
    }

    /// Where call `call_id` stands (for a tool that needs its session, like `task`): the
    /// tokens it reports are shown at once (a `Usage` event without a window share) and
    /// counted by the next `absorb_spent`; its questions go to this session's front end,
    /// their answers back through `Gatekeeping::forwarded`.
    pub(crate) fn caller(&self, call_id: &str) -> crate::tools::caller::Caller {
        let events = self.events();
        let pending = self.transcript.spent.clone();
        let session = self.session.store.as_ref().map(|_| self.session.id.clone());
        let (asked, forwarded, redactor) = (self.events(), self.gate.forwarded.clone(), self.redactor());
        let (reports, reports_redactor) = (self.events(), self.redactor());
        let ask = move |mut question: Event| {
            let Event::ApprovalRequested { id, .. } = &question else {
                return None;
            };
            let (tx, rx) = tokio::sync::oneshot::channel();
            forwarded.lock().ok()?.insert(id.clone(), tx);
            redact::scrub_event(&redactor, &mut question);
            let _ = asked.send(question);
            Some(rx)
        };
        crate::tools::caller::Caller::new(session, call_id.to_string(), move |s| {
            let _ = events.send(Event::Usage {
                input: s.input,
                output: s.output,
                cached: s.cached,
                context_pct: None,
                cost: s.cost,
            });
            if let Ok(mut p) = pending.lock() {
                p.push(s);
            }
        })
        .with_ask(ask)
        .with_report(move |mut event| {
            redact::scrub_event(&reports_redactor, &mut event);
            let _ = reports.send(event);
        })
    }

    /// Counts what calls spent on models of their own as the session's (tokens, spend per
    /// model, a stored `usage` marker naming the sub-agent's session): after each call,
    /// and after a cancelled one.
    pub(crate) fn absorb_spent(&mut self) {
        let spent = match self.transcript.spent.lock() {
            Ok(mut p) => std::mem::take(&mut *p),
            Err(_) => return,
        };
        for s in spent {
            self.transcript.usage.0 += s.input;
            self.transcript.usage.1 += s.output;
            self.transcript
                .spend
                .add(&s.model, s.input, s.cached, s.output, s.cost);
            let mut data = json!({"input": s.input, "output": s.output, "model": s.model});
            if s.cached > 0 {
                data["cached"] = json!(s.cached);
            }
            if let Some(c) = s.cost {
                data["cost"] = json!(c);
            }
            if let Some(id) = s.session {
                data["subagent"] = json!(id);
            }
            self.marker(MarkerKind::Usage, data);
        }
    }

    /// Tokens and cost per model in this session.
    pub fn spend(&self) -> &crate::spend::Spend {
        &self.transcript.spend
    }

    /// The spend of a resumed session (after `switch_session`).
    pub fn set_spend(&mut self, spend: crate::spend::Spend) {
        self.transcript.spend = spend;
    }

    /// The tool call running now (`None` once it finished).
    pub fn set_running_call(&mut self, id: Option<String>) {
        self.transcript.running_call = id;
    }

    /// Where the running call's command output is kept while it runs.
    pub fn tool_partial(&self) -> Partial {
        self.transcript.tool_partial.clone()
    }

    /// Streams assistant text: kept for the answer, shown except a tail that may be the
    /// start of a secret (shown by `flush_partial` or the next delta).
    pub fn stream_text(&mut self, text: &str) {
        let t = &mut self.transcript;
        t.partial.push_str(text);
        t.held.push_str(text);
        self.runtime.redactor.scrub_in_place(&mut t.held);
        let keep = self.runtime.redactor.hold_back(&t.held);
        let cut = t.held.len() - keep;
        if cut > 0 {
            let rest = t.held.split_off(cut);
            let shown = std::mem::replace(&mut t.held, rest);
            self.emit(Event::TextDelta { text: shown });
        }
    }

    /// Shows the text `stream_text` held back.
    fn release_held(&mut self) {
        if !self.transcript.held.is_empty() {
            let text = std::mem::take(&mut self.transcript.held);
            self.emit(Event::TextDelta { text });
        }
    }

    /// Appends to the conversation and records it.
    pub fn append(&mut self, mut m: Message) {
        // Scrubbed before it is kept or sent: the provider never gets a secret back.
        redact::scrub_message(&self.runtime.redactor, &mut m);
        self.record(Record::Message(m.clone()));
        self.transcript.conversation.push(m);
    }

    /// Appends the streamed assistant text, if any.
    pub fn flush_partial(&mut self) {
        self.release_held();
        if !self.transcript.partial.is_empty() {
            let text = std::mem::take(&mut self.transcript.partial);
            self.append(Message::assistant(text));
        }
    }

    /// Records `compaction` and makes it stand for the messages before `from` in memory.
    pub fn install_compaction(&mut self, compaction: Message, from: usize) {
        self.record(Record::Message(compaction.clone()));
        let messages = &mut self.transcript.conversation.messages;
        let tail = messages.split_off(from);
        *messages = Vec::with_capacity(tail.len() + 1);
        messages.push(compaction);
        messages.extend(tail);
        self.budget.reset_sizes();
        self.sync_budget();
    }

    /// Tells the front ends which session is current, with its history and tokens so far.
    pub fn announce_session(&self, history: Vec<Message>) {
        self.announce_session_marked(history.into(), Vec::new());
    }

    /// Announces the current conversation as a resumed session's history (with its
    /// interrupted turns), shared with the front ends rather than copied: `conversation`
    /// stays empty until `reclaim_history` takes it back, before the next op uses it.
    pub fn announce_conversation(&mut self, interrupted: Vec<usize>) {
        let shared = History::from(std::mem::take(&mut self.transcript.conversation.messages));
        self.announce_session_marked(shared.clone(), interrupted);
        self.transcript.shown = Some(shared);
    }

    /// Takes the conversation back after `announce_conversation`: without a copy once
    /// the front ends are done with it (the plain one is before its first prompt).
    pub fn reclaim_history(&mut self) {
        if let Some(shown) = self.transcript.shown.take() {
            self.transcript.conversation.messages = shown.into_vec();
        }
    }

    /// `announce_session` for a history with its interrupted turns.
    fn announce_session_marked(&self, history: History, interrupted: Vec<usize>) {
        let (input, output) = self.transcript.usage;
        self.emit(Event::SessionStarted {
            id: self.session.store.as_ref().map(|_| self.session.id.clone()),
            model: self.runtime.model.clone(),
            history,
            tokens: input.saturating_add(output),
            cost: self.transcript.spend.cost(),
            interrupted,
        });
    }

    /// After a cancelled turn: keep what arrived, answer every unanswered tool call (the
    /// one that was running with what it printed so far).
    pub fn interrupt(&mut self) {
        self.absorb_spent();
        self.flush_partial();
        let running = self.transcript.running_call.take();
        let printed = self.transcript.tool_partial.take_text();
        for c in self.transcript.conversation.orphan_tool_calls() {
            let partial = printed
                .as_deref()
                .filter(|_| running.as_deref() == Some(c.id.as_str()));
            let m = crate::tool_vocab::envelope::interrupted_result(&c.id, &c.function.name, partial);
            // Scrubbed like every message: the partial output may hold a secret.
            self.append(m);
            let Some(m) = self.transcript.conversation.messages.last() else {
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
