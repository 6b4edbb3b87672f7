//! The TUI's state machine: agent events and keys in, transcript cells for the scrollback
//! and `Op`s for the agent out. No IO and no terminal: the event loop drives it and tests
//! feed it synthetic events.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::text::Line;

use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};

use super::TuiContext;
use super::cells::{self, Cell, ToolCell, ToolResult};
use super::commands::{self, Command};
use super::editor::{Edit, Editor};
use super::history::History;
use super::info;
use super::paste::Pastes;
use super::theme::Theme;

/// How long a second Ctrl+C has to exit.
pub const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

/// What the turn in flight is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    Waiting,
    /// Waiting to send attempt `attempt + 1` at `at`.
    Retrying {
        attempt: u32,
        at: Instant,
    },
    Streaming,
    Tool(String),
}

/// A turn in flight.
#[derive(Clone, Debug)]
pub struct Turn {
    pub started: Instant,
    pub phase: Phase,
    pub phase_since: Instant,
    pub cancelling: bool,
    pub error_shown: bool,
}

impl Turn {
    fn new(now: Instant) -> Self {
        Turn {
            started: now,
            phase: Phase::Waiting,
            phase_since: now,
            cancelling: false,
            error_shown: false,
        }
    }

    fn set_phase(&mut self, phase: Phase, now: Instant) {
        if self.phase != phase {
            self.phase = phase;
            self.phase_since = now;
        }
    }
}

/// The whole UI state.
pub struct App {
    pub theme: Theme,
    pub ctx: TuiContext,
    pub cwd_display: String,
    pub session_id: Option<String>,
    /// The provider in use (`/model PROVIDER/…` changes it); `model` is its model.
    pub provider: crate::provider::Spec,
    pub model: String,
    pub tokens: u64,
    /// Of the input tokens, those the vendor read from its prompt cache.
    pub cached: u64,
    /// USD the session cost so far, when any response had a price.
    pub cost: Option<f64>,
    /// Context window use of the last request, in percent.
    pub context_pct: Option<u32>,
    pub tool_calls: u32,
    pub turn: Option<Turn>,
    /// The answer streaming now (its finished lines go to the scrollback as they finish).
    pub(crate) answer: super::answer::Answer,
    /// The reasoning streaming now (finished lines go up as they finish, as the answer's).
    pub(crate) reasoning: super::answer::Answer,
    pub tools: Vec<ToolCell>,
    pub queued: VecDeque<String>,
    pub editor: Editor,
    pub pastes: Pastes,
    pub history: History,
    pub hint: Option<String>,
    inserts: Vec<Cell>,
    inserted_any: bool,
    sessions_seen: usize,
    /// The current session holds a message (so it is stored and can be resumed).
    session_used: bool,
    /// Sessions `/resume <Tab>` offers (id, title).
    sessions: Vec<(String, Option<String>)>,
    ctrl_c_at: Option<Instant>,
    pub(super) outbox: Vec<Op>,
    exit: bool,
    pub(super) dirty: bool,
    /// The approval question open now (see `approval.rs`).
    pub approval: Option<super::question::Pending>,
    /// The approval mode in force (shown in the status line; Shift+Tab cycles it).
    pub mode: crate::policy::Mode,
    /// The model's plan (`update_plan`), pinned above the input while a turn runs.
    pub plan: Vec<crate::protocol::PlanStep>,
    /// The user's and the trusted project's commands (`/review`).
    pub(crate) custom: crate::ui::custom_commands::CustomCommands,
}

