//! Turns a stored session's records back into the conversation the agent continues:
//! messages after the last `new` marker (from the latest compaction on: its summary, the
//! messages it kept whole and what came after), the last model, token usage, and results
//! for tool calls that never got one. Pure; the caller stores the repairs.

use serde_json::Value;

use super::{MarkerKind, Record};
use crate::message::{Conversation, Message};
use crate::tool_vocab::envelope::interrupted_result;

/// What a resumed session starts from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Restored {
    /// The canonical messages after the last `new` marker, in order, repairs appended.
    pub conversation: Conversation,
    /// The model of the last `model` marker anywhere in the session.
    pub model: Option<String>,
    /// The provider of that marker (`None` when it names none: it predates switching).
    pub provider: Option<String>,
    /// Error results added for tool calls that had none (already in `conversation`);
    /// the caller records them so the stored session matches.
    pub repairs: Vec<Message>,
    /// Input and output tokens of the `usage` markers after the last `new` marker.
    pub usage: (u64, u64),
    /// Those markers per model, with their cost where it was priced.
    pub spend: crate::spend::Spend,
    /// Where turns were interrupted (`interrupted` markers): the number of messages of
    /// `conversation` before each mark.
    pub interrupted: Vec<usize>,
    /// The `checkpoint` markers after the last `new` marker that no `undo` marker undid,
    /// in order (their JSON; `checkpoints::Checkpoint` reads them).
    pub checkpoints: Vec<Value>,
}

/// Rebuilds a session from its records (copying them; see `rebuild_owned`).
pub fn rebuild(records: &[Record]) -> Restored {
    rebuild_owned(records.to_vec())
}

/// Rebuilds a session from its records, moving the messages instead of copying them.
pub fn rebuild_owned(records: Vec<Record>) -> Restored {
    let mut b = Rebuilder::default();
    records.into_iter().for_each(|r| b.push(r));
    b.finish()
}

/// Rebuilds a session one record at a time, in order, so a restore never holds every
/// record at once: only the conversation it builds.
#[derive(Debug, Default)]
pub struct Rebuilder {
    restored: Restored,
    /// How many records were pushed.
    count: usize,
}

impl Rebuilder {
    /// A rebuilder with room for `messages` messages and the next turns.
    pub fn with_capacity(messages: usize) -> Self {
        let mut b = Rebuilder::default();
        b.restored.conversation.messages.reserve_exact(room(messages));
        b
    }

    /// Takes the next record.
    pub fn push(&mut self, r: Record) {
        self.count += 1;
        let st = &mut self.restored;
        match r {
            Record::Message(m) if m.as_compaction().is_some() => {
                // The summary stands for everything before it but the last `kept`.
                let kept = m.as_compaction().map_or(0, |c| c.kept);
                let msgs = &mut st.conversation.messages;
                let cut = msgs.len().saturating_sub(kept);
                // Marks inside the kept tail move with it; the rest are summarized away.
                st.interrupted = st
                    .interrupted
                    .iter()
                    .filter(|&&at| at > cut)
                    .map(|&at| at - cut + 1)
                    .collect();
                let tail = msgs.split_off(cut);
                msgs.clear();
                msgs.push(m);
                msgs.extend(tail);
            }
            Record::Message(m) => st.conversation.push(m),
            Record::Marker {
                kind: MarkerKind::New,
                ..
            } => {
                // Only what follows the last `new` marker is the conversation (the room
                // made for it is kept).
                st.conversation.messages.clear();
                st.usage = (0, 0);
                st.spend = Default::default();
                st.interrupted.clear();
                st.checkpoints.clear();
            }
            Record::Marker {
                kind: MarkerKind::Checkpoint,
                data,
            } => st.checkpoints.push(data),
            Record::Marker {
                kind: MarkerKind::Undo,
                data,
            } => {
                let undone: Vec<&str> = data
                    .get("checkpoints")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                st.checkpoints
                    .retain(|c| !undone.contains(&c.get("id").and_then(Value::as_str).unwrap_or("")));
            }
            Record::Marker {
                kind: MarkerKind::Model,
                data,
            } => {
                // The last marker naming a model wins, before or after `new`.
                if let Some(m) = data.get("model").and_then(Value::as_str) {
                    st.model = Some(m.to_string());
                    st.provider = data.get("provider").and_then(Value::as_str).map(str::to_string);
                }
            }
            Record::Marker {
                kind: MarkerKind::Usage,
                data,
            } => {
                let n = |k: &str| data.get(k).and_then(Value::as_u64).unwrap_or(0);
                st.usage.0 = st.usage.0.saturating_add(n("input"));
                st.usage.1 = st.usage.1.saturating_add(n("output"));
                // Markers older than prices name no model: the session's model then.
                let model = data
                    .get("model")
                    .and_then(Value::as_str)
                    .or(st.model.as_deref())
                    .unwrap_or("unknown")
                    .to_string();
                let cost = data.get("cost").and_then(Value::as_f64);
                st.spend.add(&model, n("input"), n("cached"), n("output"), cost);
            }
            Record::Marker {
                kind: MarkerKind::Interrupted,
                ..
            } => {
                let at = st.conversation.len();
                if st.interrupted.last() != Some(&at) {
                    st.interrupted.push(at);
                }
            }
            Record::Marker { .. } => {}
        }
    }

