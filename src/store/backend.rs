//! What the writer and the readers need from a database (the `Backend` trait, implemented
//! once in `sql.rs` over each database's dialect), the rows and batches they exchange, and
//! the row ⇄ `Record` mapping both databases share. Knows no connection policy: retries
//! and notices belong to `writer/`.

use std::ops::ControlFlow;

use async_trait::async_trait;
use serde_json::Value;

use super::{Record, SessionInfo, SessionMeta, StoreError};
use crate::message::{Kind, Message};

/// How one database call failed, as the writer must react to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DbError {
    /// A unique key was taken (another writer used this `seq`, or this event id was
    /// already written). Retryable at once after re-reading.
    Conflict,
    /// The database cannot be reached or cannot write right now. Retryable later.
    Unavailable(String),
    /// The database refused this statement for good. Not retryable.
    Rejected(String),
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Conflict => StoreError::Other("unexpected duplicate key".into()),
            DbError::Unavailable(why) => StoreError::Unavailable(why),
            DbError::Rejected(why) => StoreError::Other(why),
        }
    }
}

/// Sorts sqlx errors that are the same for every backend; database errors go to `db`.
pub(crate) fn classify(e: sqlx::Error, db: impl Fn(&dyn sqlx::error::DatabaseError) -> DbError) -> DbError {
    match e {
        sqlx::Error::Database(d) if d.kind() == sqlx::error::ErrorKind::UniqueViolation => DbError::Conflict,
        sqlx::Error::Database(d) => db(d.as_ref()),
        e @ (sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::BeginFailed) => DbError::Unavailable(connection_text(&e)),
        e => DbError::Rejected(e.to_string()),
    }
}

fn connection_text(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::PoolTimedOut => "cannot connect (timed out)".into(),
        e => e.to_string(),
    }
}

/// One event row as the writer inserts it (and as the spool keeps it).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct EventRow {
    /// A UUID chosen when the record was queued: a retried insert that had in fact
    /// landed is recognised instead of written twice.
    pub id: String,
    pub session_id: String,
    pub seq: i64,
    pub kind: String,
    pub content: String,
    /// JSON; `None` is SQL NULL.
    pub data: Option<Value>,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// Set on the session when it has none yet (first user message).
    pub title: Option<String>,
    /// Becomes the session's model (a `model` marker).
    pub model: Option<String>,
}

impl EventRow {
    pub(super) fn new(id: String, session_id: String, record: Record, created_at: String) -> Self {
        let (kind, content, data, title, model) = match record {
            Record::Message(m) => {
                let data = Some(m.data_json()).filter(|d| !d.is_null());
                let title = (m.kind == Kind::User).then(|| title_of(&m.content)).flatten();
                (m.kind.as_str().to_string(), m.content, data, title, None)
            }
            Record::Marker { kind, data } => {
                let model = (kind == super::MarkerKind::Model)
                    .then(|| data.get("model").and_then(Value::as_str).map(str::to_string))
                    .flatten();
                let data = Some(data).filter(|d| !d.is_null());
                (kind.as_str().to_string(), String::new(), data, None, model)
            }
        };
        EventRow {
            id,
            session_id,
            seq: 0,
            kind,
            content,
            data,
            created_at,
            title,
            model,
        }
    }

    /// The provider a `model` marker names (`/model PROVIDER/MODEL`): the session's from now.
    pub(super) fn provider(&self) -> Option<String> {
        if self.kind != super::MarkerKind::Model.as_str() {
            return None;
        }
        let p = self.data.as_ref()?.get("provider")?.as_str()?;
        Some(p.to_string())
    }
}

