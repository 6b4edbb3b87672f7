//! Session persistence: the event log (SQLite or PostgreSQL) behind one trait.
//! The agent only sends `Record`s down a channel; a writer task owns the database.

use serde_json::Value;

use crate::message::Message;

/// What the agent hands to the store, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A canonical message, stored as its own event.
    Message(Message),
    /// A non-message event a restore needs (model switch, usage, interruption, /new).
    Marker { kind: String, data: Value },
}

/// The sending side the agent holds; sending never waits on the database.
pub type RecordSender = tokio::sync::mpsc::UnboundedSender<Record>;
