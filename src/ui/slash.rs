//! Slash commands, parsed once for both front ends: a line starting with `/` becomes a
//! typed `Op` for the agent or a command the front end answers itself. `//text` is a
//! message that starts with `/`. Pure; rendering the answers is each front end's job.

use crate::protocol::Op;

/// Every command with its argument hint and one-line help.
pub(crate) const COMMANDS: &[(&str, &str, &str)] = &[
    ("/help", "", "show keys and commands"),
    ("/new", "", "start a new session"),
    ("/sessions", "", "list stored sessions"),
    (
        "/resume",
        "ID",
        "resume a stored session (a unique id prefix is enough)",
    ),
    (
        "/model",
        "[PROVIDER/MODEL]",
        "list providers and models; switch with PROVIDER/MODEL (or MODEL)",
    ),
    (
        "/compact",
        "",
        "summarise the conversation to free context (text after it guides the summary)",
    ),
    ("/tools", "", "list the tools the model may call"),
    ("/tool", "NAME", "show a tool's schema"),
    (
        "/refresh",
        "",
        "rescan the tool folders, restart failed MCP servers",
    ),
    (
        "/mcp",
        "[NAME | restart NAME]",
        "MCP servers: status and tools; restart one",
    ),
    ("/config", "", "show the effective settings (secrets redacted)"),
    ("/cost", "", "tokens and cost of this session, per model"),
    (
        "/permissions",
        "[rm N|RULE]",
        "approval mode, rules and remembered answers; forget one",
    ),
    (
        "/undo",
        "[N] [--force]",
        "put back the files the last (N) turns changed",
    ),
    ("/checkpoints", "", "list the turns /undo can put back"),
    ("/hooks", "", "the configured hooks and where each comes from"),
    ("/skills", "", "the loaded skills and where each comes from"),
    (
        "/skill",
        "NAME [PROMPT]",
        "send PROMPT with the skill NAME loaded (also $NAME in a message)",
    ),
    (
        "/memory",
        "",
        "the instruction files (AGENTS.md, CLAUDE.md) read, in order, with sizes",
    ),
    ("/exit", "", "quit (also /quit, Ctrl+D)"),
    ("/quit", "", "quit"),
];

/// What a line starting with `/` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Slash {
    /// For the agent.
    Agent(Op),
    Help,
    Exit,
    Tools,
    Tool(Option<String>),
    Config,
    /// `/mcp` (every server) or `/mcp NAME` (its tools).
    Mcp(Option<String>),
    /// A known command used wrongly; the text says how to use it.
    Usage(String),
    /// No such command; carries its name.
    Unknown(String),
}

/// Parses `input` as a slash command; `None` when it is a message (see `message_text`;
/// `/skill NAME PROMPT` is one, read by the agent).
pub(crate) fn parse(input: &str) -> Option<Slash> {
    let t = input.trim();
    if !t.starts_with('/') || t.starts_with("//") {
        return None;
    }
    let (name, arg) = match t.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (t, ""),
    };
    // `/skill NAME PROMPT` is a message: the agent sends PROMPT with the skill (or says
    // there is none of that name, and sends nothing).
    if name == "/skill" && !arg.is_empty() {
        return None;
    }
    let arg = (!arg.is_empty()).then(|| arg.to_string());
    Some(match (name, arg) {
        ("/help" | "/?", _) => Slash::Help,
        ("/exit" | "/quit", _) => Slash::Exit,
        ("/tools", _) => Slash::Tools,
        ("/tool", arg) => Slash::Tool(arg),
        ("/config", _) => Slash::Config,
        ("/cost", _) => Slash::Agent(Op::Spend),
        ("/new", _) => Slash::Agent(Op::NewSession),
        ("/sessions", _) => Slash::Agent(Op::ListSessions),
        ("/refresh", _) => Slash::Agent(Op::RefreshTools),
        ("/resume", Some(id)) => Slash::Agent(Op::Resume(id)),
        ("/resume", None) => Slash::Usage("usage: /resume ID (see /sessions)".into()),
        ("/model", Some(m)) => Slash::Agent(Op::SetModel(m)),
        ("/model", None) => Slash::Agent(Op::ListModels),
        ("/compact", arg) => Slash::Agent(Op::Compact(arg)),
        ("/permissions", None) => Slash::Agent(Op::ListPermissions),
        ("/permissions", Some(arg)) => match arg.split_once(char::is_whitespace) {
            Some(("rm" | "remove", which)) => Slash::Agent(Op::ForgetPermission(which.trim().to_string())),
            _ => Slash::Usage(
                "usage: /permissions (list), /permissions rm N (forget remembered answer N)".into(),
            ),
        },
        ("/mcp", None) => Slash::Mcp(None),
        ("/mcp", Some(arg)) => match arg.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["restart", name] => Slash::Agent(Op::RestartMcp(name.to_string())),
            ["restart", ..] => Slash::Usage("usage: /mcp restart NAME (see /mcp)".into()),
            [name] => Slash::Mcp(Some(name.to_string())),
            _ => Slash::Usage("usage: /mcp, /mcp NAME or /mcp restart NAME".into()),
        },
        ("/undo", arg) => undo(arg.as_deref().unwrap_or("")),
        ("/checkpoints", _) => Slash::Agent(Op::ListCheckpoints),
        ("/memory" | "/agents-md", _) => Slash::Agent(Op::ListInstructions),
        ("/hooks", _) => Slash::Agent(Op::ListHooks),
        ("/skills", _) => Slash::Agent(Op::ListSkills),
        ("/skill", None) => Slash::Usage("usage: /skill NAME [PROMPT] (see /skills)".into()),
        (name, _) => Slash::Unknown(name.to_string()),
    })
}

