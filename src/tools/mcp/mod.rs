//! The MCP client (issue 21): every configured Model Context Protocol server becomes tools
//! in the registry, as `SERVER__TOOL`. `Mcp` owns the servers: starts them in parallel in
//! the background, lets the first request wait for those still starting (at most their
//! `startup_timeout_secs`), lists them for `/mcp` and `ikigai mcp`, restarts and closes
//! them. Speaks the protocol only through rmcp (connect.rs); never prints (notices go to
//! the channel the app forwards to the front ends).

pub mod connect;
pub mod names;
pub mod result;
pub mod server;
pub mod stdio;
pub mod tool;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

pub use crate::config::mcp::{self as config, ServerSpec, Transport};
use server::Server;
pub use server::{Notices, Status};

use super::{EnvPolicy, Tool};
use crate::protocol::NoticeLevel;

/// What `/mcp` and `ikigai mcp list` show of one server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerInfo {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The command line or the URL.
    pub target: String,
    pub status: Status,
    /// The tools as offered: (name offered to the model, the server's name, description,
    /// input schema).
    pub tools: Vec<ToolInfo>,
    /// Tools of this server not offered because another tool would have the same name,
    /// each with why (`names::Collision::describe`).
    pub refused: Vec<String>,
}

/// One tool of a server as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub server_name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}

