//! One configured MCP server's life: starting in the background (bounded by
//! `startup_timeout_secs`), its tool list (fetched again on `tools/list_changed`), failure
//! (shown once, with the last lines of its stderr), restart and close. One task owns each
//! connection; the state here is what callers read. Converts no tool result (call.rs).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::Tool as McpToolDef;
use rmcp::service::{Peer, RoleClient};
use tokio::sync::{oneshot, watch};

use super::connect::{self, Conn, ProgressMap};
use super::stdio::{ReadFault, StderrTail};
use crate::config::mcp::ServerSpec;
use crate::protocol::NoticeLevel;
use crate::tools::EnvPolicy;

/// Where notices go (the app forwards them to the front ends).
pub type Notices = tokio::sync::mpsc::UnboundedSender<(NoticeLevel, String)>;

/// How long closing waits for a server before its group is killed anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// How long a failed start waits for the end of the server's stderr before telling it.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

/// Where a server is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// `enabled = false`.
    Disabled,
    Starting,
    Ready,
    /// It failed to start, exited or stopped answering.
    Failed {
        reason: String,
        stderr: Vec<String>,
    },
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Status::Disabled => "disabled",
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Failed { .. } => "failed",
        }
    }
}

struct State {
    status: Status,
    /// The server's tools as last listed (kept after a failure, to answer calls clearly).
    tools: Vec<McpToolDef>,
    peer: Option<Peer<RoleClient>>,
    progress: ProgressMap,
    stderr: StderrTail,
    fault: ReadFault,
    /// Bumped by every start; a stale task changes nothing.
    generation: u64,
    /// Tells the connection's task to close it.
    stop: Option<oneshot::Sender<()>>,
    /// Resolves when the connection's task has closed everything.
    closed: Option<oneshot::Receiver<()>>,
}

/// A connection usable for one call.
pub struct Ready {
    pub peer: Peer<RoleClient>,
    pub progress: ProgressMap,
}

/// One server. Shared by the manager and its tools.
pub struct Server {
    pub spec: ServerSpec,
    cwd: PathBuf,
    policy: Arc<EnvPolicy>,
    notices: Notices,
    state: Mutex<State>,
    /// Bumped whenever the status or the tool list changes.
    changed: watch::Sender<u64>,
}

