//! The store's statements as both databases run them, written once: every write's
//! control flow (a batch in one transaction, session rows with their events, the session
//! updates a batch implies, a fork's copy), and the reads (sessions with their message
//! counts, a session's events row by row). A `Dialect` says what differs: the SQL text
//! (placeholders, casts), the text a database cannot hold, how its errors sort, and what
//! only one of them does (leases or advisory locks, a file recreated). No retry policy
//! and no connecting here.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use serde_json::Value;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use super::backend::{Backend, DbError, EventRow, Select, StoredEvent, Write, like_prefix, session_updates};
use super::{SessionInfo, SessionMeta};

/// What differs between the databases. The statements bind in the order their comments
/// give.
#[async_trait]
pub(crate) trait Dialect: Send + Sync + Sized + 'static {
    type Db: Database;
    /// A session row unless it exists: id, created_at, updated_at, cwd, provider, model,
    /// parent_id, parent_call (NULL but for a sub-agent's).
    const INSERT_SESSION: &'static str;
    /// id, session_id, seq, kind, content, data (JSON text or NULL), created_at.
    const INSERT_EVENT: &'static str;
    /// updated_at (kept when later), title (kept when set), model, provider (each kept
    /// when NULL), id.
    const UPDATE_SESSION: &'static str;
    /// A session copied as a fork: new id, created_at, updated_at, the id forked.
    const FORK_SESSION: &'static str;
    /// A session's events copied to the fork (ids `NEW:seq`): new id, new id, the id forked.
    const FORK_EVENTS: &'static str;
    /// id.
    const DELETE_SESSION: &'static str;
    /// Opens a transaction that writes. SQLite: `BEGIN IMMEDIATE`, the write lock taken
    /// at once (waiting out the busy timeout): a deferred `BEGIN` that reads first and
    /// writes later fails at once with "database is locked" when another connection
    /// wrote in between (seen under load with two writers on one file).
    const BEGIN_WRITE: &'static str;
    /// session_id.
    const MAX_SEQ: &'static str;
    /// id.
    const EVENT_EXISTS: &'static str;
    /// A `LIKE` pattern (escaped with `\`).
    const COUNT_PREFIX: &'static str;
    /// id, seq, kind, content, data (text), created_at (RFC 3339) of session_id's
    /// events, in `seq` order.
    const EVENTS: &'static str;
    /// `WHERE` clauses of `sessions_sql` binding a cwd (a sub-agent's session is never
    /// the folder's latest), an id, a `LIKE` pattern.
    const BY_CWD: &'static str;
    const BY_ID: &'static str;
    const BY_PREFIX: &'static str;

    /// Sessions with their message counts, newest first, filtered and limited.
    fn sessions_sql(filter: &str, limit: &str) -> String;

    /// A driver error as the writer treats it.
    fn sort(e: sqlx::Error) -> DbError;

    /// How many rows a statement changed.
    fn affected(r: &<Self::Db as Database>::QueryResult) -> u64;

    /// Text as the database can hold it.
    fn text(s: &str) -> Cow<'_, str> {
        Cow::Borrowed(s)
    }

    /// A JSON value as text the database can hold.
    fn json(v: &Value) -> String {
        v.to_string()
    }

    /// See `Backend::hold`.
    async fn hold(&self, pool: &Pool<Self::Db>, session_id: &str) -> Result<bool, DbError>;

    /// See `Backend::release`.
    async fn release(&self, pool: &Pool<Self::Db>, session_id: &str) -> Result<(), DbError>;

    /// See `Backend::file_gone`.
    fn file_gone(&self) -> bool {
        false
    }

    /// See `Backend::replaced_at_open`.
    fn replaced_at_open(&self) -> bool {
        false
    }

    /// See `Backend::recreate`; `old` is the database `self` belongs to.
    async fn recreate(&self, old: &Db<Self>, keep: &[String]) -> Result<Arc<dyn Backend>, DbError> {
        let _ = (old, keep);
        Err(DbError::Rejected("this database cannot be recreated".into()))
    }

    /// Runs on the connection before a session's rows are read, and after (SQLite keeps
    /// few pages cached for the pass). Only memory and speed: errors are moot.
    async fn before_scan(&self, conn: &mut <Self::Db as Database>::Connection) {
        let _ = conn;
    }

    async fn after_scan(&self, conn: &mut <Self::Db as Database>::Connection) {
        let _ = conn;
    }
}

