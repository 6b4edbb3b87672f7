//! Eliding old tool output on the wire: the request carries a one-line stub instead of
//! an old result (`[output of file_read(path="big.log") elided: 88 KB; run it again if
//! needed]`), oldest first, the newest results whole. Pure: the conversation in memory
//! and the database keep every result as it was.

use super::budget::{Budget, message_chars};
use crate::message::{Data, Kind, Message};

/// The newest tool results are never elided.
pub(crate) const KEEP_NEWEST: usize = 3;
/// Results shorter than this (wire characters) are not worth a stub.
const MIN_ELIDE: u64 = 300;

/// Which messages a request carries as stubs, and the characters left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Indices into the conversation, ascending.
    pub stubbed: Vec<usize>,
    /// Estimated wire characters of the messages with the stubs in place.
    pub chars: u64,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.stubbed.is_empty()
    }
}

/// Plans stubs until the messages take at most `target` characters: first messages
/// too large for the window that are not the latest user message, then tool results
/// from the oldest, keeping the newest `keep` results whole. `budget` must be synced
/// with `messages`.
pub(crate) fn plan(messages: &[Message], budget: &Budget, target: u64, keep: usize) -> Plan {
    let mut chars = budget.messages_chars();
    let mut stubbed = Vec::new();
    let last_user = messages.iter().rposition(|m| m.kind == Kind::User);
    // A message bigger than a tool result may be, before the current request.
    let huge = budget.tool_cap(usize::MAX) as u64;
    for (i, m) in messages.iter().enumerate() {
        if Some(i) >= last_user {
            break;
        }
        if matches!(m.kind, Kind::User | Kind::Assistant) && budget.size(i) > huge {
            let stub = message_chars(&stub_message(messages, i));
            chars = chars - budget.size(i) + stub;
            stubbed.push(i);
        }
    }
    let results: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.kind == Kind::ToolResult)
        .map(|(i, _)| i)
        .collect();
    let candidates = results.len().saturating_sub(keep);
    for &i in &results[..candidates] {
        if chars <= target {
            break;
        }
        let size = budget.size(i);
        if size < MIN_ELIDE {
            continue;
        }
        let stub = message_chars(&stub_message(messages, i));
        if stub < size {
            chars = chars - size + stub;
            stubbed.push(i);
        }
    }
    stubbed.sort_unstable();
    Plan { stubbed, chars }
}

/// The messages as the request carries them.
pub(crate) fn apply(messages: &[Message], plan: &Plan) -> Vec<Message> {
    // One pass in order (`stubbed` is sorted): a stubbed message is never copied first.
    let mut stubs = plan.stubbed.iter().copied().peekable();
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        while stubs.next_if(|&s| s < i).is_some() {}
        if stubs.next_if_eq(&i).is_some() {
            out.push(stub_message(messages, i));
        } else {
            out.push(m.clone());
        }
    }
    out
}

/// Message `i` replaced by its stub (the same kind, ids and pairing).
pub(crate) fn stub_message(messages: &[Message], i: usize) -> Message {
    let m = &messages[i];
    match (&m.kind, m.data.as_deref()) {
        (Kind::ToolResult, Some(Data::ToolResult(r))) => {
            let call = call_summary(messages, i, &r.tool_call_id).unwrap_or_else(|| format!("{}(…)", r.name));
            let text = format!(
                "[output of {call} elided: {}; run it again if needed]",
                human_bytes(r.output.len())
            );
            Message::tool_result(&r.tool_call_id, &r.name, m.content.clone(), text, r.success)
        }
        _ => Message {
            kind: m.kind,
            content: format!(
                "[message of {} elided: too large for the context window]",
                human_bytes(m.content.len())
            ),
            data: m.data.clone(),
        },
    }
}

/// The call summary (`file_read(path="big.log")`) of the call `id` answered at `i`.
fn call_summary(messages: &[Message], i: usize, id: &str) -> Option<String> {
    messages[..i]
        .iter()
        .rev()
        .take(256)
        .find(|m| m.as_tool_call().is_some_and(|c| c.id == id))
        .map(|m| m.content.clone())
}