/// The running MCP client: every server of the config. Cheap to clone (a handle).
#[derive(Clone)]
pub struct Mcp {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Vec<Arc<Server>>,
    /// The first request has waited for starting servers already.
    waited: AtomicBool,
    /// Where notices go (the app forwards them to the front ends).
    notices: server::Notices,
    /// The name collisions already told (each is told once).
    told: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Mcp {
    /// The client for `specs`, servers not started yet; notices go to the returned channel.
    pub fn new(
        specs: Vec<ServerSpec>,
        cwd: PathBuf,
        policy: Arc<EnvPolicy>,
    ) -> (Self, UnboundedReceiver<(NoticeLevel, String)>) {
        let (tx, rx) = unbounded_channel();
        let servers = specs
            .into_iter()
            .map(|s| Server::new(s, cwd.clone(), policy.clone(), tx.clone()))
            .collect();
        let mcp = Mcp {
            inner: Arc::new(Inner {
                servers,
                waited: AtomicBool::new(false),
                notices: tx,
                told: std::sync::Mutex::new(std::collections::HashSet::new()),
            }),
        };
        (mcp, rx)
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.servers.is_empty()
    }

    /// Starts every enabled server, in parallel, in the background. Needs a tokio runtime.
    pub fn start(&self) {
        for s in &self.inner.servers {
            let s = s.clone();
            tokio::spawn(async move { s.start().await });
        }
    }

    /// Starts every server and waits until each is ready or has failed (for `ikigai mcp`).
    pub async fn start_and_wait(&self) {
        join_all(self.inner.servers.iter().map(|s| s.start())).await;
        self.settle(None).await;
    }

    /// Waits for servers still starting, at most their startup timeout (plus a second of
    /// slack): only the first time it is called (the first request); later calls return
    /// at once.
    pub async fn first_request(&self) {
        if self.inner.waited.swap(true, Ordering::SeqCst) {
            return;
        }
        let longest = self
            .inner
            .servers
            .iter()
            .map(|s| s.spec.startup_timeout)
            .max()
            .unwrap_or_default();
        self.settle(Some(longest + Duration::from_secs(1))).await;
    }

    /// Waits until no server is starting (or `limit` passed).
    async fn settle(&self, limit: Option<Duration>) {
        let all = join_all(self.inner.servers.iter().map(|s| async move {
            let mut rx = s.subscribe();
            let _ = rx.wait_for(|_| s.status() != Status::Starting).await;
        }));
        match limit {
            Some(l) => {
                let _ = tokio::time::timeout(l, all).await;
            }
            None => {
                all.await;
            }
        }
    }

    /// The tools of every server, named, with whether each can be called now. `taken`
    /// names tools that exist already: an MCP tool whose name would be one of them, or
    /// another MCP tool's, is not offered (see `names`).
    pub fn tools(&self, taken: &[String]) -> Vec<(Arc<dyn Tool>, bool)> {
        self.mcp_tools(taken)
            .0
            .into_iter()
            .map(|(t, ready)| (t as Arc<dyn Tool>, ready))
            .collect()
    }

    /// The tools of every server under their names; tools that would share a name are
    /// left out (see `names`), told once as a warning, and returned as the collisions.
    fn mcp_tools(&self, taken: &[String]) -> (Vec<(Arc<tool::McpTool>, bool)>, Vec<names::Collision>) {
        let mut pairs = Vec::new();
        let mut defs = Vec::new();
        for s in &self.inner.servers {
            let (tools, ready) = s.tools();
            for t in tools {
                pairs.push((s.spec.name.clone(), t.name.to_string()));
                defs.push((s.clone(), t, ready));
            }
        }
        let (names, collisions) = names::assign(&pairs, taken);
        if !collisions.is_empty()
            && let Ok(mut told) = self.inner.told.lock()
        {
            for c in &collisions {
                let text = c.describe();
                if told.insert(text.clone()) {
                    let _ = self.inner.notices.send((NoticeLevel::Warning, text));
                }
            }
        }
        let tools = defs
            .into_iter()
            .zip(names)
            .filter_map(|((server, def, ready), name)| {
                name.map(|name| (Arc::new(tool::McpTool::new(server, &def, name)), ready))
            })
            .collect();
        (tools, collisions)
    }

    /// Every server with its status and tools.
    pub fn list(&self, taken: &[String]) -> Vec<ServerInfo> {
        let (tools, collisions) = self.mcp_tools(taken);
        self.inner
            .servers
            .iter()
            .map(|s| ServerInfo {
                name: s.spec.name.clone(),
                transport: s.spec.transport.kind(),
                target: s.spec.transport.target(),
                status: s.status(),
                tools: tools
                    .iter()
                    .filter(|(t, _)| Arc::ptr_eq(&t.server, s))
                    .map(|(t, _)| ToolInfo {
                        server_name: t.tool.clone(),
                        name: t.schema.name.clone(),
                        description: t.schema.description.clone(),
                        input_schema: t.schema.json_schema.clone().unwrap_or_default(),
                    })
                    .collect(),
                refused: collisions
                    .iter()
                    .filter(|c| c.tools.iter().any(|(server, _)| *server == s.spec.name))
                    .map(names::Collision::describe)
                    .collect(),
            })
            .collect()
    }

    /// Restarts the server `name` and waits until it is ready or failed.
    pub async fn restart(&self, name: &str) -> Result<Status, String> {
        let Some(s) = self.inner.servers.iter().find(|s| s.spec.name == name) else {
            let known: Vec<&str> = self.inner.servers.iter().map(|s| s.spec.name.as_str()).collect();
            return Err(if known.is_empty() {
                "no MCP server is configured".to_string()
            } else {
                format!("no MCP server named `{name}` (configured: {})", known.join(", "))
            });
        };
        if !s.spec.enabled {
            return Err(format!(
                "MCP server `{name}` is disabled in the config (enabled = false)"
            ));
        }
        s.start().await;
        let mut rx = s.subscribe();
        let _ = rx.wait_for(|_| s.status() != Status::Starting).await;
        Ok(s.status())
    }

    /// Restarts every server that failed (for `/refresh`); returns their names.
    pub async fn restart_failed(&self) -> Vec<String> {
        let failed: Vec<&Arc<Server>> = self
            .inner
            .servers
            .iter()
            .filter(|s| matches!(s.status(), Status::Failed { .. }))
            .collect();
        join_all(failed.iter().map(|s| self.restart(&s.spec.name))).await;
        failed.iter().map(|s| s.spec.name.clone()).collect()
    }

    /// Closes every server (stdio servers' process groups are killed), in parallel.
    pub async fn shutdown(&self) {
        join_all(self.inner.servers.iter().map(|s| s.close())).await;
    }
}
