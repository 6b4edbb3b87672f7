//! `ikigai tool …`: list, describe or run a tool through the external-tool protocol. This
//! is a front end: it prints the tool's JSON on stdout (and nothing else), with anything a
//! terminal could act on shown visibly (lists) or escaped (JSON). It returns its
//! own error; `app.rs` converts it and `main.rs` picks the exit code.

use std::io::{IsTerminal, Read, Write};

use serde_json::Value;

use crate::cli::ToolArgs;
use crate::config::Config;
use crate::text::visible;
use crate::tools::discovery::DiscoverySpec;
use crate::tools::registry::parse_arguments;
use crate::tools::{Envelope, Registry, ToolContext, ToolSource};

/// Why `ikigai tool` could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ToolCmdError {
    /// The command line was wrong (exit 2). Not retryable.
    #[error("{0}")]
    Usage(String),
    /// Writing the result failed. Not retryable.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Runs the `tool` subcommand; returns the exit code: 0 when the tool produced its result,
/// 1 when the tool itself failed (the failure envelope is printed).
pub async fn run(args: &ToolArgs, config: &Config) -> Result<u8, ToolCmdError> {
    let registry = Registry::builtin();
    let cwd = std::env::current_dir()?;
    registry
        .discover_now(DiscoverySpec::from_config(
            config,
            &cwd,
            crate::provider::key_vars(config),
        ))
        .await;
    if args.list {
        if args.name.is_some() {
            return Err(ToolCmdError::Usage("--list takes no tool name".into()));
        }
        // Skips and overrides go to stderr, so stdout stays the list.
        for notice in registry.take_notices() {
            eprintln!("{}", visible(&notice));
        }
        let mut text = String::new();
        let tools = registry.tools();
        let width = tools.iter().map(|t| t.schema().name.len()).max().unwrap_or(0);
        for tool in tools {
            let s = tool.schema();
            let first = s.description.lines().next().unwrap_or("");
            match tool.source() {
                ToolSource::Builtin => text.push_str(&format!("{:<width$}  {first}\n", s.name)),
                ToolSource::External(p) => {
                    text.push_str(&format!("{:<width$}  {first} [{}]\n", s.name, p.display()))
                }
                ToolSource::Mcp(server) => {
                    text.push_str(&format!("{:<width$}  {first} [MCP server {server}]\n", s.name))
                }
            }
        }
        return print(&visible(&text)).map(|()| 0);
    }
    let Some(name) = &args.name else {
        return Err(ToolCmdError::Usage(
            "`ikigai tool` needs a tool name (its JSON arguments on stdin), NAME --schema, or --list".into(),
        ));
    };
    let Some(tool) = registry.get(name) else {
        let untrusted = registry.skipped().into_iter().find(|s| {
            s.untrusted
                && s.path
                    .file_name()
                    .is_some_and(|f| f.to_string_lossy().replace('-', "_") == *name)
        });
        return Err(ToolCmdError::Usage(match untrusted {
            Some(s) => format!(
                "`{name}` is a project tool ({}) of a folder that is not trusted; `ikigai trust` trusts it",
                s.path.display()
            ),
            None => format!("unknown tool `{name}`; `ikigai tool --list` shows the tools"),
        }));
    };
    if args.schema {
        return print_json(&tool.schema().to_protocol_json()).map(|()| 0);
    }
    // Arguments come on stdin; a terminal there means none were piped in.
    let mut input = String::new();
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        stdin
            .lock()
            .read_to_string(&mut input)
            .map_err(|e| ToolCmdError::Usage(format!("cannot read the tool's arguments from stdin: {e}")))?;
    }
    let ctx = ToolContext::from_config(cwd, config, crate::provider::key_vars(config))
        .with_sandbox(crate::permissions::sandbox_in_force::sandbox());
    let outcome = match parse_arguments(&input) {
        Ok(args) => tool.call(args, &ctx).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(out) => print_json(&out.result).map(|()| 0),
        Err(err) => print_json(&Envelope::of_error(&err).to_value()).map(|()| 1),
    }
}

/// JSON on stdout: the same value, with what a terminal could act on escaped.
fn print_json(v: &Value) -> Result<(), ToolCmdError> {
    print(&format!("{}\n", crate::text::json_visible(&v.to_string())))
}

fn print(text: &str) -> Result<(), ToolCmdError> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
