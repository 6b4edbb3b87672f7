//! MCP servers as text: the table `ikigai mcp list` and `/mcp` print (name, transport,
//! status, tool count, and why a server failed), and `ikigai mcp get NAME` (its tools with
//! their schemas). The subcommands start the servers, wait for them, print and close them.
//! Renders only; the servers are `tools::mcp`'s.

use std::io::Write;

use crate::config::Config;
use crate::tools::mcp::{Mcp, ServerInfo, Status};
use crate::tools::{EnvPolicy, Registry};

/// Why `ikigai mcp` failed.
#[derive(Debug, thiserror::Error)]
pub enum McpCmdError {
    /// No such server, or none configured (exit 2). Not retryable.
    #[error("{0}")]
    Usage(String),
    /// Writing failed. Not retryable.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The servers as an aligned table, with one indented line per failure reason and the
/// last stderr lines of a failed server.
pub fn table(servers: &[ServerInfo]) -> String {
    if servers.is_empty() {
        return "No MCP servers are configured ([mcp_servers.NAME] in the config).\n".into();
    }
    let rows: Vec<[String; 5]> = servers
        .iter()
        .map(|s| {
            let tools = match s.status {
                Status::Ready => s.tools.len().to_string(),
                _ => "-".into(),
            };
            [
                s.name.clone(),
                s.transport.to_string(),
                s.status.label().to_string(),
                tools,
                s.target.clone(),
            ]
        })
        .collect();
    let head = ["NAME", "TRANSPORT", "STATUS", "TOOLS", "COMMAND / URL"];
    let mut w = head.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |c: [&str; 5]| {
        format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:>w3$}  {}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        )
    };
    let mut out = line(head);
    for (r, s) in rows.iter().zip(servers) {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        if let Status::Failed { reason, stderr } = &s.status {
            out.push_str(&format!("    {reason}\n"));
            for l in stderr.iter().rev().take(3).rev() {
                out.push_str(&format!("    stderr: {l}\n"));
            }
        }
        for why in &s.refused {
            out.push_str(&format!("    {why}\n"));
        }
    }
    out
}

/// One server's tools: the name offered to the model, the server's own name, the
/// description and the input schema.
pub fn tools(server: &ServerInfo) -> String {
    let mut out = table(std::slice::from_ref(server));
    for t in &server.tools {
        out.push('\n');
        out.push_str(&t.name);
        if t.name != format!("{}__{}", server.name, t.server_name) {
            out.push_str(&format!("  (`{}` on the server)", t.server_name));
        }
        out.push('\n');
        for l in t.description.lines() {
            out.push_str(&format!("  {l}\n"));
        }
        let schema = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
        for l in schema.lines() {
            out.push_str(&format!("  {l}\n"));
        }
    }
    out
}

/// `ikigai mcp list` / `ikigai mcp get NAME`: starts every configured server, waits for
/// each to be ready or fail, prints, closes them. Returns the exit code: 0, or 1 when the
/// server asked for (or, for `list`, any enabled server) is not ready.
pub async fn run(
    config: &Config,
    cwd: std::path::PathBuf,
    get: Option<&str>,
    json: bool,
) -> Result<u8, McpCmdError> {
    if let Some(name) = get
        && !config.mcp_servers.iter().any(|s| s.name == name)
    {
        let known: Vec<&str> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        return Err(McpCmdError::Usage(if known.is_empty() {
            "no MCP server is configured ([mcp_servers.NAME] in the config)".into()
        } else {
            format!("no MCP server named `{name}` (configured: {})", known.join(", "))
        }));
    }
    let (mcp, _notices) = Mcp::new(
        config.mcp_servers.clone(),
        cwd,
        std::sync::Arc::new(EnvPolicy::from_config(config, crate::provider::key_vars(config))),
    );
    mcp.start_and_wait().await;
    let taken = Registry::builtin().base_names();
    let servers = mcp.list(&taken);
    mcp.shutdown().await;
    let shown: Vec<&ServerInfo> = servers
        .iter()
        .filter(|s| get.is_none_or(|n| s.name == n))
        .collect();
    let text = if json {
        let v: Vec<serde_json::Value> = shown.iter().map(|s| to_json(s)).collect();
        let v = match get {
            Some(_) => v.into_iter().next().unwrap_or_default(),
            None => serde_json::Value::Array(v),
        };
        format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
    } else if let Some(s) = shown.first().filter(|_| get.is_some()) {
        tools(s)
    } else {
        table(&servers)
    };
    let text = crate::redact::global().scrub(&text);
    // Names, descriptions, schemas and stderr lines are the servers' text: shown, never
    // performed (JSON keeps its value).
    let text = if json {
        crate::text::json_visible(&text)
    } else {
        crate::text::visible(&text)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    let bad = shown
        .iter()
        .any(|s| !matches!(s.status, Status::Ready | Status::Disabled));
    Ok(u8::from(bad))
}

fn to_json(s: &ServerInfo) -> serde_json::Value {
    let (reason, stderr) = match &s.status {
        Status::Failed { reason, stderr } => (Some(reason.clone()), stderr.clone()),
        _ => (None, Vec::new()),
    };
    serde_json::json!({
        "name": s.name,
        "transport": s.transport,
        "target": s.target,
        "status": s.status.label(),
        "error": reason,
        "stderr": stderr,
        "refused": s.refused,
        "tools": s.tools.iter().map(|t| serde_json::json!({
            "name": t.name,
            "server_name": t.server_name,
            "description": t.description,
            "input_schema": t.input_schema,
        })).collect::<Vec<_>>(),
    })
}

/// What `/mcp` shows: the table of the registry's servers as they are now.
pub fn live(registry: &Registry) -> String {
    match registry.mcp() {
        Some(mcp) => {
            let mut text = table(&mcp.list(&registry.base_names()));
            text.push_str("`/mcp NAME` lists a server's tools; `/mcp restart NAME` restarts it.\n");
            text
        }
        None => table(&[]),
    }
}

/// What `/mcp NAME` shows.
pub fn live_server(registry: &Registry, name: &str) -> Option<String> {
    let mcp = registry.mcp()?;
    let servers = mcp.list(&registry.base_names());
    servers.iter().find(|s| s.name == name).map(tools)
}
