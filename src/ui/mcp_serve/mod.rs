//! `ikigai mcp serve`: ikigai as an MCP server over stdio, on rmcp's server side. Its
//! tools: `ikigai` runs a prompt as a new session in a folder and returns the final
//! answer with the session's id; `ikigai_reply` continues a session by id. Each turn is
//! this binary run as `ikigai -p --json` (`turn.rs`): the same agent, trust, permissions,
//! sandbox and session store as any run, in the asked folder, with the server's approval
//! mode (read-only unless the user starts the server with another: nobody watches it).
//! Progress notifications while a turn runs; a cancelled request interrupts its turn.
//! In `ask` mode, when the client can ask its user (MCP elicitation), a call the turn's
//! permission engine (or, with `--tools`, a built-in call the engine) asks about becomes
//! an elicitation, and the user's answer goes back to the turn (`turn.rs`) or decides the
//! call; without it, the question is refused as nobody is there.
//! With `--tools`, ikigai's built-in tools are offered too (`builtin.rs`), decided by the
//! permission engine and run under the sandbox in the server's folder.
//! A front end: it imports the store (to find a session's folder), config, and for
//! `--tools` the permission engine and the tool registry; never the agent.

mod builtin;
pub mod http;
mod turn;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::task::TaskTracker;

use crate::config::Config;

pub use turn::{Approver, Step, TurnError, TurnOutcome, TurnRequest};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot find ikigai's own program: {0}")]
    Program(std::io::Error),
    #[error("the MCP connection failed: {0}")]
    Connection(String),
    /// `--http` names an address it may not serve on (the user's to fix).
    #[error("{0}")]
    Address(String),
}

/// The server's settings: which program a turn runs, with which options.
pub struct Serve {
    pub config: Config,
    /// The options every turn runs with (`--approval MODE`, `--provider`, …).
    pub args: Vec<String>,
    /// Where a turn runs when the call names no folder (and where the built-in tools act).
    pub cwd: PathBuf,
    /// The approval mode turns run in (`--mode`): in `ask`, questions go to the client's
    /// user when it can elicit.
    pub mode: crate::policy::Mode,
    /// Offer the built-in tools, decided in this approval mode (`--tools`).
    pub builtins: Option<crate::policy::Mode>,
    /// Serve Streamable HTTP on this loopback address instead of stdio (`--http`).
    pub http: Option<std::net::SocketAddr>,
}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub async fn run(serve: Serve) -> Result<u8, ServeError> {
    let program = std::env::current_exe().map_err(ServeError::Program)?;
    let turns = TaskTracker::new();
    let builtins = serve.builtins.map(|mode| {
        let (b, notices) = builtin::Builtins::new(&serve.config, &serve.cwd, mode);
        for text in notices {
            eprintln!("ikigai: {}", crate::text::visible(&text));
        }
        Arc::new(b)
    });
    let server = Server {
        builtins,
        program,
        serve: Arc::new(serve),
        folders: Arc::new(Mutex::new(HashMap::new())),
        turns: turns.clone(),
    };
    if let Some(addr) = server.serve.http {
        return http::serve(server, addr).await.map(|()| 0);
    }
    let running = server
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .map_err(|e| ServeError::Connection(e.to_string()));
    let ended = match running {
        Ok(r) => r
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| ServeError::Connection(e.to_string())),
        Err(e) => Err(e),
    };
    // A client that goes away cancels its calls: their turns end as Ctrl-C ends one
    // (what they did is stored) before the server exits.
    turns.close();
    turns.wait().await;
    ended.map(|()| 0)
}

#[derive(Clone)]
struct Server {
    /// The built-in tools, when offered.
    builtins: Option<Arc<builtin::Builtins>>,
    program: PathBuf,
    serve: Arc<Serve>,
    /// The folder of each session this server started (a reply runs there).
    folders: Arc<Mutex<HashMap<String, PathBuf>>>,
    /// The running turns, waited for before the server exits.
    turns: TaskTracker,
}

