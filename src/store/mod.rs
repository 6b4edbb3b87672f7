//! Session persistence: the event log (SQLite or PostgreSQL) behind one trait.
//! The agent queues `Record`s without waiting; a writer task owns the database
//! (`writer/`), `handle.rs` is what callers hold, `channel.rs` what the two share,
//! `lease.rs` keeps one writer per session, `spool.rs` keeps what could not be saved at
//! exit, `restore.rs` rebuilds a conversation from records. Never prints.

mod backend;
mod channel;
mod handle;
mod lease;
pub mod location;
mod postgres;
pub mod restore;
mod spool;
mod sql;
mod sqlite;
mod writer;

pub use backend::title_of;
pub use location::Location;
pub use restore::{Restored, rebuild};
pub use spool::default_spool_dir;
pub use writer::{Options, open, open_with};

use async_trait::async_trait;
use serde_json::Value;

use crate::message::Message;

/// What the agent hands to the store, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A canonical message, stored as its own event.
    Message(Message),
    /// A non-message event a restore needs but no model is sent; `data` is its JSON payload.
    Marker { kind: MarkerKind, data: Value },
}

/// What a marker event records. Stored as its `as_str` name in the `kind` column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// `/model NAME` (or a flag on resume) switched the model: `{model}`.
    Model,
    /// Tokens one response used: `{input, output}`.
    Usage,
    /// A turn was cut short (cancel, broken stream): `{reason?}`.
    Interrupted,
    /// `/new` started over in a fresh session: `{previous}`.
    New,
    /// A tool call the model wrote as text was recovered into a real call: `{tool_call_id}`.
    Recovered,
    /// How a tool call was decided (approved or refused, by whom, mode, sandbox): the
    /// fields of `permissions::record::Record`.
    Permission,
    /// What a turn changed, for `/undo`: the fields of `checkpoints::Checkpoint`.
    Checkpoint,
    /// `/undo` put files back: `{checkpoints: [id…], files: [path…]}`.
    Undo,
    /// A kind this binary does not know (written by a newer ikigai); kept, ignored.
    Other(String),
}

impl MarkerKind {
    pub fn as_str(&self) -> &str {
        match self {
            MarkerKind::Model => "model",
            MarkerKind::Usage => "usage",
            MarkerKind::Interrupted => "interrupted",
            MarkerKind::New => "new",
            MarkerKind::Recovered => "recovered",
            MarkerKind::Permission => "permission",
            MarkerKind::Checkpoint => "checkpoint",
            MarkerKind::Undo => "undo",
            MarkerKind::Other(s) => s,
        }
    }

    pub fn parse(s: &str) -> MarkerKind {
        match s {
            "model" => MarkerKind::Model,
            "usage" => MarkerKind::Usage,
            "interrupted" => MarkerKind::Interrupted,
            "new" => MarkerKind::New,
            "recovered" => MarkerKind::Recovered,
            "permission" => MarkerKind::Permission,
            "checkpoint" => MarkerKind::Checkpoint,
            "undo" => MarkerKind::Undo,
            other => MarkerKind::Other(other.to_string()),
        }
    }
}

impl From<&str> for MarkerKind {
    fn from(s: &str) -> Self {
        MarkerKind::parse(s)
    }
}

impl std::fmt::Display for MarkerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The row written when a session begins.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionMeta {
    pub id: String,
    pub cwd: String,
    pub provider: String,
    pub model: String,
    /// A sub-agent's session: the session and the `task` call that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
}

/// Where a sub-agent's session comes from: its parent session and the `task` call in it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Parent {
    pub session: String,
    pub call: String,
}

/// One line of `ikigai sessions`; defined with the protocol, which carries it to front ends.
pub use crate::protocol::SessionInfo;
/// One stored event as `ikigai export --format jsonl` writes it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EventInfo {
    pub id: String,
    pub seq: i64,
    pub kind: String,
    pub content: String,
    /// The event's JSON payload (`null` when it has none).
    pub data: Value,
    /// RFC 3339.
    pub created_at: String,
}

/// Which stored session to continue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// An id or a unique prefix of one.
    Id(&'a str),
    /// The newest session whose working directory is this.
    LatestIn(&'a str),
}

/// A session taken for this process to continue.
#[derive(Clone, Debug, PartialEq)]
pub struct Claimed {
    /// The session this process now holds and writes to.
    pub info: SessionInfo,
    /// Its conversation rebuilt from its records (for a fork: from the copy), read row by
    /// row so the records are never all held at once.
    pub restored: Restored,
    /// How many records it has (the next record's position).
    pub records: usize,
    /// Set when the session asked for was held by another live process: `info` is then
    /// a new session whose history is a copy of this one.
    pub forked_from: Option<String>,
}

/// A store failure. `Unavailable` is transient (the writer retries); the rest are final.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("no session matches `{0}`")]
    NotFound(String),
    #[error("`{prefix}` matches {count} sessions; give more of the id")]
    Ambiguous { prefix: String, count: usize },
    #[error(
        "the database was written by a newer ikigai (schema {found}, this binary knows {known}); upgrade ikigai"
    )]
    TooNew { found: i64, known: i64 },
    /// The session is held by another live ikigai process.
    #[error("session {0} is in use by another ikigai process")]
    Held(String),
    #[error("database error: {0}")]
    Other(String),
}

/// The agent's view of persistence. `begin` and `record` only queue and never wait on the
/// database; reads are async.
#[async_trait]
pub trait Sessions: Send + Sync {
    /// Starts a session; its row is written before any of its events.
    fn begin(&self, meta: SessionMeta);
    /// Queues one record for a session.
    fn record(&self, session_id: &str, record: Record);
    /// Sessions, newest first.
    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError>;
    /// The newest session whose working directory is `cwd`.
    async fn latest_in(&self, cwd: &str) -> Result<Option<SessionInfo>, StoreError>;
    /// A session by id or unique id prefix, with its records in order.
    async fn load(&self, id_prefix: &str) -> Result<(SessionInfo, Vec<Record>), StoreError>;
    /// Takes a stored session for this process to continue. A session nobody else holds
    /// becomes held by this process (and stays held until it exits or holds another); a
    /// session another live process holds is forked: a new session with a copy of its
    /// events, linked by `forked_from`, is held instead. Never waits on the other process.
    async fn claim(&self, target: Target<'_>) -> Result<Claimed, StoreError>;
    /// Deletes a session (id or unique prefix) with its events; refuses one that another
    /// live process holds (`StoreError::Held`). Returns what was deleted.
    async fn delete(&self, id_prefix: &str) -> Result<SessionInfo, StoreError>;
    /// A session (id or unique prefix) with its raw stored events in order.
    async fn export(&self, id_prefix: &str) -> Result<(SessionInfo, Vec<EventInfo>), StoreError>;
    /// At exit: waits until every queued record was written; when the database cannot
    /// take them now, writes them to the spool at once (replayed at the next start) and
    /// returns without waiting on the database.
    async fn flush(&self);
}