impl Server {
    pub fn new(spec: ServerSpec, cwd: PathBuf, policy: Arc<EnvPolicy>, notices: Notices) -> Arc<Self> {
        let status = if spec.enabled {
            Status::Starting
        } else {
            Status::Disabled
        };
        Arc::new(Server {
            spec,
            cwd,
            policy,
            notices,
            state: Mutex::new(State {
                status,
                tools: Vec::new(),
                peer: None,
                progress: ProgressMap::default(),
                stderr: StderrTail::default(),
                fault: ReadFault::default(),
                generation: 0,
                stop: None,
                closed: None,
            }),
            changed: watch::Sender::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn status(&self) -> Status {
        self.lock().status.clone()
    }

    /// The tools last listed, and whether they can be called now.
    pub fn tools(&self) -> (Vec<McpToolDef>, bool) {
        let st = self.lock();
        (st.tools.clone(), st.status == Status::Ready)
    }

    /// The connection, when the server is ready.
    pub fn ready(&self) -> Option<Ready> {
        let st = self.lock();
        match (&st.status, &st.peer) {
            (Status::Ready, Some(peer)) => Some(Ready {
                peer: peer.clone(),
                progress: st.progress.clone(),
            }),
            _ => None,
        }
    }

    /// A change of status or tools, for waiting on.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Starts (or restarts) the server in the background. A disabled server stays down.
    pub async fn start(self: &Arc<Self>) {
        if !self.spec.enabled {
            return;
        }
        self.close().await;
        let (stop_tx, stop_rx) = oneshot::channel();
        let (closed_tx, closed_rx) = oneshot::channel();
        let generation = {
            let mut st = self.lock();
            st.generation += 1;
            st.status = Status::Starting;
            st.peer = None;
            st.stderr = StderrTail::default();
            st.fault = ReadFault::default();
            st.stop = Some(stop_tx);
            st.closed = Some(closed_rx);
            st.generation
        };
        self.bump();
        let me = self.clone();
        tokio::spawn(async move {
            me.run(generation, stop_rx).await;
            let _ = closed_tx.send(());
        });
    }

    /// Closes the connection (and kills a stdio server's process group); waits for it.
    pub async fn close(&self) {
        let (stop, closed) = {
            let mut st = self.lock();
            (st.stop.take(), st.closed.take())
        };
        if let Some(stop) = stop {
            let _ = stop.send(());
        }
        if let Some(closed) = closed {
            let _ = tokio::time::timeout(CLOSE_WAIT + Duration::from_secs(1), closed).await;
        }
    }

    /// Marks the server failed (once per start) and says so.
    pub fn fail(&self, generation: Option<u64>, reason: String) {
        let stderr;
        {
            let mut st = self.lock();
            if generation.is_some_and(|g| g != st.generation) || matches!(st.status, Status::Failed { .. }) {
                return;
            }
            stderr = st.stderr.lines();
            st.status = Status::Failed {
                reason: reason.clone(),
                stderr: stderr.clone(),
            };
            st.peer = None;
        }
        self.bump();
        let name = &self.spec.name;
        let mut text = format!(
            "MCP server `{name}` is unavailable: {reason}. Its tools cannot be called; `/mcp restart {name}` tries again."
        );
        let tail: Vec<&String> = stderr.iter().rev().take(5).collect();
        if !tail.is_empty() {
            text.push_str("\nits last stderr lines:");
            for l in tail.into_iter().rev() {
                text.push_str("\n  ");
                text.push_str(l);
            }
        }
        let _ = self.notices.send((NoticeLevel::Warning, text));
    }

    /// The generation of the current start.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    async fn run(self: Arc<Self>, generation: u64, mut stop: oneshot::Receiver<()>) {
        let stderr = self.lock().stderr.clone();
        let startup = self.spec.startup_timeout;
        let opened = tokio::select! {
            r = tokio::time::timeout(startup, self.open_and_list(stderr.clone())) => r,
            // Closed while starting: dropping the half-open connection kills its process.
            _ = &mut stop => return,
        };
        let (mut conn, tools) = match opened {
            Ok(Ok(ok)) => ok,
            Ok(Err(reason)) => {
                // What a server that exited as it started said last (`Broken pipe` may come
                // before its stderr is read).
                stderr.ended_within(STDERR_SETTLE).await;
                return self.fail(Some(generation), reason);
            }
            Err(_) => {
                let secs = startup.as_secs();
                return self.fail(
                    Some(generation),
                    format!("it did not finish starting within {secs} s (startup_timeout_secs)"),
                );
            }
        };
        {
            let mut st = self.lock();
            if st.generation != generation {
                return;
            }
            st.tools = tools;
            st.peer = Some(conn.peer());
            st.progress = conn.progress.clone();
            st.fault = conn.fault.clone();
            st.status = Status::Ready;
        }
        self.bump();
        let ct = conn.service.cancellation_token();
        let peer = conn.peer();
        let mut process = conn.process.take();
        let mut list_changed =
            std::mem::replace(&mut conn.list_changed, tokio::sync::mpsc::unbounded_channel().1);
        let fault = conn.fault.clone();
        let waiting = conn.service.waiting();
        tokio::pin!(waiting);
        let mut listening = true;
        loop {
            tokio::select! {
                _ = &mut waiting => {
                    // The connection ended by itself: the process exited or the stream broke.
                    let reason = match (fault.get(), process.as_mut()) {
                        (Some(f), _) => f,
                        (None, Some(p)) => match tokio::time::timeout(Duration::from_millis(500), p.exited()).await {
                            Ok(how) => how,
                            Err(_) => "it closed its stdout".into(),
                        },
                        (None, None) => "the connection closed".into(),
                    };
                    if let Some(p) = process.take() {
                        p.close().await;
                    }
                    self.fail(Some(generation), reason);
                    return;
                }
                changed = list_changed.recv(), if listening => {
                    if changed.is_none() {
                        listening = false;
                        continue;
                    }
                    match tokio::time::timeout(startup, list_tools(&peer, &self.spec)).await {
                        Ok(Ok(tools)) => {
                            let mut st = self.lock();
                            if st.generation == generation {
                                st.tools = tools;
                            }
                            drop(st);
                            self.bump();
                        }
                        Ok(Err(e)) => {
                            let _ = self.notices.send((NoticeLevel::Warning, format!(
                                "MCP server `{}` changed its tools, but listing them failed: {e}", self.spec.name)));
                        }
                        Err(_) => {
                            let _ = self.notices.send((NoticeLevel::Warning, format!(
                                "MCP server `{}` changed its tools, but did not list them within {} s",
                                self.spec.name, startup.as_secs())));
                        }
                    }
                }
                _ = &mut stop => {
                    ct.cancel();
                    let _ = tokio::time::timeout(CLOSE_WAIT, &mut waiting).await;
                    if let Some(p) = process.take() {
                        p.close().await;
                    }
                    let mut st = self.lock();
                    if st.generation == generation {
                        st.peer = None;
                    }
                    return;
                }
            }
        }
    }

    async fn open_and_list(&self, stderr: StderrTail) -> Result<(Conn, Vec<McpToolDef>), String> {
        let conn = connect::open(&self.spec, &self.cwd, &self.policy, stderr)
            .await
            .map_err(|e| e.reason)?;
        let tools = match list_tools(&conn.peer(), &self.spec).await {
            Ok(t) => t,
            Err(e) => return Err(conn.fault.get().unwrap_or(e)),
        };
        Ok((conn, tools))
    }
}

/// Every tool the server lists (all pages), less those its section leaves out.
async fn list_tools(peer: &Peer<RoleClient>, spec: &ServerSpec) -> Result<Vec<McpToolDef>, String> {
    let all = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    Ok(all.into_iter().filter(|t| spec.offers(&t.name)).collect())
}
