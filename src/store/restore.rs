//! Rebuilds a conversation from stored records. Pure.
//! (Placeholder until the store module lands; replaced by the full version.)

use crate::message::{Conversation, Message};

use super::Record;

/// What a restore yields.
#[derive(Clone, Debug, Default)]
pub struct Restored {
    pub conversation: Conversation,
    pub model: Option<String>,
    pub repairs: Vec<Message>,
    pub usage: (u64, u64),
}

/// The conversation the records describe, with orphan tool calls repaired.
pub fn rebuild(records: &[Record]) -> Restored {
    let mut r = Restored::default();
    for rec in records {
        match rec {
            Record::Message(m) => r.conversation.push(m.clone()),
            Record::Marker { kind, data } if kind == "model" => {
                r.model = data.get("model").and_then(|v| v.as_str()).map(str::to_string);
            }
            Record::Marker { .. } => {}
        }
    }
    r.repairs = r.conversation.repair_orphans();
    r
}
