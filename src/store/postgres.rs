//! The PostgreSQL backend: connects, applies the embedded migrations, and runs the
//! store's statements (`data` as JSONB). No retry policy here.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use sqlx::Connection;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::StoreError;
use super::backend::{
    Backend, DbError, MESSAGE_KINDS_SQL, OpenError, check_applied, classify, migrate_failed,
};
use super::lease::PgLocks;
use super::sql::{Db, Dialect};

/// The PostgreSQL schema, embedded in the binary.
pub(super) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// SQLSTATE prefixes that mean "not now": connection exceptions, insufficient
/// resources, operator intervention (shutdown), transaction rollback, system errors.
const TRANSIENT_STATES: [&str; 5] = ["08", "53", "57", "40", "58"];

fn sort(e: sqlx::Error) -> DbError {
    classify(e, |d| {
        let code = d.code().map(|c| c.to_string()).unwrap_or_default();
        let text = format!("{} (SQLSTATE {code})", d.message());
        if TRANSIENT_STATES.iter().any(|p| code.starts_with(p)) {
            DbError::Unavailable(text)
        } else {
            DbError::Rejected(text)
        }
    })
}

/// PostgreSQL's side of the statements: `$n` placeholders, timestamps and JSONB cast
/// from text, no NUL in text, and session-scoped advisory locks to hold a session.
pub(crate) struct Pg {
    locks: PgLocks,
}

/// An open PostgreSQL database.
pub(crate) type Postgres = Db<Pg>;

/// Connects once directly (so a failure names its real cause), then opens the pool and
/// brings the schema up to date.
pub(crate) async fn connect(url: &str, timeout: Duration) -> Result<Arc<dyn Backend>, OpenError> {
    let options: PgConnectOptions = url
        .parse()
        .map_err(|e| OpenError::Fatal(StoreError::Other(format!("invalid database_url: {e}"))))?;
    let options = options.application_name("ikigai");
    let mut first = match tokio::time::timeout(timeout, sqlx::PgConnection::connect_with(&options)).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => return Err(sort(e).into()),
        Err(_) => return Err(OpenError::Unavailable("cannot connect (timed out)".into())),
    };
    let has_table: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(&mut first)
        .await
        .map_err(|e| OpenError::from(sort(e)))?;
    let applied: Option<i64> = if has_table {
        sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
            .fetch_one(&mut first)
            .await
            .map_err(|e| OpenError::from(sort(e)))?
    } else {
        None
    };
    let _ = first.close().await;
    check_applied(applied, &MIGRATOR)?;
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(timeout)
        .connect_lazy_with(options.clone());
    MIGRATOR
        .run(&pool)
        .await
        .map_err(|e| migrate_failed(e, &MIGRATOR, sort))?;
    let db = Arc::new(Db {
        pool,
        dialect: Pg {
            locks: PgLocks::new(options, timeout),
        },
    });
    tokio::spawn(keepalive(Arc::downgrade(&db)));
    Ok(db)
}

/// Keeps the session locks across a server restart until the backend is dropped.
async fn keepalive(db: std::sync::Weak<Postgres>) {
    loop {
        tokio::time::sleep(super::lease::HEARTBEAT).await;
        let Some(db) = db.upgrade() else { return };
        db.dialect.locks.keepalive(sort).await;
    }
}

/// PostgreSQL text and JSONB cannot hold U+0000; it is stored as U+FFFD.
fn without_nul(s: &str) -> Cow<'_, str> {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}").into()
    } else {
        s.into()
    }
}

fn json_without_nul(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(without_nul(s).into_owned()),
        Value::Array(a) => Value::Array(a.iter().map(json_without_nul).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (without_nul(k).into_owned(), json_without_nul(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

const TS: &str = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'";

#[async_trait]
impl Dialect for Pg {
    type Db = sqlx::Postgres;
    const BEGIN_WRITE: &'static str = "BEGIN";
    const INSERT_SESSION: &'static str = "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, parent_id, parent_call) \
         VALUES ($1, $2::timestamptz, $3::timestamptz, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING";
    const INSERT_EVENT: &'static str = "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::timestamptz)";
    const UPDATE_SESSION: &'static str = "UPDATE sessions SET updated_at = greatest(updated_at, $1::timestamptz), \
         title = coalesce(title, $2), model = coalesce($3, model), \
         provider = coalesce($4, provider) WHERE id = $5";
    const FORK_SESSION: &'static str = "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, title, forked_from) \
         SELECT $1, $2::timestamptz, $3::timestamptz, cwd, provider, model, title, id FROM sessions \
         WHERE id = $4";
    const FORK_EVENTS: &'static str = "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
         SELECT $1 || ':' || seq, $2, seq, kind, content, data, created_at FROM events \
         WHERE session_id = $3 ORDER BY seq";
    const DELETE_SESSION: &'static str = "DELETE FROM sessions WHERE id = $1";
    const MAX_SEQ: &'static str = "SELECT max(seq) FROM events WHERE session_id = $1";
    const EVENT_EXISTS: &'static str = "SELECT count(*) FROM events WHERE id = $1";
    const COUNT_PREFIX: &'static str = "SELECT count(*) FROM sessions WHERE id LIKE $1 ESCAPE '\\'";
    const EVENTS: &'static str = "SELECT id, seq, kind, content, data::text AS data, \
         to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS created_at \
         FROM events WHERE session_id = $1 ORDER BY seq";
    const BY_CWD: &'static str = "WHERE s.cwd = $1 AND s.parent_id IS NULL";
    const BY_ID: &'static str = "WHERE s.id = $1";
    const BY_PREFIX: &'static str = "WHERE s.id LIKE $1 ESCAPE '\\'";

    fn sessions_sql(filter: &str, limit: &str) -> String {
        format!(
            "SELECT s.id, to_char(s.created_at AT TIME ZONE 'UTC', {TS}) AS created_at, \
             to_char(s.updated_at AT TIME ZONE 'UTC', {TS}) AS updated_at, s.cwd, s.provider, s.model, s.title, \
             s.forked_from, s.parent_id, s.parent_call, \
             (SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.kind IN ({MESSAGE_KINDS_SQL})) \
             AS messages, \
             (SELECT sum((e.data->>'cost')::float8) FROM events e WHERE e.session_id = s.id AND e.kind = 'usage') \
             AS cost FROM sessions s {filter} ORDER BY s.updated_at DESC, s.id DESC {limit}"
        )
    }

    fn sort(e: sqlx::Error) -> DbError {
        sort(e)
    }

    fn affected(r: &sqlx::postgres::PgQueryResult) -> u64 {
        r.rows_affected()
    }

    fn text(s: &str) -> Cow<'_, str> {
        without_nul(s)
    }

    fn json(v: &Value) -> String {
        json_without_nul(v).to_string()
    }

    async fn hold(&self, _pool: &PgPool, session_id: &str) -> Result<bool, DbError> {
        self.locks.take(&without_nul(session_id), sort).await
    }

    async fn release(&self, _pool: &PgPool, session_id: &str) -> Result<(), DbError> {
        self.locks.release(&without_nul(session_id), sort).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_replaced_everywhere_in_json() {
        let v = serde_json::json!({"a\u{0}": ["x\u{0}y", 1, {"k": "\u{0}"}]});
        let clean = json_without_nul(&v).to_string();
        assert!(!clean.contains("\\u0000"), "{clean}");
        assert!(clean.contains("x\u{FFFD}y"), "{clean}");
        assert_eq!(without_nul("plain"), "plain");
    }
}
