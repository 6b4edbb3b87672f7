//! The editor's MCP servers (`mcpServers` of `session/new` and `session/load`) read as
//! ikigai's own server entries: each goes through the same validation as an
//! `[mcp_servers.NAME]` section (`config::mcp::validate`), so a name, a command, a URL or a
//! header that a settings file could not hold is refused here too, with why. Whether they
//! run (trust) and starting them is the app's (`EditorMcp`); this file only reads.

use std::collections::BTreeMap;
use std::path::Path;

use agent_client_protocol::v1::schema::McpServer;

use crate::config::mcp::{EnvSection, ServerSection, ServerSpec};

/// Where the entries are said to come from in messages.
const SOURCE: &str = "the editor's session/new";

/// The servers as entries, and why the others are left out (one line each).
pub(crate) fn specs(servers: &[McpServer]) -> (Vec<ServerSpec>, Vec<String>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for server in servers {
        let (name, section) = match server {
            McpServer::Stdio(s) => (
                s.name.clone(),
                ServerSection {
                    command: Some(s.command.to_string_lossy().into_owned()),
                    args: Some(s.args.clone()),
                    env: Some(EnvSection::Values(
                        s.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect(),
                    )),
                    ..Default::default()
                },
            ),
            McpServer::Http(s) => (
                s.name.clone(),
                ServerSection {
                    url: Some(s.url.clone()),
                    headers: Some(
                        s.headers
                            .iter()
                            .map(|h| (h.name.clone(), h.value.clone()))
                            .collect(),
                    ),
                    ..Default::default()
                },
            ),
            McpServer::Sse(s) => {
                refused.push(format!(
                    "MCP server {}: SSE servers are not supported (Streamable HTTP and stdio are)",
                    s.name
                ));
                continue;
            }
            _ => {
                refused.push("an MCP server of a kind ikigai does not know".into());
                continue;
            }
        };
        let one = BTreeMap::from([(name, section)]);
        match crate::config::mcp::validate(&one, Path::new(SOURCE)) {
            Ok(mut v) => out.append(&mut v),
            Err(e) => refused.push(format!("MCP server not used: {}: {}", e.key, e.message)),
        }
    }
    (out, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };

    #[test]
    fn editor_servers_pass_the_settings_validation_or_are_refused_with_why() {
        let stdio = |name: &str, command: &str| {
            McpServer::Stdio(
                McpServerStdio::new(name, command)
                    .args(vec!["-x".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            )
        };
        let http = |name: &str, url: &str, header: (&str, &str)| {
            McpServer::Http(McpServerHttp::new(name, url).headers(vec![HttpHeader::new(header.0, header.1)]))
        };
        let servers = vec![
            stdio("files", "/usr/bin/srv"),
            http("web", "https://mcp.example/x", ("Authorization", "Bearer abc")),
            // Refused, each for a reason a settings file would be refused for.
            stdio("two__parts", "/usr/bin/srv"),
            stdio("bad name", "/usr/bin/srv"),
            stdio("empty", " "),
            http("ftp", "ftp://mcp.example/", ("A", "b")),
            http("hdr", "https://mcp.example/", ("Bad Header", "b")),
            http("val", "https://mcp.example/", ("A", "line\nbreak")),
            McpServer::Sse(McpServerSse::new("old", "https://mcp.example/sse")),
        ];
        let (ok, refused) = specs(&servers);
        let names: Vec<&str> = ok.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "web"]);
        assert_eq!(refused.len(), 7, "{refused:?}");
        assert!(refused.iter().any(|r| r.contains("SSE")), "{refused:?}");
        match &ok[0].transport {
            crate::config::mcp::Transport::Stdio {
                command, args, env, ..
            } => {
                assert_eq!(
                    (command.as_str(), args.as_slice()),
                    ("/usr/bin/srv", &["-x".to_string()][..])
                );
                assert_eq!(env.get("TOKEN").map(String::as_str), Some("t"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(ok[1].transport.kind(), "http");
        // No header value in what is shown of it.
        assert!(!ok[1].transport.target().contains("abc"));
    }
}
