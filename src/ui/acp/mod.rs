//! `ikigai acp`: the Agent Client Protocol front end, for editors (Zed, JetBrains, Neovim).
//! Speaks JSON-RPC on stdin/stdout through the official SDK (`agent-client-protocol`), and
//! reaches the agent only through `Op` and `Event`, as the other front ends do: a prompt
//! is an `Op::Submit` whose events go to the editor as `session/update`s until the turn
//! ends; an approval question is a `session/request_permission` answered with
//! `Op::Approve`. When the editor offers its files (`fs/*`), the file tools read and write
//! them through the seam they take (`files.rs`). One agent serves the folder ikigai was started in, one session at a time
//! (`session/new` starts a fresh one, `session/load` continues a stored one). Nothing but
//! protocol messages goes to stdout: notices reach the editor as messages (warnings and
//! errors) or stderr (the rest).

mod commands;
mod files;
mod mcp;
mod options;
mod prompt;
mod replay;
mod updates;

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    AvailableCommandsUpdate, CancelNotification, ConfigOptionUpdate, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, SessionCapabilities, SessionId,
    SessionInfo, SessionListCapabilities, SessionMode, SessionModeState, SessionNotification, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{Agent, Client, Stdio};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::agent::AgentHandle;
use crate::policy::Mode;
use crate::protocol::{Event, NoticeLevel, Op};
use crate::store::Sessions;
use crate::tool_vocab::files::FileSeam;
use crate::ui::custom_commands::CustomCommands;

/// Why the ACP front end stopped.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The connection to the editor failed (not a closed stdin, which ends the run).
    /// Not retryable.
    #[error("the editor connection failed: {0}")]
    Connection(String),
}

/// What the front end knows besides events.
pub struct AcpContext {
    /// The folder the agent serves.
    pub cwd: PathBuf,
    /// The store, for `session/list`.
    pub sessions: Option<Arc<dyn Sessions>>,
    /// The approval mode at start.
    pub mode: Mode,
    /// The provider's key is missing: the editor is offered to authenticate, and told
    /// the variable to set.
    pub missing_key: Option<MissingKey>,
    /// Lets the editor's MCP servers join the session's (`session/new`, `session/load`).
    pub join_mcp: JoinMcp,
    /// The model at start, as `provider/model`.
    pub model: String,
    /// The models offered to choose from, as `provider/model`.
    pub models: Vec<String>,
    /// Where the editor's files go when it offers them (`fs/*`): the file tools read and
    /// write through it.
    pub files: FileSeam,
}

/// Makes the session's MCP servers the configured ones and these of the editor (as far
/// as trust lets them join); answers what the editor should be told.
pub type JoinMcp = Arc<
    dyn Fn(Vec<crate::config::mcp::ServerSpec>) -> futures_util::future::BoxFuture<'static, Vec<String>>
        + Send
        + Sync,
>;

/// A provider whose key is not set: its name and the variable it reads the key from
/// (never a key).
#[derive(Clone, Debug)]
pub struct MissingKey {
    pub provider: String,
    pub var: String,
}

/// The one authentication method offered: the key in the environment.
const AUTH_METHOD: &str = "api_key";

impl MissingKey {
    fn what(&self) -> String {
        format!(
            "ikigai reads the key for provider `{}` from {}: set it in the environment the \
             editor starts ikigai with (the agent server's `env`), then restart the agent; \
             or choose another provider in ikigai's settings",
            self.provider, self.var
        )
    }
}