/// An open database of either kind.
pub(crate) struct Db<D: Dialect> {
    pub(crate) pool: Pool<D::Db>,
    pub(crate) dialect: D,
}

fn session_info<R>(row: &R) -> Result<SessionInfo, sqlx::Error>
where
    R: Row,
    for<'c> &'c str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(SessionInfo {
        id: row.try_get("id")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        cwd: row.try_get("cwd")?,
        provider: row.try_get("provider")?,
        model: row.try_get("model")?,
        messages: row.try_get("messages")?,
        title: row.try_get("title")?,
        forked_from: row.try_get("forked_from")?,
        parent: row.try_get("parent_id")?,
        parent_call: row.try_get("parent_call")?,
        cost: row.try_get("cost")?,
    })
}

#[async_trait]
impl<D: Dialect> Backend for Db<D>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> Cow<'q, str>: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Option<Cow<'q, str>>: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Option<String>: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> i64: Encode<'q, D::Db> + Type<D::Db>,
    for<'r> String: Decode<'r, D::Db> + Type<D::Db>,
    for<'r> Option<String>: Decode<'r, D::Db>,
    for<'r> i64: Decode<'r, D::Db>,
    for<'r> Option<i64>: Decode<'r, D::Db>,
    for<'r> f64: Decode<'r, D::Db> + Type<D::Db>,
    for<'c> &'c str: ColumnIndex<<D::Db as Database>::Row>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
{
    async fn insert_session(&self, meta: &SessionMeta, at: &str) -> Result<(), DbError> {
        let write = Write::Session {
            meta: meta.clone(),
            at: at.to_string(),
        };
        self.write_batch(std::slice::from_ref(&write)).await
    }

    async fn insert_event(&self, row: &EventRow) -> Result<(), DbError> {
        self.write_batch(std::slice::from_ref(&Write::Event(row.clone())))
            .await
    }

    async fn write_batch(&self, items: &[Write]) -> Result<(), DbError> {
        let mut tx = self.pool.begin_with(D::BEGIN_WRITE).await.map_err(D::sort)?;
        for item in items {
            let q = match item {
                Write::Session { meta, at } => sqlx::query(D::INSERT_SESSION)
                    .bind(D::text(&meta.id))
                    .bind(Cow::Borrowed(at.as_str()))
                    .bind(Cow::Borrowed(at.as_str()))
                    .bind(D::text(&meta.cwd))
                    .bind(D::text(&meta.provider))
                    .bind(D::text(&meta.model))
                    .bind(meta.parent.as_ref().map(|p| D::text(&p.session)))
                    .bind(meta.parent.as_ref().map(|p| D::text(&p.call))),
                Write::Event(row) => sqlx::query(D::INSERT_EVENT)
                    .bind(Cow::Borrowed(row.id.as_str()))
                    .bind(D::text(&row.session_id))
                    .bind(row.seq)
                    .bind(D::text(&row.kind))
                    .bind(D::text(&row.content))
                    .bind(row.data.as_ref().map(D::json))
                    .bind(Cow::Borrowed(row.created_at.as_str())),
            };
            q.execute(&mut *tx).await.map_err(D::sort)?;
        }
        for u in session_updates(items) {
            sqlx::query(D::UPDATE_SESSION)
                .bind(Cow::Borrowed(u.updated_at.as_str()))
                .bind(u.title.as_deref().map(D::text))
                .bind(u.model.as_deref().map(D::text))
                .bind(u.provider.as_deref().map(D::text))
                .bind(D::text(&u.session_id))
                .execute(&mut *tx)
                .await
                .map_err(D::sort)?;
        }
        tx.commit().await.map_err(D::sort)
    }

    async fn hold(&self, session_id: &str) -> Result<bool, DbError> {
        self.dialect.hold(&self.pool, session_id).await
    }

    async fn release(&self, session_id: &str) -> Result<(), DbError> {
        self.dialect.release(&self.pool, session_id).await
    }

    async fn fork(&self, from: &str, new_id: &str, at: &str) -> Result<(), DbError> {
        let mut tx = self.pool.begin_with(D::BEGIN_WRITE).await.map_err(D::sort)?;
        let done = sqlx::query(D::FORK_SESSION)
            .bind(D::text(new_id))
            .bind(Cow::Borrowed(at))
            .bind(Cow::Borrowed(at))
            .bind(D::text(from))
            .execute(&mut *tx)
            .await
            .map_err(D::sort)?;
        if D::affected(&done) != 1 {
            return Err(DbError::Rejected(format!("no session {from} to fork")));
        }
        sqlx::query(D::FORK_EVENTS)
            .bind(D::text(new_id))
            .bind(D::text(new_id))
            .bind(D::text(from))
            .execute(&mut *tx)
            .await
            .map_err(D::sort)?;
        tx.commit().await.map_err(D::sort)
    }

    async fn delete_session(&self, session_id: &str) -> Result<(), DbError> {
        sqlx::query(D::DELETE_SESSION)
            .bind(D::text(session_id))
            .execute(&self.pool)
            .await
            .map_err(D::sort)?;
        Ok(())
    }

    fn file_gone(&self) -> bool {
        self.dialect.file_gone()
    }

    fn replaced_at_open(&self) -> bool {
        self.dialect.replaced_at_open()
    }

    async fn recreate(&self, keep: &[String]) -> Result<Arc<dyn Backend>, DbError> {
        self.dialect.recreate(self, keep).await
    }

    async fn max_seq(&self, session_id: &str) -> Result<i64, DbError> {
        Ok(scalar::<D>(&self.pool, D::MAX_SEQ, D::text(session_id))
            .await?
            .unwrap_or(0))
    }

    async fn event_exists(&self, id: &str) -> Result<bool, DbError> {
        Ok(scalar::<D>(&self.pool, D::EVENT_EXISTS, Cow::Borrowed(id))
            .await?
            .unwrap_or(0)
            > 0)
    }

    async fn sessions(&self, select: Select<'_>) -> Result<Vec<SessionInfo>, DbError> {
        let (sql, arg) = match select {
            Select::All => (D::sessions_sql("", ""), None),
            Select::LatestIn(cwd) => (D::sessions_sql(D::BY_CWD, "LIMIT 1"), Some(D::text(cwd))),
            Select::Id(id) => (D::sessions_sql(D::BY_ID, ""), Some(D::text(id))),
            Select::Prefix(p) => (
                D::sessions_sql(D::BY_PREFIX, "LIMIT 2"),
                Some(Cow::Owned(D::text(&like_prefix(p)).into_owned())),
            ),
        };
        let mut q = sqlx::query(&sql);
        if let Some(arg) = arg {
            q = q.bind(arg);
        }
        let rows = q.fetch_all(&self.pool).await.map_err(D::sort)?;
        rows.iter().map(|r| session_info(r).map_err(D::sort)).collect()
    }

    async fn count_prefix(&self, prefix: &str) -> Result<i64, DbError> {
        let pattern = like_prefix(prefix);
        Ok(scalar::<D>(&self.pool, D::COUNT_PREFIX, D::text(&pattern))
            .await?
            .unwrap_or(0))
    }

    async fn each_event(
        &self,
        session_id: &str,
        each: &mut (dyn FnMut(StoredEvent) -> ControlFlow<()> + Send),
    ) -> Result<(), DbError> {
        let mut c = self.pool.acquire().await.map_err(D::sort)?;
        self.dialect.before_scan(&mut c).await;
        let result = async {
            let mut rows = sqlx::query(D::EVENTS).bind(D::text(session_id)).fetch(&mut *c);
            // Row by row: a long session is never held as rows.
            while let Some(r) = rows.try_next().await.map_err(D::sort)? {
                if each(StoredEvent::from_row(&r).map_err(D::sort)?).is_break() {
                    break;
                }
            }
            Ok(())
        }
        .await;
        self.dialect.after_scan(&mut c).await;
        result
    }
}

/// The one number a statement with one argument selects (`None` for SQL NULL).
async fn scalar<D: Dialect>(
    pool: &Pool<D::Db>,
    sql: &'static str,
    arg: Cow<'_, str>,
) -> Result<Option<i64>, DbError>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> Cow<'q, str>: Encode<'q, D::Db> + Type<D::Db>,
    for<'r> Option<i64>: Decode<'r, D::Db> + Type<D::Db>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
{
    sqlx::query_scalar(sql)
        .bind(arg)
        .fetch_one(pool)
        .await
        .map_err(D::sort)
}