const RUN: &str = "ikigai";
const REPLY: &str = "ikigai_reply";

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    }
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            RUN,
            "Run a coding agent (ikigai) on a task in a project folder: it reads, searches and \
             (when the server allows) edits files and runs commands there, then answers. \
             Returns its final answer and the session id to continue with ikigai_reply.",
            schema(json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "The task, as you would ask a colleague."},
                    "cwd": {"type": "string", "description": "The project folder (absolute); default: the server's folder."}
                },
                "required": ["prompt"]
            })),
        ),
        Tool::new(
            REPLY,
            "Continue an ikigai session (from an earlier `ikigai` call) with another prompt.",
            schema(json!({
                "type": "object",
                "properties": {
                    "session_id": {"type": "string", "description": "The session id an earlier call returned."},
                    "prompt": {"type": "string"}
                },
                "required": ["session_id", "prompt"]
            })),
        ),
    ]
}

fn text_arg(args: &serde_json::Map<String, Value>, name: &str) -> Result<Option<String>, McpError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(McpError::invalid_params(
            format!("`{name}` must be a string"),
            None,
        )),
    }
}

fn required(args: &serde_json::Map<String, Value>, name: &str) -> Result<String, McpError> {
    match text_arg(args, name)? {
        Some(s) if !s.trim().is_empty() => Ok(s),
        _ => Err(McpError::invalid_params(format!("`{name}` is required"), None)),
    }
}

fn failed(text: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text)]).into()
}

impl Server {
    /// The folder a stored session ran in: this server's own sessions first, else the
    /// session store (an id or a unique prefix, as `--resume` takes).
    async fn folder_of(&self, id: &str) -> Result<PathBuf, String> {
        if let Some(p) = self.folders.lock().ok().and_then(|m| m.get(id).cloned()) {
            return Ok(p);
        }
        let (notices, _rx) = tokio::sync::mpsc::unbounded_channel();
        let store = crate::store::open(&self.serve.config, notices);
        let list = store
            .list()
            .await
            .map_err(|e| format!("the session store: {e}"))?;
        let found: Vec<_> = list.into_iter().filter(|s| s.id.starts_with(id)).collect();
        match found.as_slice() {
            [one] => Ok(PathBuf::from(&one.cwd)),
            [] => Err(format!(
                "no stored session has the id `{}`",
                crate::text::visible(id)
            )),
            _ => Err(format!(
                "`{}` matches {} sessions; give more of the id",
                crate::text::visible(id),
                found.len()
            )),
        }
    }

    /// Who answers a turn's questions: the client's user, through an elicitation, in `ask`
    /// mode when the client can elicit a form; else nobody (the question is refused).
    /// Accept runs the call once; decline, cancel or a failed request refuse it.
    fn approver(&self, peer: &rmcp::Peer<RoleServer>) -> Option<Approver> {
        let can_ask = self.serve.mode == crate::policy::Mode::Ask
            && peer
                .supported_elicitation_modes()
                .contains(&rmcp::service::ElicitationMode::Form);
        if !can_ask {
            return None;
        }
        let peer = peer.clone();
        Some(Arc::new(move |message: String| {
            let peer = peer.clone();
            Box::pin(async move {
                let ask = rmcp::model::ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema: rmcp::model::ElicitationSchema::new(Default::default()),
                };
                matches!(
                    peer.create_elicitation(ask).await,
                    Ok(r) if r.action == rmcp::model::ElicitationAction::Accept
                )
            })
        }))
    }

    async fn turn(&self, req: TurnRequest, ctx: RequestContext<RoleServer>) -> CallToolResponse {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Step>();
        // Progress goes to the client only when it asked for it (a progress token).
        let token = ctx.meta.get_progress_token();
        let peer = ctx.peer.clone();
        let forward = tokio::spawn(async move {
            let mut n = 0.0;
            while let Some(step) = rx.recv().await {
                let Some(token) = token.clone() else { continue };
                n += 1.0;
                let message = match step {
                    Step::Started { session_id } => format!("session {session_id}"),
                    Step::ToolCall { summary } => summary,
                };
                let _ = peer
                    .notify_progress(ProgressNotificationParam::new(token, n).with_message(message))
                    .await;
            }
        });
        // The turn runs in a task of its own: a request the client cancels, or a call
        // the connection drops with it, cancels the turn (the guard), which then ends as
        // Ctrl-C ends one while the server waits for it.
        let cancel = ctx.ct.child_token();
        let _cancel_when_dropped = cancel.clone().drop_guard();
        let (program, args, run_req) = (self.program.clone(), self.serve.args.clone(), req.clone());
        let approve = self.approver(&ctx.peer);
        let running = self.turns.spawn(async move {
            turn::run(&program, &args, &run_req, cancel, approve, |s| {
                let _ = tx.send(s);
            })
            .await
        });
        let result = running.await;
        let _ = forward.await;
        let out = match result {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return failed(e.to_string()),
            Err(e) => return failed(format!("the turn stopped: {e}")),
        };
        if let (Some(id), Ok(mut m)) = (&out.session_id, self.folders.lock()) {
            m.insert(id.clone(), req.cwd.clone());
        }
        answer(out)
    }
}