/// One stored event as read back.
#[derive(Debug, Clone)]
pub(crate) struct StoredEvent {
    pub id: String,
    pub seq: i64,
    pub kind: String,
    pub content: String,
    /// The JSON text, if any.
    pub data: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl StoredEvent {
    /// One `events` row, from either database (same column names and types).
    pub(crate) fn from_row<R>(r: &R) -> Result<Self, sqlx::Error>
    where
        R: sqlx::Row,
        for<'c> &'c str: sqlx::ColumnIndex<R>,
        String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    {
        Ok(StoredEvent {
            id: r.try_get("id")?,
            seq: r.try_get("seq")?,
            kind: r.try_get("kind")?,
            content: r.try_get("content")?,
            data: r.try_get("data")?,
            created_at: r.try_get("created_at")?,
        })
    }
}

impl StoredEvent {
    /// Back to what the agent recorded; a message whose data does not fit its kind is
    /// damage, reported with its position.
    pub(super) fn into_record(self, session_id: &str) -> Result<Record, StoreError> {
        if let Some(kind) = Kind::parse(&self.kind) {
            // Typed straight from the text: a long session builds no JSON tree per row.
            return Message::from_stored(kind, self.content, self.data.as_deref())
                .map(Record::Message)
                .map_err(|e| match e.classify() {
                    serde_json::error::Category::Data => damaged(
                        session_id,
                        self.seq,
                        &format!("data does not match its kind ({e})"),
                    ),
                    _ => damaged(session_id, self.seq, &e),
                });
        }
        let data: Value = match &self.data {
            Some(text) => serde_json::from_str(text).map_err(|e| damaged(session_id, self.seq, &e))?,
            None => Value::Null,
        };
        Ok(Record::Marker {
            kind: super::MarkerKind::parse(&self.kind),
            data,
        })
    }
}

impl StoredEvent {
    /// The public, raw view (`ikigai export --format jsonl`).
    pub(super) fn info(&self) -> super::EventInfo {
        let data = self
            .data
            .as_deref()
            .map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string())))
            .unwrap_or(Value::Null);
        super::EventInfo {
            id: self.id.clone(),
            seq: self.seq,
            kind: self.kind.clone(),
            content: self.content.clone(),
            data,
            created_at: self.created_at.clone(),
        }
    }
}

fn damaged(session_id: &str, seq: i64, why: &dyn std::fmt::Display) -> StoreError {
    StoreError::Other(format!(
        "session {session_id}: stored event {seq} is damaged: {why}"
    ))
}

/// Which sessions a read wants.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Select<'a> {
    /// Every session, newest first.
    All,
    /// The newest session of this working directory.
    LatestIn(&'a str),
    /// The session with exactly this id.
    Id(&'a str),
    /// Up to two sessions whose id starts with this (enough to tell ambiguity).
    Prefix(&'a str),
}

/// The canonical kinds, as SQL string literals for `kind IN (…)`.
pub(crate) const MESSAGE_KINDS_SQL: &str = "'system','user','assistant','tool_call','tool_result'";

/// `prefix` escaped for `LIKE … ESCAPE '\'`, with the trailing `%`.
pub(crate) fn like_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// One write of a batch (and one line of a spool file).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Write {
    /// The session row, unless it exists.
    Session { meta: SessionMeta, at: String },
    /// An event at its `seq` (already chosen).
    Event(EventRow),
}

/// What a run of events changes on its session row: the latest time, the first title
/// (kept only when the session has none), the last model and provider.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SessionUpdate {
    pub session_id: String,
    pub updated_at: String,
    pub title: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
}

/// One update per session of `items`, in order of first appearance; applying them after
/// the inserts gives the same rows as updating after each event.
pub(crate) fn session_updates(items: &[Write]) -> Vec<SessionUpdate> {
    let mut out: Vec<SessionUpdate> = Vec::new();
    for item in items {
        let Write::Event(row) = item else { continue };
        match out.iter_mut().find(|u| u.session_id == row.session_id) {
            Some(u) => {
                if row.created_at > u.updated_at {
                    u.updated_at.clone_from(&row.created_at);
                }
                if u.title.is_none() {
                    u.title.clone_from(&row.title);
                }
                if row.model.is_some() {
                    u.model.clone_from(&row.model);
                }
                if let Some(p) = row.provider() {
                    u.provider = Some(p);
                }
            }
            None => out.push(SessionUpdate {
                session_id: row.session_id.clone(),
                updated_at: row.created_at.clone(),
                title: row.title.clone(),
                model: row.model.clone(),
                provider: row.provider(),
            }),
        }
    }
    out
}

