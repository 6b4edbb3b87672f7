//! An MCP server's tool as a registry `Tool`: its schema as the server gave it, under the
//! `SERVER__TOOL` name, and a call that goes to `tools/call` with the arguments as given.
//! The call is cancelled (`notifications/cancelled`) when dropped (the user interrupted)
//! or after `tool_timeout_secs`; progress goes to the running call's line. A server that
//! is down, or goes down during the call, is a clear tool error, never a hang.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::Value;

use super::connect::ProgressMap;
use super::result;
use super::server::{Server, Status};
use crate::tools::progress::Sink;
use crate::tools::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema, ToolSource};

/// How long a call that lost its connection waits to learn why (the exit status).
const WHY_WAIT: Duration = Duration::from_millis(500);

/// One tool of one server.
pub struct McpTool {
    pub server: Arc<Server>,
    /// The tool's name on its server.
    pub tool: String,
    pub schema: ToolSchema,
}

impl McpTool {
    /// The tool `def` of `server`, offered as `name`.
    pub fn new(server: Arc<Server>, def: &rmcp::model::Tool, name: String) -> Self {
        let json_schema = Value::Object((*def.input_schema).clone());
        let description = def
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_string)
            .or_else(|| def.title.clone())
            .unwrap_or_else(|| {
                format!(
                    "The `{}` tool of the MCP server `{}`.",
                    def.name, server.spec.name
                )
            });
        let required: Vec<&str> = json_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let parameters = json_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(p, spec)| {
                        let ty = spec.get("type").and_then(Value::as_str).unwrap_or("any");
                        let desc = spec.get("description").and_then(Value::as_str).unwrap_or("");
                        ParamSpec::new(p, ty, desc, required.contains(&p.as_str()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        McpTool {
            tool: def.name.to_string(),
            schema: ToolSchema {
                name,
                description,
                parameters,
                json_schema: Some(json_schema),
            },
            server,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    fn source(&self) -> ToolSource {
        ToolSource::Mcp(self.server.spec.name.clone())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = &self.server.spec.name;
        let Some(ready) = self.server.ready() else {
            return Err(unavailable(&self.server));
        };
        let generation = self.server.generation();
        let Value::Object(arguments) = args else {
            return Err(ToolError::InvalidParams("arguments must be a JSON object".into()));
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments),
        ));
        let timeout = self.server.spec.tool_timeout;
        let handle = match ready
            .peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(self.lost(generation, &e).await),
        };
        let _progress = ProgressGuard::register(&ready.progress, handle.progress_token.clone());
        let mut cancel = CancelOnDrop {
            peer: Some(handle.peer.clone()),
            id: handle.id.clone(),
        };
        let answer = handle.await_response().await;
        cancel.peer = None;
        match answer {
            Ok(ServerResult::CallToolResult(r)) => {
                let json = serde_json::to_value(&r).map_err(|e| ToolError::InvalidOutput(e.to_string()))?;
                Ok(result::convert(&json, ctx.max_output_size, ctx.images))
            }
            Ok(_) => Err(ToolError::InvalidOutput(format!(
                "MCP server `{name}` answered tools/call with something other than a tool result"
            ))),
            Err(ServiceError::Timeout { .. }) => Err(ToolError::Timeout {
                message: format!(
                    "MCP server `{name}` did not finish `{}` within {} s (tool_timeout_secs); the call was cancelled",
                    self.tool,
                    timeout.as_secs()
                ),
                partial_output: String::new(),
            }),
            Err(ServiceError::McpError(e)) => {
                let text = format!(
                    "MCP server `{name}` refused the call: {} (code {})",
                    e.message, e.code.0
                );
                if e.code.0 == -32602 {
                    Err(ToolError::InvalidParams(text))
                } else {
                    Err(ToolError::Crashed(text))
                }
            }
            Err(e) => Err(self.lost(generation, &e).await),
        }
    }
}

impl McpTool {
    /// The error for a call whose connection failed: waits briefly for the server's own
    /// account (its exit status and stderr), then says what happened.
    async fn lost(&self, generation: u64, e: &ServiceError) -> ToolError {
        let mut rx = self.server.subscribe();
        let failed = |s: &Server| matches!(s.status(), Status::Failed { .. });
        if !failed(&self.server) {
            let _ = tokio::time::timeout(WHY_WAIT, rx.wait_for(|_| failed(&self.server))).await;
        }
        if !failed(&self.server) {
            self.server
                .fail(Some(generation), format!("the connection failed: {e}"));
        }
        let mut err = unavailable(&self.server);
        if let ToolError::Crashed(m) = &mut err {
            *m = m.replacen("is unavailable", "stopped during the call", 1);
        }
        err
    }
}

/// The error for a call to a server that is not ready: why, and how to bring it back.
fn unavailable(server: &Server) -> ToolError {
    let name = &server.spec.name;
    let why = match server.status() {
        Status::Starting => "it is still starting".to_string(),
        Status::Disabled => "it is disabled in the config (enabled = false)".to_string(),
        Status::Failed { reason, stderr } => match stderr.last() {
            Some(line) => format!("{reason} (last stderr line: {line})"),
            None => reason,
        },
        Status::Ready => "its connection closed".to_string(),
    };
    ToolError::Crashed(format!(
        "MCP server `{name}` is unavailable: {why}. The user can restart it with /mcp restart {name}."
    ))
}

/// Routes the call's progress notifications to its line while it runs.
struct ProgressGuard {
    map: ProgressMap,
    token: ProgressToken,
}

impl ProgressGuard {
    fn register(map: &ProgressMap, token: ProgressToken) -> Option<Self> {
        let sink = Sink::current()?;
        map.lock().ok()?.insert(token.clone(), sink);
        Some(ProgressGuard {
            map: map.clone(),
            token,
        })
    }
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.map.lock() {
            m.remove(&self.token);
        }
    }
}

/// Tells the server a call was abandoned (the turn was interrupted) when dropped armed.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let note = CancelledNotification::new(CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("interrupted by the user".into()),
        ));
        rt.spawn(async move {
            let _ = peer.send_notification(note.into()).await;
        });
    }
}