impl App {
    pub fn new(ctx: TuiContext, theme: Theme, history: History, cwd_display: String) -> Self {
        let model = ctx.provider.model.clone();
        let provider = ctx.provider.clone();
        let mut app = App {
            theme,
            cwd_display,
            session_id: None,
            provider,
            model,
            tokens: 0,
            cached: 0,
            cost: None,
            context_pct: None,
            tool_calls: 0,
            turn: None,
            answer: Default::default(),
            reasoning: super::answer::Answer::reasoning(),
            tools: Vec::new(),
            queued: VecDeque::new(),
            editor: Editor::new(),
            pastes: Pastes::default(),
            history,
            hint: None,
            inserts: Vec::new(),
            inserted_any: false,
            sessions_seen: 0,
            session_used: false,
            sessions: Vec::new(),
            ctrl_c_at: None,
            outbox: Vec::new(),
            exit: false,
            dirty: true,
            approval: None,
            mode: ctx.config.approval.unwrap_or(crate::policy::Mode::Ask),
            plan: Vec::new(),
            custom: Default::default(),
            ctx,
        };
        let welcome = info::welcome(&app.theme, &app.ctx, &app.model, &app.cwd_display);
        app.inserts.push(Cell::Lines(welcome));
        app
    }

    /// Offers these custom commands; `notices` say what was not loaded.
    pub(crate) fn set_custom_commands(
        &mut self,
        custom: crate::ui::custom_commands::CustomCommands,
        notices: Vec<String>,
    ) {
        self.custom = custom;
        for text in notices {
            self.push(Cell::Notice(NoticeLevel::Warning, text));
        }
    }

    /// The line shown after exit: how to come back to this session (none when nothing was
    /// said in it). Ids are random, so 8 characters tell them apart.
    pub fn resume_hint(&self) -> Option<String> {
        let id = self.session_id.as_deref().filter(|_| self.session_used)?;
        Some(format!("resume with: ikigai --resume {}", short_id(id)))
    }

    pub fn busy(&self) -> bool {
        self.turn.is_some()
    }

    pub fn should_exit(&self) -> bool {
        self.exit
    }

    /// True when something changed since the last `mark_drawn`.
    pub fn dirty(&self) -> bool {
        self.dirty
    }

    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    pub fn mark_drawn(&mut self) {
        self.dirty = false;
    }

    /// True while a spinner is on screen (so the loop must tick).
    pub fn animating(&self) -> bool {
        self.busy()
    }

    /// `Op`s to send to the agent, in order.
    pub fn take_ops(&mut self) -> Vec<Op> {
        std::mem::take(&mut self.outbox)
    }

