//! Slash commands in the editor: the list the editor offers (`available_commands_update`:
//! the built-in commands that make sense there, and the user's and a trusted project's
//! custom commands, each with its description and argument hint), what a prompt that
//! starts with `/` does (a custom command's message, a typed `Op`, or a text answered
//! here), and how the agent's answers to a command read as text. Data only: sends nothing.
//! Session commands (`/new`, `/resume`, `/sessions`) and `/exit` are the editor's own
//! business and are not offered.

use agent_client_protocol::v1::schema::{AvailableCommand, AvailableCommandInput, UnstructuredCommandInput};

use crate::protocol::{Event, Op};
use crate::ui::custom_commands::CustomCommands;
use crate::ui::slash::{self, Slash};

/// The built-in commands offered in the editor (the rest belong to the editor or to a
/// terminal).
const OFFERED: &[&str] = &[
    "/help",
    "/model",
    "/compact",
    "/cost",
    "/permissions",
    "/undo",
    "/checkpoints",
    "/memory",
    "/hooks",
    "/refresh",
];

/// What the editor lists: the offered built-ins, then the custom commands (a custom
/// command never takes a built-in's name: `custom_commands` refuses it).
pub(crate) fn available(custom: &CustomCommands) -> Vec<AvailableCommand> {
    let entry = |name: &str, hint: &str, what: &str| {
        let mut c = AvailableCommand::new(name.trim_start_matches('/').to_string(), what.to_string());
        if !hint.is_empty() {
            c = c.input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new(hint.to_string()),
            ));
        }
        c
    };
    let mut out: Vec<AvailableCommand> = slash::COMMANDS
        .iter()
        .filter(|(name, _, _)| OFFERED.contains(name))
        .map(|(name, hint, what)| entry(name, hint, what))
        .collect();
    for c in custom.iter() {
        let what = if c.description.is_empty() {
            "custom command"
        } else {
            c.description.as_str()
        };
        out.push(entry(&c.name, &c.arguments, what));
    }
    out
}

/// What a prompt's text does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Prompt {
    /// A message for the model (plain text, `//text`, or a custom command's message).
    Message(String),
    /// A command the agent answers with events.
    Agent(Op),
    /// A command answered here: the text to show.
    Answer(String),
    /// A command that cannot run: why.
    Refused(String),
}

/// Reads a prompt's text: a message, or a command.
pub(crate) fn read(text: &str, custom: &CustomCommands) -> Prompt {
    let Some(cmd) = slash::parse(text) else {
        return Prompt::Message(slash::message_text(text));
    };
    if let Slash::Unknown(_) = cmd
        && let Some(expanded) = custom.expand(text)
    {
        return match expanded {
            Ok(message) => Prompt::Message(message),
            Err(why) => Prompt::Refused(why),
        };
    }
    let name = text.split_whitespace().next().unwrap_or("");
    match cmd {
        Slash::Help => {
            let mut t = String::new();
            for (name, hint, what) in slash::COMMANDS.iter().filter(|(n, _, _)| OFFERED.contains(n)) {
                let usage = if hint.is_empty() {
                    name.to_string()
                } else {
                    format!("{name} {hint}")
                };
                t.push_str(&format!("- `{usage}`: {what}\n"));
            }
            let more = custom.help_text();
            if !more.is_empty() {
                t.push('\n');
                t.push_str(&more);
            }
            t.push_str("\nStart a message with // to send one that begins with a slash.\n");
            Prompt::Answer(t)
        }
        Slash::Agent(op) if OFFERED.contains(&command_of(&op)) => Prompt::Agent(op),
        Slash::Usage(text) => Prompt::Refused(text),
        Slash::Unknown(_) => Prompt::Refused(format!(
            "unknown command {name} (/help lists them; start with // to send it as a message)"
        )),
        _ => Prompt::Refused(format!(
            "{name} is not available in the editor (/help lists the commands that are)"
        )),
    }
}

/// The offered command an op stands for.
fn command_of(op: &Op) -> &'static str {
    match op {
        Op::SetModel(_) | Op::ListModels => "/model",
        Op::Compact(_) => "/compact",
        Op::Spend => "/cost",
        Op::ListPermissions | Op::ForgetPermission(_) => "/permissions",
        Op::Undo { .. } => "/undo",
        Op::ListCheckpoints => "/checkpoints",
        Op::ListInstructions => "/memory",
        Op::ListHooks => "/hooks",
        Op::RefreshTools => "/refresh",
        _ => "",
    }
}

/// How an answer to a command reads in the editor; `None` for events that are not one.
pub(crate) fn answer_text(ev: &Event) -> Option<String> {
    Some(match ev {
        Event::Notice { text, .. } => text.clone(),
        Event::Providers { providers } => crate::ui::models::text(providers),
        Event::ModelChanged { model, provider } => format!("Model: {provider}/{model}"),
        Event::Compacted { before, after } => crate::ui::compacted_text(*before, *after),
        Event::Spend { models, cost } => crate::ui::cost::format_spend(models, *cost),
        Event::Permissions {
            mode,
            rules,
            remembered,
            session,
        } => crate::ui::permissions_cmd::format_list(*mode, rules, remembered, session),
        Event::UndoRefused { turns, files } => crate::checkpoints::undo::refused_text(*turns, files, false),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_is_offered_the_commands_that_work_there_with_their_hints() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("commands");
        std::fs::create_dir(&user).unwrap();
        std::fs::write(
            user.join("review.md"),
            "---\ndescription: review a file\narguments: FILE\n---\nReview $1 carefully.\n",
        )
        .unwrap();
        let (custom, _) = CustomCommands::load_from(Some(&user), dir.path(), false);
        let list = available(&custom);
        let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        for want in ["compact", "cost", "model", "undo", "memory", "review"] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        for not in [
            "new", "resume", "sessions", "exit", "quit", "tools", "config", "mcp",
        ] {
            assert!(!names.contains(&not), "{not}: {names:?}");
        }
        let review = list.iter().find(|c| c.name == "review").unwrap();
        assert_eq!(review.description, "review a file");
        assert!(matches!(&review.input, Some(AvailableCommandInput::Unstructured(u)) if u.hint == "FILE"));
        let model = list.iter().find(|c| c.name == "model").unwrap();
        assert!(model.input.is_some() && !model.description.is_empty());
        // What each offered command does when the editor sends it.
        for (text, want) in [
            ("/cost", Some(Prompt::Agent(Op::Spend))),
            (
                "/compact keep the plan",
                Some(Prompt::Agent(Op::Compact(Some("keep the plan".into())))),
            ),
            (
                "/review src/a.rs",
                Some(Prompt::Message("Review src/a.rs carefully.".into())),
            ),
            (
                "//etc is a folder",
                Some(Prompt::Message("/etc is a folder".into())),
            ),
            ("plain words", Some(Prompt::Message("plain words".into()))),
            ("/new", None),
            ("/resume abc", None),
            ("/exit", None),
            ("/nosuch", None),
            ("/undo x", None),
        ] {
            let got = read(text, &custom);
            match want {
                Some(w) => assert_eq!(got, w, "{text}"),
                None => assert!(matches!(got, Prompt::Refused(_)), "{text}: {got:?}"),
            }
        }
        assert!(matches!(read("/help", &custom), Prompt::Answer(t) if t.contains("/review FILE")));
    }
}
