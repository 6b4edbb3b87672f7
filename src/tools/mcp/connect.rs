//! Opening one MCP connection with rmcp: the stdio process or the Streamable HTTP client,
//! the `initialize` handshake (the newest version with one that the SDK knows), and the
//! client handler that hears `tools/list_changed` and progress. Keeps no server state.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::stdio::{self, LineLimit, Process, ReadFault, StderrTail};
use crate::config::mcp::{ServerSpec, Transport};
use crate::tools::EnvPolicy;
use crate::tools::progress::Sink;

/// Largest single message read from a stdio server (or one SSE event, or one JSON body,
/// over HTTP).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// The calls in flight that asked for progress, by their token.
pub type ProgressMap = Arc<Mutex<HashMap<ProgressToken, Sink>>>;

/// What the connection tells its server: the tool list changed.
pub struct Handler {
    list_changed: UnboundedSender<()>,
    progress: ProgressMap,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("ikigai", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn on_progress(&self, p: ProgressNotificationParam, _ctx: NotificationContext<RoleClient>) {
        let sink = self
            .progress
            .lock()
            .ok()
            .and_then(|m| m.get(&p.progress_token).cloned());
        if let Some(sink) = sink {
            sink.report(crate::tools::progress::describe(
                p.progress,
                p.total,
                p.message.as_deref(),
            ));
        }
    }
}

/// An open connection.
pub struct Conn {
    pub service: RunningService<RoleClient, Handler>,
    /// The stdio server's process (none over HTTP).
    pub process: Option<Process>,
    pub list_changed: UnboundedReceiver<()>,
    pub progress: ProgressMap,
    /// Why we cut the connection ourselves, if we did.
    pub fault: ReadFault,
    pub stderr: StderrTail,
}

impl Conn {
    pub fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }
}

/// A failed start: why.
#[derive(Debug)]
pub struct StartError {
    pub reason: String,
}

/// Opens `spec`'s connection and completes the handshake (no time limit here: the caller
/// bounds it with `startup_timeout_secs`). A stdio server's stderr goes to `stderr`.
pub async fn open(
    spec: &ServerSpec,
    cwd: &Path,
    policy: &EnvPolicy,
    stderr: StderrTail,
) -> Result<Conn, StartError> {
    let (list_tx, list_rx) = unbounded_channel();
    let progress: ProgressMap = Arc::default();
    let handler = Handler {
        list_changed: list_tx,
        progress: progress.clone(),
    };
    let fault = ReadFault::default();
    match &spec.transport {
        Transport::Stdio { .. } => {
            let (process, stdout, stdin) = stdio::spawn(&spec.transport, cwd, policy, stderr.clone())
                .map_err(|e| StartError {
                    reason: e.to_string(),
                })?;
            let reader = LineLimit::new(stdout, MAX_MESSAGE, fault.clone());
            match handler.serve((reader, stdin)).await {
                Ok(service) => Ok(Conn {
                    service,
                    process: Some(process),
                    list_changed: list_rx,
                    progress,
                    fault,
                    stderr,
                }),
                Err(e) => {
                    let reason = fault
                        .get()
                        .unwrap_or_else(|| format!("the handshake failed: {e}"));
                    process.close().await;
                    Err(StartError { reason })
                }
            }
        }
        Transport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            let transport = http_transport(url, headers, bearer_token_env.as_deref())
                .map_err(|reason| StartError { reason })?;
            match handler.serve(transport).await {
                Ok(service) => Ok(Conn {
                    service,
                    process: None,
                    list_changed: list_rx,
                    progress,
                    fault,
                    stderr,
                }),
                Err(e) => Err(StartError {
                    reason: format!("the handshake failed: {e}"),
                }),
            }
        }
    }
}

fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    token_env: Option<&str>,
) -> Result<
    rmcp::transport::StreamableHttpClientTransport<
        impl rmcp::transport::streamable_http_client::StreamableHttpClient,
    >,
    String,
> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    // rmcp's reqwest uses rustls without a built-in provider; ring is the one ikigai ships.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut map = HashMap::new();
    for (k, v) in headers {
        let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header `{k}`: {e}"))?;
        let value = http::HeaderValue::from_str(v).map_err(|e| format!("header `{k}`: {e}"))?;
        map.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(map)
        // Every answer is read to a cap: one SSE event, one JSON body, an error's text.
        .max_sse_event_size(MAX_MESSAGE)
        .max_json_response_size(MAX_MESSAGE)
        .max_error_response_size(64 * 1024);
    if let Some(var) = token_env {
        match crate::environ::var(var) {
            Some(t) if !t.trim().is_empty() => config = config.auth_header(t.trim().to_string()),
            _ => return Err(format!("bearer_token_env names ${var}, which is not set")),
        }
    }
    Ok(StreamableHttpClientTransport::from_config(config))
}