    /// Finished cells for the scrollback, rendered at `width`, with blank lines between.
    pub fn take_scrollback(&mut self, width: usize) -> Vec<Line<'static>> {
        let look = cells::Look {
            theme: &self.theme,
            result_lines: self.ctx.config.tool_result_lines,
            spinner: "● ",
        };
        for live in [&mut self.reasoning, &mut self.answer] {
            if let Some(rows) = live.commit_rows(width, &self.theme) {
                self.inserts.push(rows.into());
            }
        }
        let mut out = Vec::new();
        for cell in std::mem::take(&mut self.inserts) {
            if self.inserted_any && !cell.continues() {
                out.push(Line::default());
            }
            self.inserted_any = true;
            out.extend(cell.lines(width, &look));
        }
        out
    }

    pub fn has_scrollback(&self) -> bool {
        !self.inserts.is_empty()
    }

    /// Whether anything was put in the scrollback yet (for the live area's top gap).
    pub fn inserted_any(&self) -> bool {
        self.inserted_any
    }

    fn push(&mut self, cell: Cell) {
        self.inserts.push(cell);
        self.dirty = true;
    }

    fn flush_live(&mut self) {
        if let Some(rest) = self.reasoning.finish() {
            self.push(rest.into());
        }
        if let Some(rest) = self.answer.finish() {
            self.push(rest.into());
        }
    }

    /// Moves finished tool cells at the front of the running list to the scrollback.
    fn flush_tools(&mut self) {
        while self
            .tools
            .first()
            .is_some_and(|t| t.result.is_some() || t.interrupted)
        {
            let t = self.tools.remove(0);
            self.push(Cell::Tool(t));
        }
    }

    /// Applies one agent event.
    pub fn on_agent_event(&mut self, ev: Event, now: Instant) {
        self.dirty = true;
        match ev {
            Event::SessionStarted {
                id,
                model,
                history,
                tokens,
                cost,
                interrupted,
            } => {
                self.sessions_seen += 1;
                self.plan.clear();
                self.model = model;
                self.tokens = tokens;
                self.cost = cost;
                let short = id.as_deref().map(short_id).unwrap_or_default();
                if !history.is_empty() {
                    self.flush_live();
                    let n = history
                        .iter()
                        .filter(|m| m.kind != crate::message::Kind::System)
                        .count();
                    self.push(Cell::Notice(
                        NoticeLevel::Info,
                        format!("Resumed session {short} ({n} messages)"),
                    ));
                    for cell in cells::from_history(&history, &interrupted) {
                        if let Cell::Plan(steps) = &cell {
                            self.plan.clone_from(steps);
                        }
                        self.push(cell);
                    }
                } else if self.sessions_seen > 1 && id != self.session_id {
                    self.push(Cell::Notice(NoticeLevel::Info, format!("New session {short}")));
                }
                self.session_used = !history.is_empty();
                self.session_id = id;
            }
            Event::ModelChanged { model, provider } => {
                if provider != self.provider.name {
                    let env = crate::provider::env_key;
                    match crate::provider::spec_for(&self.ctx.config, &provider, Some(&model), &env) {
                        Ok(spec) => self.provider = spec,
                        Err(_) => self.provider.name = provider,
                    }
                }
                self.model = model;
            }
            Event::Providers { providers } => {
                self.push(Cell::Lines(info::providers(&providers, &self.theme)))
            }
            Event::TurnStarted => {
                if self.turn.is_none() {
                    self.turn = Some(Turn::new(now));
                }
                self.tool_calls = 0;
            }
            Event::TextDelta { text } => {
                if let Some(rest) = self.reasoning.finish() {
                    self.push(rest.into());
                }
                self.answer.push(&text);
                self.phase(Phase::Streaming, now);
            }
            Event::ReasoningDelta { text } => {
                self.reasoning.push(&text);
                self.phase(Phase::Streaming, now);
            }
            Event::ToolCallStarted { id, name, arguments } => {
                self.flush_live();
                self.tool_calls += 1;
                self.phase(Phase::Tool(name.clone()), now);
                self.tools.push(ToolCell::started(id, name, &arguments));
            }
            Event::ToolCallFinished {
                id,
                summary,
                output,
                success,
            } => {
                let result = ToolResult::from_envelope(&summary, &output, success);
                match self.tools.iter_mut().find(|t| t.id == id && t.result.is_none()) {
                    Some(t) => t.set_result(result),
                    None => self.tools.push(ToolCell {
                        id: id.clone(),
                        name: String::new(),
                        call: format!("tool call {id}"),
                        result: Some(result),
                        interrupted: false,
                        preview: Vec::new(),
                        progress: None,
                        live: Default::default(),
                    }),
                }
                self.flush_tools();
                self.phase(Phase::Waiting, now);
            }
            Event::Usage {
                input,
                output,
                cached,
                context_pct,
                cost,
            } => {
                self.tokens += input + output;
                self.cached += cached;
                if let Some(c) = cost {
                    self.cost = Some(self.cost.unwrap_or(0.0) + c);
                }
                self.context_pct = context_pct.or(self.context_pct);
            }
            Event::Compacted { before, after } => {
                self.flush_live();
                self.push(Cell::Notice(
                    NoticeLevel::Info,
                    crate::ui::compacted_text(before, after),
                ));
            }
            Event::ToolCallProgress { id, text } => {
                if let Some(t) = self.tools.iter_mut().find(|t| t.id == id && t.result.is_none()) {
                    t.progress = Some(text);
                }
            }
            Event::SubAgent { id, event, .. } => self.on_sub_agent(&id, *event),
            // A tool's stderr is for scripted --verbose runs; the TUI keeps the screen clean.
            Event::ToolStderr { .. } => {}
            Event::ToolOutputDelta { id, text, .. } => {
                if let Some(t) = self.tools.iter_mut().find(|t| t.id == id && t.result.is_none()) {
                    t.live.push(&text);
                }
            }
            // One dim line per hook run.
            Event::Hook { line, .. } => {
                self.flush_live();
                self.push(Cell::Notice(NoticeLevel::Info, line));
            }
            Event::PlanUpdated { steps } => {
                self.push(Cell::Plan(steps.clone()));
                self.plan = steps;
            }
            Event::Retrying {
                attempt,
                in_secs,
                reason,
            } => {
                // Counted down once a second: one notice, then the status line.
                let phase = self.turn.as_ref().map(|t| &t.phase);
                if !matches!(phase, Some(Phase::Retrying { attempt: a, .. }) if *a == attempt) {
                    self.flush_live();
                    let text = format!("{reason}; retrying in {in_secs:.1}s (attempt {attempt})");
                    self.push(Cell::Notice(NoticeLevel::Warning, text));
                }
                let at = now + Duration::from_secs_f64(in_secs.clamp(0.0, 3600.0));
                self.phase(Phase::Retrying { attempt, at }, now);
            }
            Event::Notice { level, text } => {
                self.flush_live();
                if level == NoticeLevel::Error
                    && let Some(t) = &mut self.turn
                {
                    t.error_shown = true;
                }
                self.push(Cell::Notice(level, text));
            }
            Event::TurnEnded { reason } => self.end_turn(reason, now),
            Event::ApprovalRequested {
                id,
                name,
                arguments,
                reason,
                always,
                outside_sandbox,
            } => self.on_approval_requested(super::question::Pending::new(
                id,
                name,
                arguments,
                reason,
                always,
                outside_sandbox,
            )),
            Event::ApprovalMode { mode } => self.mode = mode,
            // Stored with the call and shown by `ikigai export`; the call's result says it.
            Event::Permission(_) => {}
            Event::Permissions {
                mode,
                rules,
                remembered,
                session,
            } => {
                let text = crate::ui::permissions_cmd::format_list(mode, &rules, &remembered, &session);
                self.push(Cell::Notice(NoticeLevel::Info, text.trim_end().to_string()));
            }
            // The agent took the message (a turn that could not start, for want of a
            // key, stores nothing): the session exists now, and `/resume <Tab>` may
            // offer it. The text is shown as it was sent; its attachments follow it.
            Event::UserMessage { attachments, .. } => {
                self.session_used = true;
                if let Some(id) = &self.session_id
                    && !self.sessions.iter().any(|(k, _)| k == id)
                {
                    self.sessions.insert(0, (id.clone(), None));
                }
                for a in attachments {
                    self.push(Cell::Attached(a));
                }
            }
            Event::Spend { models, cost } => {
                let text = crate::ui::cost::format_spend(&models, cost);
                self.push(Cell::Notice(NoticeLevel::Info, text.trim_end().to_string()));
            }
            Event::Sessions { sessions } => {
                let home = crate::environ::var("HOME");
                let table = crate::ui::sessions::format_sessions(&sessions, home.as_deref(), &chrono::Local);
                self.push(Cell::Notice(NoticeLevel::Info, table.trim_end().to_string()));
            }
            Event::UndoRefused { turns, files } => {
                // Asked: the answer is in the input, Enter confirms, clearing it declines.
                let ask = self.editor.is_empty();
                let text = crate::checkpoints::undo::refused_text(turns, &files, ask);
                self.push(Cell::Notice(NoticeLevel::Warning, text));
                if ask {
                    self.editor
                        .set_text(&crate::checkpoints::undo::force_command(turns));
                }
            }
        }
    }

    fn phase(&mut self, phase: Phase, now: Instant) {
        if let Some(t) = &mut self.turn {
            t.set_phase(phase, now);
        }
    }

    fn end_turn(&mut self, reason: TurnEndReason, now: Instant) {
        self.approval = None;
        self.flush_live();
        for t in &mut self.tools {
            if t.result.is_none() {
                t.interrupted = true;
            }
        }
        self.flush_tools();
        let error_shown = self.turn.as_ref().is_some_and(|t| t.error_shown);
        match reason {
            TurnEndReason::Done => {}
            TurnEndReason::Interrupted => self.push(cells::interrupted_marker()),
            // The agent's notice already named the limit.
            TurnEndReason::Limit => {}
            TurnEndReason::Error if !error_shown => self.push(Cell::Notice(
                NoticeLevel::Error,
                "the turn ended with an error".into(),
            )),
            TurnEndReason::Error => {}
        }
        self.turn = None;
        self.hint = None;
        if reason == TurnEndReason::Interrupted && !self.queued.is_empty() {
            // An interrupt is a change of plan: what was queued goes back to the input
            // box (before anything typed since), to send or edit, not out at once.
            let mut text: Vec<String> = self.queued.drain(..).collect();
            if !self.editor.is_empty() {
                text.push(self.editor.take());
            }
            self.editor.set_text(&text.join("\n"));
        } else if let Some(next) = self.queued.pop_front() {
            self.send(next, now);
        }
    }

    fn send(&mut self, text: String, now: Instant) {
        self.push(Cell::User(text.clone()));
        self.outbox.push(Op::Submit(text));
        self.turn = Some(Turn::new(now));
        self.tool_calls = 0;
    }

    /// Applies a terminal event (key, paste, resize).
    pub fn on_terminal_event(&mut self, ev: crossterm::event::Event, now: Instant) {
        use crossterm::event::Event as T;
        match ev {
            T::Key(k) if k.kind != KeyEventKind::Release => self.on_key(k, now),
            T::Paste(text) => {
                self.pastes.insert(&mut self.editor, &text);
                self.dirty = true;
            }
            T::Resize(..) | T::FocusGained => self.dirty = true,
            _ => {}
        }
    }

    /// Applies one key press.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant) {
        self.dirty = true;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let is_ctrl_c = ctrl && key.code == KeyCode::Char('c');
        if !is_ctrl_c {
            self.ctrl_c_at = None;
        }
        if self.approval_key(key) {
            return;
        }
        match key.code {
            KeyCode::BackTab => self.cycle_mode(),
            KeyCode::Char('c') if ctrl => self.ctrl_c(now),
            KeyCode::Esc => {
                if self.busy() {
                    self.cancel();
                } else {
                    self.hint = None;
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.quit();
                } else {
                    self.editor.delete_forward();
                }
            }
            KeyCode::Enter if key.modifiers.is_empty() => self.submit(now),
            KeyCode::Tab => self.complete(),
            _ => match self.editor.handle_key(key) {
                Edit::UpAtTop => {
                    let current = self.editor.text().to_string();
                    if let Some(prev) = self.history.older(&current).map(str::to_string) {
                        self.editor.set_text(&prev);
                    }
                }
                Edit::DownAtBottom => {
                    if let Some(next) = self.history.newer().map(str::to_string) {
                        self.editor.set_text(&next);
                    }
                }
                Edit::Changed => self.hint = None,
                Edit::Ignored => {}
            },
        }
    }

    fn ctrl_c(&mut self, now: Instant) {
        if self.busy() {
            self.cancel();
            return;
        }
        if !self.editor.is_empty() {
            self.editor.take();
            self.pastes.clear();
            self.history.reset();
            return;
        }
        match self.ctrl_c_at {
            Some(t) if now.duration_since(t) <= DOUBLE_CTRL_C => self.quit(),
            _ => {
                self.ctrl_c_at = Some(now);
                self.hint = Some("Press Ctrl+C again to exit".into());
            }
        }
    }

    fn cancel(&mut self) {
        if let Some(t) = &mut self.turn
            && !t.cancelling
        {
            t.cancelling = true;
            self.outbox.push(Op::Cancel);
        }
    }

    /// Leaves the REPL (the loop sends `Op::Shutdown`).
    pub fn quit(&mut self) {
        self.exit = true;
    }

    /// Stored sessions for `/resume <Tab>`: the store's list once it has answered, plus
    /// the sessions started here.
    fn known_sessions(&mut self) -> &[(String, Option<String>)] {
        if let Some(rx) = &mut self.ctx.sessions
            && let Ok(list) = rx.try_recv()
        {
            self.ctx.sessions = None;
            for (id, title) in list {
                if !self.sessions.iter().any(|(k, _)| *k == id) {
                    self.sessions.push((id, title));
                }
            }
        }
        &self.sessions
    }

    fn complete(&mut self) {
        let text = self.editor.text().to_string();
        let cursor = self.editor.cursor();
        let cwd = self.ctx.cwd.clone();
        let sessions = self.known_sessions().to_vec();
        let providers = crate::provider::names(&self.ctx.config);
        let found = super::complete::model_provider(&text, cursor, &providers)
            .or_else(|| super::complete::complete(&text, cursor, &cwd, &sessions, &self.custom));
        match found {
            Some(c) => {
                self.editor.replace_range(c.range, &c.insert);
                self.hint = (!c.candidates.is_empty()).then(|| c.candidates.join("  "));
            }
            None => self.hint = None,
        }
    }

    fn submit(&mut self, now: Instant) {
        if self.editor.text().trim().is_empty() {
            return;
        }
        let text = self.pastes.expand(&self.editor.take());
        self.history.push(&crate::redact::global().scrub(&text));
        self.hint = None;
        // A custom command sends its body (a built-in of the same name always wins).
        let parsed = commands::parse(&text);
        if matches!(parsed, Some(Command::Unknown { .. }))
            && let Some(body) = self.custom.expand(&text)
        {
            let body = match body {
                Ok(body) => body,
                Err(why) => {
                    self.push(Cell::Notice(NoticeLevel::Error, why));
                    return;
                }
            };
            if self.busy() {
                self.queued.push_back(body);
            } else {
                self.send(body, now);
            }
            return;
        }
        match parsed {
            None => {
                let text = match text.trim_start().strip_prefix("//") {
                    Some(rest) => format!("/{rest}"),
                    None => text,
                };
                if self.busy() {
                    self.queued.push_back(text);
                } else {
                    self.send(text, now);
                }
            }
            Some(cmd) => self.command(cmd, &text),
        }
    }

    fn command(&mut self, cmd: Command, text: &str) {
        // Every command is echoed like a message, then answered below it.
        if cmd != Command::Exit {
            self.push(Cell::User(text.trim().to_string()));
        }
        match cmd {
            Command::Help => {
                for cell in info::help(&self.custom) {
                    self.push(cell);
                }
            }
            Command::Exit => self.quit(),
            Command::Tools => self.push(Cell::Lines(info::tools(&self.ctx.registry, &self.theme))),
            Command::Tool(name) => self.push(info::tool(&self.ctx.registry, name.as_deref(), &self.theme)),
            Command::Config => self.push(info::config(&self.ctx.config, &self.provider, &self.model)),
            Command::Mcp(name) => {
                let registry = &self.ctx.registry;
                let cell = match name {
                    None => Cell::Notice(
                        NoticeLevel::Info,
                        crate::ui::mcp::live(registry).trim_end().to_string(),
                    ),
                    Some(n) => match crate::ui::mcp::live_server(registry, &n) {
                        Some(text) => Cell::Notice(NoticeLevel::Info, text.trim_end().to_string()),
                        None => {
                            Cell::Notice(NoticeLevel::Error, format!("no MCP server named `{n}`; see /mcp"))
                        }
                    },
                };
                self.push(cell);
            }
            Command::Agent(op) => {
                // `/refresh` reads the command folders again too.
                if op == Op::RefreshTools {
                    let (custom, notices) = crate::ui::custom_commands::CustomCommands::load(&self.ctx.cwd);
                    self.set_custom_commands(custom, notices);
                }
                self.outbox.push(op)
            }
            Command::Usage(usage) => self.push(Cell::Notice(NoticeLevel::Error, usage)),
            Command::Unknown { name, suggestion } => {
                let tip = match suggestion {
                    Some(s) => format!(" Did you mean {s}?"),
                    None => " Type /help for the list.".to_string(),
                };
                self.push(Cell::Notice(
                    NoticeLevel::Error,
                    format!("Unknown command {name}.{tip}"),
                ));
            }
        }
    }
}

/// The first 8 characters of a session id.
pub fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}