/// `/undo [N] [--force]`.
fn undo(arg: &str) -> Slash {
    let mut turns = 1;
    let mut force = false;
    for word in arg.split_whitespace() {
        match (word, word.parse::<usize>()) {
            ("--force" | "-f", _) => force = true,
            (_, Ok(n)) if n > 0 => turns = n,
            _ => {
                return Slash::Usage(
                    "usage: /undo [N] [--force] (N turns back; --force overwrites files changed since)"
                        .into(),
                );
            }
        }
    }
    Slash::Agent(Op::Undo { turns, force })
}

/// The message a non-command line sends: `//text` sends `/text`, anything else as typed.
pub(crate) fn message_text(input: &str) -> String {
    match input.trim_start().strip_prefix("//") {
        Some(rest) => format!("/{rest}"),
        None => input.to_string(),
    }
}

/// `/help` as plain text: one aligned line per command, then the `//` tip.
pub(crate) fn help_text() -> String {
    let usage: Vec<String> = COMMANDS
        .iter()
        .map(|(name, arg, _)| {
            if arg.is_empty() {
                name.to_string()
            } else {
                format!("{name} {arg}")
            }
        })
        .collect();
    let width = usage.iter().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (u, (_, _, what)) in usage.iter().zip(COMMANDS) {
        out.push_str(&format!("{u:<width$}  {what}\n"));
    }
    out.push_str("Start a line with // to send a message that begins with a slash.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_become_typed_ops_or_local_commands() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("//etc is a dir"), None);
        assert_eq!(parse("/help"), Some(Slash::Help));
        assert_eq!(parse(" /quit "), Some(Slash::Exit));
        assert_eq!(parse("/compact"), Some(Slash::Agent(Op::Compact(None))));
        assert_eq!(
            parse("/undo"),
            Some(Slash::Agent(Op::Undo {
                turns: 1,
                force: false
            }))
        );
        assert_eq!(
            parse("/undo 3 --force"),
            Some(Slash::Agent(Op::Undo {
                turns: 3,
                force: true
            }))
        );
        assert!(matches!(parse("/undo 0"), Some(Slash::Usage(_))));
        assert_eq!(parse("/checkpoints"), Some(Slash::Agent(Op::ListCheckpoints)));
        assert_eq!(
            parse("/compact keep the paths"),
            Some(Slash::Agent(Op::Compact(Some("keep the paths".into()))))
        );
        assert_eq!(parse("/tool glob"), Some(Slash::Tool(Some("glob".into()))));
        assert_eq!(
            parse("/model gpt-5"),
            Some(Slash::Agent(Op::SetModel("gpt-5".into())))
        );
        assert_eq!(parse("/model"), Some(Slash::Agent(Op::ListModels)));
        assert_eq!(
            parse("/resume 0193"),
            Some(Slash::Agent(Op::Resume("0193".into())))
        );
        assert!(matches!(parse("/resume"), Some(Slash::Usage(_))));
        assert_eq!(parse("/new"), Some(Slash::Agent(Op::NewSession)));
        assert_eq!(parse("/sessions"), Some(Slash::Agent(Op::ListSessions)));
        assert_eq!(parse("/frob x"), Some(Slash::Unknown("/frob".into())));
        assert_eq!(parse("/mcp"), Some(Slash::Mcp(None)));
        assert_eq!(parse("/mcp gh"), Some(Slash::Mcp(Some("gh".into()))));
        assert_eq!(
            parse("/mcp restart gh"),
            Some(Slash::Agent(Op::RestartMcp("gh".into())))
        );
        assert!(matches!(parse("/mcp restart"), Some(Slash::Usage(_))));
        assert!(matches!(parse("/mcp a b"), Some(Slash::Usage(_))));
        assert_eq!(parse("/skills"), Some(Slash::Agent(Op::ListSkills)));
        assert!(matches!(parse("/skill"), Some(Slash::Usage(_))));
        assert_eq!(parse("/skill fmt tidy src/"), None, "a message");
        assert_eq!(message_text("/skill fmt tidy"), "/skill fmt tidy");
    }

    #[test]
    fn double_slash_sends_one_slash() {
        assert_eq!(message_text("//etc is a dir"), "/etc is a dir");
        assert_eq!(message_text("plain"), "plain");
    }

    #[test]
    fn help_lists_every_command() {
        let h = help_text();
        for (name, _, _) in COMMANDS {
            assert!(h.contains(name), "{name}");
        }
        assert!(h.contains("/resume ID"));
    }
}