/// The database side of the store.
#[async_trait]
pub(crate) trait Backend: Send + Sync {
    /// Writes the session row unless it exists.
    async fn insert_session(&self, meta: &SessionMeta, at: &str) -> Result<(), DbError>;
    /// Writes every item in one transaction: all of them or none.
    async fn write_batch(&self, items: &[Write]) -> Result<(), DbError>;
    /// Makes `session_id` the one session this store holds, when no other live process
    /// (or other store in this process) holds it; the session held before is released
    /// on success. `Ok(false)`: held elsewhere.
    async fn hold(&self, session_id: &str) -> Result<bool, DbError>;
    /// Lets go of `session_id` if this store holds it.
    async fn release(&self, session_id: &str) -> Result<(), DbError>;
    /// In one transaction: a new session `new_id` (forked_from `from`) with a copy of
    /// every event of `from` (new event ids, same order).
    async fn fork(&self, from: &str, new_id: &str, at: &str) -> Result<(), DbError>;
    /// Deletes a session and its events.
    async fn delete_session(&self, session_id: &str) -> Result<(), DbError>;
    /// Whether the database file this store opened is no longer at its path (SQLite:
    /// deleted or replaced). Always false for a server.
    fn file_gone(&self) -> bool {
        false
    }
    /// Whether the file was deleted or replaced while it was being opened (SQLite; it was
    /// then opened again at the same path). Always false for a server.
    fn replaced_at_open(&self) -> bool {
        false
    }
    /// After `file_gone`: opens a fresh file at the same path and copies the sessions
    /// `keep` (rows and events, read from the still-open old file) into it.
    async fn recreate(&self, keep: &[String]) -> Result<std::sync::Arc<dyn Backend>, DbError> {
        let _ = keep;
        Err(DbError::Rejected("this database cannot be recreated".into()))
    }
    /// The highest `seq` of a session (0 when it has none).
    async fn max_seq(&self, session_id: &str) -> Result<i64, DbError>;
    /// Inserts the event and updates its session (updated_at, title, model) together.
    async fn insert_event(&self, row: &EventRow) -> Result<(), DbError>;
    /// Whether an event with this id is stored.
    async fn event_exists(&self, id: &str) -> Result<bool, DbError>;
    /// Sessions with their message counts, newest (last updated) first.
    async fn sessions(&self, select: Select<'_>) -> Result<Vec<SessionInfo>, DbError>;
    /// How many session ids start with `prefix`.
    async fn count_prefix(&self, prefix: &str) -> Result<i64, DbError>;
    /// Hands a session's events to `each` in `seq` order, one row at a time, so a long
    /// session is never held whole as rows; stops early when `each` breaks.
    async fn each_event(
        &self,
        session_id: &str,
        each: &mut (dyn FnMut(StoredEvent) -> ControlFlow<()> + Send),
    ) -> Result<(), DbError>;
    /// A session's events in `seq` order.
    async fn events(&self, session_id: &str) -> Result<Vec<StoredEvent>, DbError> {
        let mut out = Vec::new();
        self.each_event(session_id, &mut |e| {
            out.push(e);
            ControlFlow::Continue(())
        })
        .await?;
        Ok(out)
    }
}

/// Why opening a database failed.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// Worth retrying later (server down, folder not creatable yet, locked).
    Unavailable(String),
    /// Retrying cannot help (schema too new, not a database, bad URL).
    Fatal(StoreError),
}

impl From<DbError> for OpenError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Unavailable(why) => OpenError::Unavailable(why),
            other => OpenError::Fatal(other.into()),
        }
    }
}

/// The newest schema version a migrator knows.
pub(crate) fn known_version(migrator: &sqlx::migrate::Migrator) -> i64 {
    migrator.iter().map(|m| m.version).max().unwrap_or(0)
}

/// `TooNew` when the database has a migration newer than this binary knows.
pub(crate) fn check_applied(
    applied: Option<i64>,
    migrator: &sqlx::migrate::Migrator,
) -> Result<(), OpenError> {
    let known = known_version(migrator);
    match applied {
        Some(found) if found > known => Err(OpenError::Fatal(StoreError::TooNew { found, known })),
        _ => Ok(()),
    }
}

/// Maps a failed migration run; `db` sorts database errors as for any statement.
pub(crate) fn migrate_failed(
    e: sqlx::migrate::MigrateError,
    migrator: &sqlx::migrate::Migrator,
    classify_db: impl Fn(sqlx::Error) -> DbError,
) -> OpenError {
    use sqlx::migrate::MigrateError;
    let known = known_version(migrator);
    match e {
        MigrateError::VersionMissing(found) if found > known => {
            OpenError::Fatal(StoreError::TooNew { found, known })
        }
        MigrateError::Execute(e) => classify_db(e).into(),
        other => OpenError::Fatal(StoreError::Other(format!(
            "cannot update the database schema: {other}"
        ))),
    }
}

