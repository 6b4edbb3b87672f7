//! Slash commands: which exist, which the TUI answers itself and which go to the agent,
//! the closest match for a typo, and completion of command names. Pure.

use crate::protocol::Op;
pub(crate) use crate::ui::slash::COMMANDS;
use crate::ui::slash::{self, Slash};

/// What a line starting with `/` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    Help,
    Exit,
    Tools,
    Tool(Option<String>),
    Config,
    Mcp(Option<String>),
    /// Handled by the agent: the typed op.
    Agent(Op),
    /// A known command used wrongly.
    Usage(String),
    Unknown {
        name: String,
        suggestion: Option<&'static str>,
    },
}

/// Parses `input` as a slash command (the shared `ui::slash` parser); `None` when it is a
/// message (no leading `/`, or `//` to send a message that starts with a slash).
pub(crate) fn parse(input: &str) -> Option<Command> {
    Some(match slash::parse(input)? {
        Slash::Help => Command::Help,
        Slash::Exit => Command::Exit,
        Slash::Tools => Command::Tools,
        Slash::Tool(arg) => Command::Tool(arg),
        Slash::Config => Command::Config,
        Slash::Mcp(name) => Command::Mcp(name),
        Slash::Agent(op) => Command::Agent(op),
        Slash::Usage(text) => Command::Usage(text),
        Slash::Unknown(name) => Command::Unknown {
            suggestion: closest(&name),
            name,
        },
    })
}

/// The command nearest to `name`, only when it is close enough to be a typo of it
/// (`/modle` → `/model`; `/xyz` → nothing).
pub(crate) fn closest(name: &str) -> Option<&'static str> {
    nearest(name, COMMANDS.iter().map(|(c, _, _)| *c))
}

/// The candidate most like `name` when it is a likely typo: a normalized
/// Damerau-Levenshtein similarity of at least 0.6, leading slashes ignored.
pub(crate) fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let bare = name.trim_start_matches('/');
    candidates
        .map(|c| {
            let score = strsim::normalized_damerau_levenshtein(bare, c.trim_start_matches('/'));
            (score, c)
        })
        .filter(|(score, _)| *score >= 0.6)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Command names starting with `prefix`.
pub(crate) fn complete(prefix: &str) -> Vec<&'static str> {
    COMMANDS
        .iter()
        .map(|(c, _, _)| *c)
        .filter(|c| c.starts_with(prefix))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_local_and_agent_commands() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("//etc is a dir"), None);
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(parse(" /quit "), Some(Command::Exit));
        assert_eq!(parse("/tool glob"), Some(Command::Tool(Some("glob".into()))));
        assert_eq!(parse("/tool"), Some(Command::Tool(None)));
        assert_eq!(
            parse("/model gpt-5"),
            Some(Command::Agent(Op::SetModel("gpt-5".into())))
        );
        assert_eq!(
            parse("/resume 0193"),
            Some(Command::Agent(Op::Resume("0193".into())))
        );
    }

    #[test]
    fn unknown_commands_suggest_the_closest() {
        assert_eq!(
            parse("/modle x"),
            Some(Command::Unknown {
                name: "/modle".into(),
                suggestion: Some("/model")
            })
        );
        assert_eq!(closest("/sesions"), Some("/sessions"));
        assert_eq!(closest("/hlep"), Some("/help"));
        assert_eq!(closest("/confg"), Some("/config"));
        assert_eq!(closest("/zzzzzzzzzzzzzzzz"), None);
        // Nothing like any command: no absurd guess.
        for junk in ["/xyz", "/q", "/a", "/foo", "/exot-now-please"] {
            assert_eq!(closest(junk), None, "{junk}");
        }
    }

    #[test]
    fn completes_prefixes() {
        assert_eq!(complete("/to"), ["/tools", "/tool"]);
        assert_eq!(complete("/he"), ["/help"]);
        assert!(complete("/x").is_empty());
    }
}