/// `88 KB`, `512 bytes`.
pub(crate) fn human_bytes(n: usize) -> String {
    match n {
        0..1024 => format!("{n} bytes"),
        1024..1_048_576 => format!("{} KB", (n + 512) / 1024),
        _ => format!("{:.1} MB", n as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::budget::WindowSource;

    fn session(n: usize, size: usize) -> Vec<Message> {
        let mut m = vec![Message::user("read them all")];
        for i in 0..n {
            let id = format!("c{i}");
            m.push(Message::tool_call(
                &id,
                "file_read",
                format!(r#"{{"path":"f{i}.log"}}"#),
            ));
            m.push(Message::tool_result(
                &id,
                "file_read",
                "ok",
                "x".repeat(size),
                true,
            ));
        }
        m
    }

    #[test]
    fn stubs_oldest_results_first_and_keeps_the_newest_whole() {
        let msgs = session(10, 4000);
        let mut b = Budget::new(16_384, WindowSource::Config, None, 0.85, 0.25);
        b.sync(&msgs);
        let p = plan(&msgs, &b, 20_000, KEEP_NEWEST);
        assert!(!p.is_empty() && p.chars <= 20_000, "{p:?}");
        assert_eq!(p.stubbed[0], 2, "the oldest result goes first");
        let wire = apply(&msgs, &p);
        let results: Vec<&Message> = wire.iter().filter(|m| m.kind == Kind::ToolResult).collect();
        for r in &results[results.len() - KEEP_NEWEST..] {
            assert_eq!(r.as_tool_result().unwrap().output.len(), 4000);
        }
        assert_eq!(
            results[0].as_tool_result().unwrap().output,
            r#"[output of file_read(path="f0.log") elided: 4 KB; run it again if needed]"#
        );
        // Pairing and ids are untouched.
        assert_eq!(wire.len(), msgs.len());
        assert_eq!(results[0].as_tool_result().unwrap().tool_call_id, "c0");
        // Nothing to do under the target.
        assert!(plan(&msgs, &b, u64::MAX, KEEP_NEWEST).is_empty());
    }

    #[test]
    fn apply_replaces_exactly_the_planned_messages_and_copies_the_rest() {
        let msgs = session(12, 4000);
        let mut b = Budget::new(16_384, WindowSource::Config, None, 0.85, 0.25);
        b.sync(&msgs);
        let p = plan(&msgs, &b, 20_000, KEEP_NEWEST);
        assert!(p.stubbed.len() > 2, "{p:?}");
        let wire = apply(&msgs, &p);
        assert_eq!(wire.len(), msgs.len());
        for (i, (w, m)) in wire.iter().zip(&msgs).enumerate() {
            if p.stubbed.contains(&i) {
                assert_eq!(*w, stub_message(&msgs, i), "message {i}");
                assert_ne!(w, m, "message {i}");
            } else {
                assert_eq!(w, m, "message {i}");
            }
        }
        // A plan naming a message twice stubs it once and still stubs the later ones.
        let twice = Plan {
            stubbed: vec![p.stubbed[0], p.stubbed[0], p.stubbed[1]],
            chars: p.chars,
        };
        let wire = apply(&msgs, &twice);
        assert_eq!(wire[p.stubbed[1]], stub_message(&msgs, p.stubbed[1]));
    }

    #[test]
    fn a_huge_old_message_is_stubbed_but_the_latest_request_is_not() {
        let big = "y".repeat(100_000);
        let msgs = vec![
            Message::user(big.clone()),
            Message::assistant("ok"),
            Message::user(big),
        ];
        let mut b = Budget::new(8192, WindowSource::Config, None, 0.85, 0.25);
        b.sync(&msgs);
        let p = plan(&msgs, &b, 0, KEEP_NEWEST);
        assert_eq!(p.stubbed, vec![0]);
        let wire = apply(&msgs, &p);
        assert!(
            wire[0].content.starts_with("[message of 98 KB elided"),
            "{}",
            wire[0].content
        );
        assert_eq!(wire[2].content.len(), 100_000);
    }
}
