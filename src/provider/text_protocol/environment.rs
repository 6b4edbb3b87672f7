//! Where a request's environment (the session's folder and date, `Request::environment`)
//! goes: into the first message of the conversation when the history is copied anyway
//! (the text protocol's rewrite, a local preset's example exchange), so that the system
//! prompt and the tool list that chat templates render after it are the same bytes for
//! every session of a project, and a local server's prompt cache keeps them from one
//! session to the next; else after the system prompt, as it always was. Pure: no IO.

use std::borrow::Cow;

use crate::message::{Data, Kind, Message};

/// The system prompt with `environment` after it (a blank line between, as the default
/// prompt always wrote it).
pub fn after_system<'a>(system: &'a str, environment: &str) -> Cow<'a, str> {
    if environment.is_empty() {
        Cow::Borrowed(system)
    } else {
        Cow::Owned(format!("{system}\n{environment}"))
    }
}

/// Puts `environment` and a blank line before the text of the first message at or after
/// `from` (a user message, or a compaction summary standing in for the start); before a
/// conversation that starts otherwise, as a user message of its own.
pub fn before_first(messages: &mut Vec<Message>, from: usize, environment: &str) {
    if environment.is_empty() || from > messages.len() {
        return;
    }
    match messages.get_mut(from) {
        Some(first) if matches!(first.kind, Kind::User | Kind::Compaction) => {
            let prefix = format!("{}\n\n", environment.trim_end());
            first.content.insert_str(0, &prefix);
            // A typed text's length counts from the start: it now starts later.
            if let Some(Data::Attachments(a)) = first.data.as_deref_mut() {
                a.text_len += prefix.len();
            }
        }
        _ => messages.insert(from, Message::user(environment.trim_end())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = "Working directory: /p\nDate: 2026-01-02\n";

    #[test]
    fn the_environment_opens_the_first_message_after_the_example_and_nothing_else_changes() {
        let original = vec![
            Message::user("example"),
            Message::assistant("shown"),
            Message::user("fix it"),
            Message::assistant("done"),
        ];
        let mut msgs = original.clone();
        before_first(&mut msgs, 2, ENV);
        assert_eq!(
            msgs[2].content,
            "Working directory: /p\nDate: 2026-01-02\n\nfix it"
        );
        assert_eq!((&msgs[..2], &msgs[3..]), (&original[..2], &original[3..]));
    }

    #[test]
    fn a_compacted_start_carries_it_and_any_other_start_gets_a_message_of_its_own() {
        let mut msgs = vec![Message::compaction("what happened", 3, 1), Message::user("go on")];
        before_first(&mut msgs, 0, ENV);
        assert_eq!(msgs.len(), 2);
        assert!(
            msgs[0].content.starts_with("Working directory: /p")
                && msgs[0].content.ends_with("what happened")
        );
        let mut msgs = vec![Message::assistant("hello")];
        before_first(&mut msgs, 0, ENV);
        assert_eq!(
            (msgs[0].kind, msgs[0].content.as_str()),
            (Kind::User, ENV.trim_end())
        );
        let mut empty = Vec::new();
        before_first(&mut empty, 0, ENV);
        assert_eq!(empty.len(), 1);
        // None: nothing changes.
        let mut msgs = vec![Message::user("x")];
        before_first(&mut msgs, 0, "");
        assert_eq!(msgs, vec![Message::user("x")]);
    }

    #[test]
    fn an_attached_files_typed_text_still_ends_where_it_did() {
        let mut msgs = vec![Message::user_with_attachments(
            "read @a.txt",
            "\n<a.txt>x</a.txt>",
            vec!["a.txt".into()],
        )];
        before_first(&mut msgs, 0, ENV);
        assert!(
            msgs[0].typed_text().ends_with("\n\nread @a.txt"),
            "{}",
            msgs[0].typed_text()
        );
    }

    #[test]
    fn after_the_system_prompt_it_is_what_the_default_prompt_always_wrote() {
        assert_eq!(
            after_system("You are ikigai.\n", ENV),
            "You are ikigai.\n\nWorking directory: /p\nDate: 2026-01-02\n"
        );
        assert!(matches!(after_system("s", ""), Cow::Borrowed("s")));
    }
}