/// The state the handlers share: the agent's side and the session in the editor.
pub(crate) struct Shared {
    ops: tokio::sync::mpsc::UnboundedSender<Op>,
    /// Held by whoever waits on the agent (a prompt, a load); events between them wait.
    events: tokio::sync::Mutex<UnboundedReceiver<Event>>,
    /// The session the editor has open, by ikigai's id.
    current: std::sync::Mutex<Option<String>>,
    /// The agent's first session has not been handed out (`session/new` takes it).
    fresh: std::sync::atomic::AtomicBool,
    mode: std::sync::Mutex<Mode>,
    /// Warnings not yet told to the editor (they are told at the next chance, once).
    untold: std::sync::Mutex<Vec<String>>,
    cwd: PathBuf,
    sessions: Option<Arc<dyn Sessions>>,
    /// The user's and a trusted project's custom commands (read again by `/refresh`).
    custom: std::sync::Mutex<CustomCommands>,
    missing_key: Option<MissingKey>,
    join: JoinMcp,
    /// The current model, as `provider/model`.
    model: std::sync::Mutex<String>,
    models: Vec<String>,
    files: FileSeam,
}

type Cx = agent_client_protocol::v1::ConnectionTo<Client>;

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Keeps a notice for the editor (warnings, errors) or writes it to stderr.
    pub(crate) fn notice(&self, level: NoticeLevel, text: &str) {
        match level {
            NoticeLevel::Info => eprintln!("ikigai: {text}"),
            _ => lock(&self.untold).push(text.to_string()),
        }
    }

    /// Tells the editor the notices kept so far, as agent messages of `session`.
    pub(crate) fn tell(&self, cx: &Cx, session: &str) {
        let untold = std::mem::take(&mut *lock(&self.untold));
        for text in untold {
            let update = updates::agent_text(&format!("{text}\n\n"));
            let _ = cx.send_notification(SessionNotification::new(session.to_string(), update));
        }
    }

    pub(crate) fn custom(&self) -> CustomCommands {
        lock(&self.custom).clone()
    }

    pub(crate) fn mode(&self) -> Mode {
        *lock(&self.mode)
    }

    /// Tells the editor the commands it may offer.
    fn tell_commands(&self, cx: &Cx, session: &str) {
        let list = commands::available(&lock(&self.custom));
        let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(list));
        let _ = cx.send_notification(SessionNotification::new(session.to_string(), update));
    }

    /// Reads the command folders again (`/refresh`) and tells the editor the new list.
    pub(crate) fn reload_commands(&self, cx: &Cx, session: &str) {
        let (custom, notices) = CustomCommands::load(&self.cwd);
        *lock(&self.custom) = custom;
        for text in notices {
            self.notice(NoticeLevel::Warning, &text);
        }
        self.tell(cx, session);
        self.tell_commands(cx, session);
    }

    /// Why a prompt cannot go out: the provider's key is missing.
    pub(crate) fn needs_key(&self) -> Option<agent_client_protocol::Error> {
        let m = self.missing_key.as_ref()?;
        Some(
            agent_client_protocol::Error::auth_required()
                .data(serde_json::json!({"message": format!("No API key: {}.", m.what())})),
        )
    }

    /// Waits for the agent's next `SessionStarted`; an error notice before it (a session
    /// that cannot be loaded) is the error. Other events are kept or dropped.
    async fn session_started(
        &self,
        events: &mut UnboundedReceiver<Event>,
    ) -> Result<(String, crate::protocol::History), String> {
        loop {
            match events.recv().await {
                None => return Err("the agent stopped".into()),
                Some(Event::SessionStarted {
                    id, history, model, ..
                }) => {
                    self.keep_model(&model);
                    return Ok((id.unwrap_or_else(|| "ikigai".into()), history));
                }
                Some(Event::Notice {
                    level: NoticeLevel::Error,
                    text,
                }) => return Err(text),
                Some(Event::Notice { level, text }) => self.notice(level, &text),
                Some(_) => {}
            }
        }
    }

    /// Consumes the agent's first session when nobody took it yet (a `session/load`
    /// replaces it).
    async fn skip_fresh(&self, events: &mut UnboundedReceiver<Event>) -> Result<(), String> {
        if self.fresh.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.session_started(events).await?;
        }
        Ok(())
    }

    /// The editor's MCP servers join the session (as far as the app lets them: trust);
    /// what is left out, and why, is told.
    async fn join_mcp(&self, servers: &[agent_client_protocol::v1::schema::McpServer]) {
        let (specs, refused) = mcp::specs(servers);
        for text in refused.into_iter().chain((self.join)(specs).await) {
            self.notice(NoticeLevel::Warning, &text);
        }
    }

    fn modes(&self) -> SessionModeState {
        let current = *lock(&self.mode);
        let modes = Mode::ALL
            .iter()
            .map(|m| {
                let (name, what) = options::mode_name(*m);
                SessionMode::new(m.as_str(), name).description(what.to_string())
            })
            .collect();
        SessionModeState::new(current.as_str(), modes)
    }

    /// The configuration options with their current values.
    fn options(&self) -> Vec<agent_client_protocol::v1::schema::SessionConfigOption> {
        options::all(&self.models, &lock(&self.model), self.mode())
    }

    /// Keeps track of the model from the agent's events.
    pub(crate) fn follow_model(&self, ev: &Event) {
        match ev {
            Event::ModelChanged { model, provider } => *lock(&self.model) = format!("{provider}/{model}"),
            Event::SessionStarted { model, .. } => self.keep_model(model),
            _ => {}
        }
    }

    /// The session's model changed, on the same provider.
    fn keep_model(&self, model: &str) {
        let mut cur = lock(&self.model);
        let provider = cur
            .split_once('/')
            .map(|(p, _)| p.to_string())
            .unwrap_or_default();
        *cur = format!("{provider}/{model}");
    }

    /// Tells the editor the options' current values.
    pub(crate) fn tell_options(&self, cx: &Cx, session: &str) {
        let update = SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(self.options()));
        let _ = cx.send_notification(SessionNotification::new(session.to_string(), update));
    }

    /// Switches the model (`provider/model`, one of those offered): `Op::SetModel`, then
    /// the mode set again to what it is, whose answer comes after the switch's.
    async fn set_model(&self, id: &str) -> Result<(), String> {
        if !self.models.iter().any(|m| m == id) && *lock(&self.model) != id {
            return Err(format!("{id} is not one of the models offered"));
        }
        let mut events = self.events.lock().await;
        let mode = self.mode();
        if self.ops.send(Op::SetModel(id.to_string())).is_err()
            || self.ops.send(Op::SetApprovalMode(mode)).is_err()
        {
            return Err("the agent stopped".into());
        }
        let mut failed = None;
        loop {
            match events.recv().await {
                None => return Err("the agent stopped".into()),
                Some(Event::ApprovalMode { .. }) => break,
                Some(Event::Notice {
                    level: NoticeLevel::Error,
                    text,
                }) => failed = Some(text),
                Some(Event::Notice { level, text }) => self.notice(level, &text),
                Some(ev) => self.follow_model(&ev),
            }
        }
        match failed {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    fn check_session(&self, id: &SessionId) -> Result<String, agent_client_protocol::Error> {
        match &*lock(&self.current) {
            Some(cur) if **cur == *id.0 => Ok(cur.clone()),
            _ => Err(agent_client_protocol::Error::invalid_params()
                .data(serde_json::json!({"message": format!("no open session {}", id.0)}))),
        }
    }
}

fn error(message: impl std::fmt::Display) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(-32603, message.to_string())
}