    /// How many records were pushed so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The session, with results added for unanswered tool calls, and room for the next
    /// turns rather than all the room doubling left.
    pub fn finish(mut self) -> Restored {
        let st = &mut self.restored;
        st.repairs = st
            .conversation
            .orphan_tool_calls()
            .into_iter()
            .map(|c| interrupted_result(&c.id, &c.function.name, None))
            .collect();
        st.conversation.messages.extend(st.repairs.iter().cloned());
        let len = st.conversation.messages.len();
        st.conversation.messages.shrink_to(room(len));
        self.restored
    }
}

/// Room for `len` messages and the next turns (a sixteenth more), so a resumed session's
/// first turns do not double a long conversation's room.
fn room(len: usize) -> usize {
    len + len / 16 + 16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Kind;
    use crate::tool_vocab::envelope::INTERRUPTED_TOOL_ERROR;
    use serde_json::json;

    fn marker(kind: &str, data: Value) -> Record {
        Record::Marker {
            kind: MarkerKind::parse(kind),
            data,
        }
    }

    fn msg(m: Message) -> Record {
        Record::Message(m)
    }

    /// The rebuilt conversation's message texts, in order.
    fn texts(r: &Restored) -> Vec<&str> {
        r.conversation
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect()
    }

    #[test]
    fn empty_session_rebuilds_to_nothing() {
        assert_eq!(rebuild(&[]), Restored::default());
    }

    #[test]
    fn keeps_messages_in_order_and_sums_usage() {
        let records = vec![
            marker("model", json!({"model": "m1"})),
            msg(Message::user("list files")),
            msg(Message::assistant("Sure.")),
            msg(Message::tool_call("c1", "glob", r#"{"pattern":"*"}"#)),
            msg(Message::tool_result(
                "c1",
                "glob",
                "2 files",
                r#"{"tool_success":true}"#,
                true,
            )),
            marker("usage", json!({"input": 100, "output": 20})),
            msg(Message::assistant("Two files.")),
            marker("usage", json!({"input": 150, "output": 5})),
        ];
        let r = rebuild(&records);
        let kinds: Vec<Kind> = r.conversation.messages.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::User,
                Kind::Assistant,
                Kind::ToolCall,
                Kind::ToolResult,
                Kind::Assistant
            ]
        );
        assert_eq!(r.model.as_deref(), Some("m1"));
        assert_eq!(r.usage, (250, 25));
        assert!(r.repairs.is_empty());
    }

    #[test]
    fn orphan_tool_calls_get_interrupted_results() {
        let records = vec![
            msg(Message::user("run it")),
            msg(Message::tool_call("a", "bash", r#"{"command":"sleep 100"}"#)),
            msg(Message::tool_call("b", "glob", "{}")),
            msg(Message::tool_result("b", "glob", "0 files", "{}", true)),
            marker("interrupted", json!({})),
        ];
        let r = rebuild(&records);
        assert_eq!(r.repairs.len(), 1);
        let fix = r.repairs[0].as_tool_result().unwrap();
        assert_eq!(fix.tool_call_id, "a");
        assert_eq!(fix.name, "bash");
        assert!(!fix.success);
        assert_eq!(r.repairs[0].content, INTERRUPTED_TOOL_ERROR);
        assert_eq!(r.conversation.messages.last(), Some(&r.repairs[0]));
        assert!(r.conversation.orphan_tool_calls().is_empty());
        // Stored repairs make the next rebuild clean.
        let mut again = records.clone();
        again.extend(r.repairs.iter().cloned().map(Record::Message));
        let r2 = rebuild(&again);
        assert!(r2.repairs.is_empty());
        assert_eq!(r2.conversation, r.conversation);
    }

    #[test]
    fn only_messages_after_the_last_new_marker_count() {
        let records = vec![
            marker("model", json!({"model": "old"})),
            msg(Message::user("first")),
            msg(Message::tool_call("x", "bash", "{}")),
            marker("usage", json!({"input": 9, "output": 9})),
            marker("new", json!({})),
            msg(Message::user("second")),
            marker("new", json!({})),
            marker("model", json!({"model": "new"})),
            msg(Message::user("third")),
            marker("usage", json!({"input": 1, "output": 2})),
        ];
        let r = rebuild(&records);
        assert_eq!(r.conversation.messages, vec![Message::user("third")]);
        assert!(r.repairs.is_empty(), "orphans before `new` are not repaired");
        assert_eq!(r.model.as_deref(), Some("new"));
        assert_eq!(r.usage, (1, 2));
        let r = rebuild(&records[..6]);
        assert_eq!(r.conversation.messages, vec![Message::user("second")]);
        assert_eq!(r.model.as_deref(), Some("old"));
    }

    #[test]
    fn interrupted_marks_keep_their_place_through_a_compaction() {
        let records = vec![
            msg(Message::user("a")),
            msg(Message::assistant("half")),
            marker("interrupted", json!({})),
            msg(Message::user("b")),
            msg(Message::assistant("also half")),
            marker("interrupted", json!({"reason": "cut"})),
            msg(Message::user("c")),
        ];
        assert_eq!(rebuild(&records).interrupted, [2, 4]);
        // Summarised with the last 3 messages kept: the first mark went with the rest.
        let mut compacted = records.clone();
        compacted.push(msg(Message::compaction("summary", 5, 3)));
        compacted.push(msg(Message::assistant("done")));
        let r = rebuild(&compacted);
        let texts = texts(&r);
        assert_eq!(texts, ["summary", "b", "also half", "c", "done"]);
        assert_eq!(r.interrupted, [3], "after `also half`");
    }

    #[test]
    fn the_latest_compaction_stands_for_what_came_before_it() {
        let mut records = vec![msg(Message::user("first task"))];
        for i in 0..3 {
            records.push(msg(Message::tool_call(format!("c{i}"), "bash", "{}")));
            records.push(msg(Message::tool_result(
                format!("c{i}"),
                "bash",
                "ok",
                "out",
                true,
            )));
        }
        // Summarised with the last call and its result kept whole.
        records.push(msg(Message::compaction("summary one", 7, 2)));
        records.push(msg(Message::assistant("done")));
        records.push(msg(Message::user("second task")));
        records.push(msg(Message::compaction("summary two", 11, 1)));
        records.push(msg(Message::assistant("on it")));
        let r = rebuild(&records);
        let texts = texts(&r);
        assert_eq!(texts, ["summary two", "second task", "on it"]);
        let r = rebuild(&records[..9]);
        let kinds: Vec<Kind> = r.conversation.messages.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Compaction,
                Kind::ToolCall,
                Kind::ToolResult,
                Kind::Assistant
            ]
        );
        assert!(r.repairs.is_empty());
    }

    #[test]
    fn checkpoints_are_kept_until_undone_or_a_new_session() {
        let cp = |id: &str| marker("checkpoint", json!({"id": id, "files": []}));
        let records = vec![
            cp("gone"),
            marker("new", json!({})),
            cp("a"),
            cp("b"),
            cp("c"),
            marker("undo", json!({"checkpoints": ["c", "b"]})),
            cp("d"),
        ];
        let ids: Vec<Value> = rebuild(&records)
            .checkpoints
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        assert_eq!(ids, [json!("a"), json!("d")]);
    }

    #[test]
    fn odd_markers_are_ignored() {
        let records = vec![
            marker("model", json!({"name": "no model key"})),
            marker("usage", json!({"input": "lots"})),
            marker("something_else", Value::Null),
            msg(Message::user("hi")),
        ];
        let r = rebuild(&records);
        assert_eq!(r.model, None);
        assert_eq!(r.usage, (0, 0));
        assert_eq!(r.conversation.len(), 1);
    }
}