/// The tool result of a finished turn: the answer as text, and as structured content
/// with the session id, the end reason and the number of tool calls.
fn answer(out: TurnOutcome) -> CallToolResponse {
    let structured = json!({
        "session_id": out.session_id,
        "answer": out.answer,
        "reason": out.reason,
        "tool_calls": out.tool_calls,
    });
    let mut text = out.answer.clone();
    if let Some(id) = &out.session_id {
        text.push_str(&format!(
            "\n\n(ikigai session {id}; continue it with ikigai_reply)"
        ));
    }
    let mut r = match (&out.failure, out.reason.as_str()) {
        (Some(why), _) => CallToolResult::error(vec![ContentBlock::text(why.clone())]),
        (None, "done") => CallToolResult::success(vec![ContentBlock::text(text)]),
        (None, reason) => CallToolResult::error(vec![ContentBlock::text(format!(
            "the turn ended early ({reason}); what it said:\n{text}"
        ))]),
    };
    r.structured_content = Some(structured);
    r.into()
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ikigai", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "ikigai is a coding agent. Call `ikigai` with a task and a project folder; \
                 continue with `ikigai_reply` and the session id it returns.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut all = tools();
        if let Some(b) = &self.builtins {
            for s in b.schemas() {
                all.push(Tool::new(
                    s.name.clone(),
                    s.description.clone(),
                    schema(s.to_json_schema()),
                ));
            }
        }
        Ok(ListToolsResult::with_all_items(all))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        match request.name.as_ref() {
            RUN => {
                let prompt = required(&args, "prompt")?;
                let cwd = match text_arg(&args, "cwd")? {
                    Some(c) => PathBuf::from(c),
                    None => self.serve.cwd.clone(),
                };
                if !cwd.is_absolute() {
                    return Err(McpError::invalid_params("`cwd` must be an absolute path", None));
                }
                let req = TurnRequest {
                    prompt,
                    cwd,
                    resume: None,
                };
                Ok(self.turn(req, context).await)
            }
            REPLY => {
                let id = required(&args, "session_id")?;
                let prompt = required(&args, "prompt")?;
                let cwd = match self.folder_of(&id).await {
                    Ok(c) => c,
                    Err(why) => return Ok(failed(why)),
                };
                let req = TurnRequest {
                    prompt,
                    cwd,
                    resume: Some(id),
                };
                Ok(self.turn(req, context).await)
            }
            name if self.builtins.as_ref().is_some_and(|b| b.offers(name)) => {
                let Some(b) = &self.builtins else {
                    return Err(McpError::internal_error("no built-in tools", None));
                };
                let arguments = Value::Object(args).to_string();
                // A cancelled request drops the call: its process group is killed.
                let approve = self.approver(&context.peer);
                let answer = tokio::select! {
                    a = b.call(name, &arguments, approve) => a,
                    () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
                };
                let content = vec![ContentBlock::text(answer.text)];
                Ok(if answer.success {
                    CallToolResult::success(content)
                } else {
                    CallToolResult::error(content)
                }
                .into())
            }
            other => Err(McpError::invalid_params(
                format!("no tool named `{}`", crate::text::visible(other)),
                None,
            )),
        }
    }
}