/// Serves the editor until it closes stdin; the agent is then shut down (the session
/// stored whole).
pub async fn run(
    agent: AgentHandle,
    events: UnboundedReceiver<Event>,
    ctx: AcpContext,
) -> Result<u8, AcpError> {
    let (custom, notices) = CustomCommands::load(&ctx.cwd);
    let shared = Arc::new(Shared {
        ops: agent.ops.clone(),
        events: tokio::sync::Mutex::new(events),
        current: std::sync::Mutex::new(None),
        fresh: std::sync::atomic::AtomicBool::new(true),
        mode: std::sync::Mutex::new(ctx.mode),
        untold: std::sync::Mutex::new(Vec::new()),
        cwd: ctx.cwd,
        sessions: ctx.sessions,
        custom: std::sync::Mutex::new(custom),
        missing_key: ctx.missing_key,
        join: ctx.join_mcp,
        model: std::sync::Mutex::new(ctx.model),
        models: ctx.models,
        files: ctx.files,
    });
    for text in notices {
        shared.notice(NoticeLevel::Warning, &text);
    }
    let s0b = shared.clone();
    let s8 = shared.clone();
    let (s0, s1, s2, s3, s4, s5, s6, s7) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
    );
    let result = Agent
        .v1()
        .name("ikigai")
        .on_receive_request(
            async move |req: InitializeRequest, responder, cx: Cx| {
                // The editor's files, when it offers them, are what the file tools read
                // and write (its unsaved buffers).
                s0.files
                    .set(files::EditorFiles::offered(cx, &s0, &req.client_capabilities.fs));
                // Offered only when the provider's key is missing: what it says is where
                // the key goes (never a key).
                let auth: Vec<AuthMethod> = s0
                    .missing_key
                    .iter()
                    .map(|m| {
                        AuthMethod::Agent(
                            AuthMethodAgent::new(AUTH_METHOD, format!("Set {}", m.var)).description(m.what()),
                        )
                    })
                    .collect();
                let caps = AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                    // The editor's Streamable HTTP servers join as its stdio ones do (not SSE).
                    .mcp_capabilities(agent_client_protocol::v1::schema::McpCapabilities::new().http(true))
                    .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()));
                responder.respond(
                    InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
                        .agent_capabilities(caps)
                        .auth_methods(auth)
                        .agent_info(Implementation::new("ikigai", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: AuthenticateRequest, responder, _cx: Cx| {
                if &*req.method_id.0 != AUTH_METHOD {
                    return responder.respond_with_error(agent_client_protocol::Error::invalid_params().data(
                        serde_json::json!({"message": format!("no authentication method {}", req.method_id.0)}),
                    ));
                }
                // The key is read from the environment at start; nothing here can set it.
                match s0b.needs_key() {
                    Some(e) => responder.respond_with_error(e),
                    None => responder.respond(AuthenticateResponse::new()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx: Cx| {
                let s = s1.clone();
                cx.clone().spawn(async move {
                    if let Err(e) = same_folder(&s.cwd, &req.cwd) {
                        return responder.respond_with_error(e);
                    }
                    s.join_mcp(&req.mcp_servers).await;
                    let mut events = s.events.lock().await;
                    let started = if s.fresh.swap(false, std::sync::atomic::Ordering::SeqCst) {
                        s.session_started(&mut events).await
                    } else {
                        let _ = s.ops.send(Op::NewSession);
                        s.session_started(&mut events).await
                    };
                    drop(events);
                    match started {
                        Ok((id, _)) => {
                            *lock(&s.current) = Some(id.clone());
                            responder.respond(NewSessionResponse::new(id.clone())
                                    .modes(s.modes())
                                    .config_options(s.options()))?;
                            s.tell(&cx, &id);
                            s.tell_commands(&cx, &id);
                            Ok(())
                        }
                        Err(e) => responder.respond_with_error(error(e)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: Cx| {
                let s = s2.clone();
                cx.clone().spawn(async move {
                    if let Err(e) = same_folder(&s.cwd, &req.cwd) {
                        return responder.respond_with_error(e);
                    }
                    s.join_mcp(&req.mcp_servers).await;
                    let mut events = s.events.lock().await;
                    let loaded = match s.skip_fresh(&mut events).await {
                        Ok(()) => {
                            let _ = s.ops.send(Op::Resume(req.session_id.0.to_string()));
                            s.session_started(&mut events).await
                        }
                        Err(e) => Err(e),
                    };
                    drop(events);
                    match loaded {
                        Ok((id, history)) => {
                            *lock(&s.current) = Some(id.clone());
                            for update in replay::updates(&history, &s.cwd) {
                                cx.send_notification(SessionNotification::new(id.clone(), update))?;
                            }
                            responder.respond(LoadSessionResponse::new().modes(s.modes()).config_options(s.options()))?;
                            s.tell(&cx, &id);
                            s.tell_commands(&cx, &id);
                            Ok(())
                        }
                        Err(e) => responder.respond_with_error(error(e)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, cx: Cx| {
                let s = s3.clone();
                cx.spawn(async move {
                    let Some(store) = s.sessions.clone() else {
                        return responder.respond(ListSessionsResponse::new(Vec::new()));
                    };
                    match store.list().await {
                        Ok(list) => {
                            let want = req.cwd.as_ref().map(|p| p.to_string_lossy().into_owned());
                            let sessions = list
                                .into_iter()
                                .filter(|i| want.as_ref().is_none_or(|w| *w == i.cwd))
                                .map(|i| {
                                    SessionInfo::new(i.id, PathBuf::from(i.cwd))
                                        .title(i.title)
                                        .updated_at(i.updated_at)
                                })
                                .collect();
                            responder.respond(ListSessionsResponse::new(sessions))
                        }
                        Err(e) => responder.respond_with_error(error(e)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, cx: Cx| {
                if let Err(e) = s4.check_session(&req.session_id) {
                    return responder.respond_with_error(e);
                }
                match Mode::parse(&req.mode_id.0) {
                    Ok(mode) => {
                        *lock(&s4.mode) = mode;
                        let _ = s4.ops.send(Op::SetApprovalMode(mode));
                        responder.respond(SetSessionModeResponse::new())?;
                        // Editors that show options instead of modes see the change too.
                        s4.tell_options(&cx, &req.session_id.0);
                        Ok(())
                    }
                    Err(e) => responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params()
                            .data(serde_json::json!({"message": e})),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest, responder, cx: Cx| {
                let s = s8.clone();
                if let Err(e) = s.check_session(&req.session_id) {
                    return responder.respond_with_error(e);
                }
                cx.spawn(async move {
                    let bad = |m: String| {
                        agent_client_protocol::Error::invalid_params().data(serde_json::json!({"message": m}))
                    };
                    let Some(value) = req.value.as_value_id().map(|v| v.0.to_string()) else {
                        return responder.respond_with_error(bad(format!("{} takes one of its values", req.config_id.0)));
                    };
                    let done = match &*req.config_id.0 {
                        options::MODEL => s.set_model(&value).await,
                        options::MODE => Mode::parse(&value).map(|mode| {
                            *lock(&s.mode) = mode;
                            let _ = s.ops.send(Op::SetApprovalMode(mode));
                        }),
                        other => Err(format!("no configuration option {other}")),
                    };
                    match done {
                        Ok(()) => responder.respond(SetSessionConfigOptionResponse::new(s.options())),
                        Err(why) => responder.respond_with_error(bad(why)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: Cx| {
                let s = s5.clone();
                let session = match s.check_session(&req.session_id) {
                    Ok(id) => id,
                    Err(e) => return responder.respond_with_error(e),
                };
                cx.clone().spawn(async move {
                    let result = prompt::run(&s, &cx, &session, req.prompt).await;
                    responder.respond_with_result(result)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx: Cx| {
                if s6.check_session(&n.session_id).is_ok() {
                    let _ = s6.ops.send(Op::Cancel);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await;
    // The editor is gone: the turn in flight stops, the session is stored, the agent ends.
    let _ = s7.ops.send(Op::Cancel);
    let _ = s7.ops.send(Op::Shutdown);
    let _ = agent.task.await;
    result
        .map(|()| 0)
        .map_err(|e| AcpError::Connection(e.to_string()))
}

/// The agent serves the folder it started in; a session elsewhere would run its tools,
/// rules and sandbox in the wrong place.
fn same_folder(ours: &std::path::Path, asked: &std::path::Path) -> Result<(), agent_client_protocol::Error> {
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if canon(ours) == canon(asked) {
        return Ok(());
    }
    Err(
        agent_client_protocol::Error::invalid_params().data(serde_json::json!({
            "message": format!(
                "ikigai acp serves the folder it was started in ({}), not {}: start it there",
                ours.display(),
                asked.display()
            )
        })),
    )
}