/// The first non-empty line of a user message, trimmed, at most 80 characters.
pub fn title_of(text: &str) -> Option<String> {
    const MAX: usize = 80;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if line.chars().count() <= MAX {
        return Some(line.to_string());
    }
    let mut cut: String = line.chars().take(MAX - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

/// Now, as stored (RFC 3339, milliseconds, UTC).
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_is_first_nonempty_line_trimmed() {
        assert_eq!(
            title_of("\n  fix the parser  \nmore").as_deref(),
            Some("fix the parser")
        );
        assert_eq!(title_of("   \n\t"), None);
        let long = "word ".repeat(40);
        let t = title_of(&long).unwrap();
        assert_eq!(t.chars().count(), 80);
        assert!(t.ends_with("word…"), "{t}");
        let wide = "é".repeat(100);
        assert_eq!(title_of(&wide).unwrap().chars().count(), 80);
    }

    #[test]
    fn like_prefix_escapes_wildcards() {
        assert_eq!(like_prefix("a%b_c\\"), "a\\%b\\_c\\\\%");
    }

    #[test]
    fn rows_carry_title_and_model() {
        let r = EventRow::new(
            "e".into(),
            "s".into(),
            Record::Message(Message::user("hello\nworld")),
            "t".into(),
        );
        assert_eq!(r.kind, "user");
        assert_eq!(r.title.as_deref(), Some("hello"));
        assert!(r.data.is_none());
        let r = EventRow::new(
            "e".into(),
            "s".into(),
            Record::Marker {
                kind: super::super::MarkerKind::Model,
                data: serde_json::json!({"model": "m2"}),
            },
            "t".into(),
        );
        assert_eq!(r.model.as_deref(), Some("m2"));
        assert_eq!(r.provider(), None);
        assert_eq!(r.content, "");
        let r = EventRow::new(
            "e".into(),
            "s".into(),
            Record::Marker {
                kind: super::super::MarkerKind::Model,
                data: serde_json::json!({"model": "m3", "provider": "anthropic"}),
            },
            "t".into(),
        );
        assert_eq!(
            (r.model.as_deref(), r.provider().as_deref()),
            (Some("m3"), Some("anthropic"))
        );
    }

    #[test]
    fn batch_updates_match_one_by_one() {
        let ev = |sid: &str, at: &str, title: Option<&str>, model: Option<&str>| {
            let mut r = EventRow::new(
                "e".into(),
                sid.into(),
                Record::Message(Message::assistant("x")),
                at.into(),
            );
            r.title = title.map(str::to_string);
            r.model = model.map(str::to_string);
            Write::Event(r)
        };
        let items = vec![
            ev("a", "t1", None, Some("m1")),
            ev("b", "t2", Some("b title"), None),
            ev("a", "t3", Some("first"), None),
            ev("a", "t2", Some("second"), Some("m2")),
        ];
        let u = session_updates(&items);
        assert_eq!(u.len(), 2);
        assert_eq!((u[0].session_id.as_str(), u[0].updated_at.as_str()), ("a", "t3"));
        assert_eq!(u[0].title.as_deref(), Some("first"));
        assert_eq!(u[0].model.as_deref(), Some("m2"));
        assert_eq!(u[1].title.as_deref(), Some("b title"));
    }

    #[test]
    fn damaged_rows_are_reported_with_their_seq() {
        let e = StoredEvent {
            id: "e7".into(),
            created_at: String::new(),
            seq: 7,
            kind: "tool_call".into(),
            content: "x".into(),
            data: Some("{\"nope\":1}".into()),
        };
        let err = e.into_record("abc").unwrap_err().to_string();
        assert!(err.contains("abc") && err.contains("event 7"), "{err}");
        let e = StoredEvent {
            id: "e8".into(),
            created_at: String::new(),
            seq: 8,
            kind: "usage".into(),
            content: String::new(),
            data: Some("not json".into()),
        };
        assert!(e.into_record("abc").is_err());
    }
}
