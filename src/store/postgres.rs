//! The PostgreSQL backend: connects, applies the embedded migrations, and runs the
//! store's statements (`data` as JSONB). No retry policy here.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use serde_json::Value;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::{Connection, Row};

use super::backend::{
    Backend, DbError, EventRow, MESSAGE_KINDS_SQL, OpenError, Select, SessionUpdate, StoredEvent, Write,
    check_applied, classify, like_prefix, migrate_failed, session_updates,
};
use super::lease::PgLocks;
use super::{SessionInfo, SessionMeta, StoreError};

/// The PostgreSQL schema, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

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

/// An open PostgreSQL database.
pub(crate) struct Postgres {
    pool: PgPool,
    locks: PgLocks,
}

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
    let db = Arc::new(Postgres {
        pool,
        locks: PgLocks::new(options, timeout),
    });
    tokio::spawn(keepalive(Arc::downgrade(&db)));
    Ok(db)
}

/// Keeps the session locks across a server restart until the backend is dropped.
async fn keepalive(db: std::sync::Weak<Postgres>) {
    loop {
        tokio::time::sleep(super::lease::HEARTBEAT).await;
        let Some(db) = db.upgrade() else { return };
        db.locks.keepalive(sort).await;
    }
}

/// PostgreSQL text and JSONB cannot hold U+0000; it is stored as U+FFFD.
fn without_nul(s: &str) -> std::borrow::Cow<'_, str> {
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

fn session_sql(filter: &str, limit: &str) -> String {
    format!(
        "SELECT s.id, to_char(s.created_at AT TIME ZONE 'UTC', {TS}) AS created_at, \
         to_char(s.updated_at AT TIME ZONE 'UTC', {TS}) AS updated_at, s.cwd, s.provider, s.model, s.title, \
         s.forked_from, \
         (SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.kind IN ({MESSAGE_KINDS_SQL})) \
         AS messages FROM sessions s {filter} ORDER BY s.updated_at DESC, s.id DESC {limit}"
    )
}

fn session_info(row: &PgRow) -> Result<SessionInfo, sqlx::Error> {
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
    })
}

async fn insert_session(c: &mut sqlx::PgConnection, meta: &SessionMeta, at: &str) -> Result<(), DbError> {
    sqlx::query(
        "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model) \
         VALUES ($1, $2::timestamptz, $2::timestamptz, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
    )
    .bind(without_nul(&meta.id))
    .bind(at)
    .bind(without_nul(&meta.cwd))
    .bind(without_nul(&meta.provider))
    .bind(without_nul(&meta.model))
    .execute(&mut *c)
    .await
    .map_err(sort)?;
    Ok(())
}

async fn insert_event(c: &mut sqlx::PgConnection, row: &EventRow) -> Result<(), DbError> {
    let data = row.data.as_ref().map(|d| json_without_nul(d).to_string());
    sqlx::query(
        "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::timestamptz)",
    )
    .bind(&row.id)
    .bind(without_nul(&row.session_id))
    .bind(row.seq)
    .bind(without_nul(&row.kind))
    .bind(without_nul(&row.content))
    .bind(data)
    .bind(&row.created_at)
    .execute(&mut *c)
    .await
    .map_err(sort)?;
    Ok(())
}

async fn update_session(c: &mut sqlx::PgConnection, u: &SessionUpdate) -> Result<(), DbError> {
    sqlx::query(
        "UPDATE sessions SET updated_at = greatest(updated_at, $1::timestamptz), \
         title = coalesce(title, $2), model = coalesce($3, model), \
         provider = coalesce($5, provider) WHERE id = $4",
    )
    .bind(&u.updated_at)
    .bind(u.title.as_deref().map(without_nul))
    .bind(u.model.as_deref().map(without_nul))
    .bind(without_nul(&u.session_id))
    .bind(u.provider.as_deref().map(without_nul))
    .execute(&mut *c)
    .await
    .map_err(sort)?;
    Ok(())
}

#[async_trait]
impl Backend for Postgres {
    async fn insert_session(&self, meta: &SessionMeta, at: &str) -> Result<(), DbError> {
        let mut c = self.pool.acquire().await.map_err(sort)?;
        insert_session(&mut c, meta, at).await
    }

    async fn max_seq(&self, session_id: &str) -> Result<i64, DbError> {
        let max: Option<i64> = sqlx::query_scalar("SELECT max(seq) FROM events WHERE session_id = $1")
            .bind(without_nul(session_id))
            .fetch_one(&self.pool)
            .await
            .map_err(sort)?;
        Ok(max.unwrap_or(0))
    }

    async fn insert_event(&self, row: &EventRow) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await.map_err(sort)?;
        insert_event(&mut tx, row).await?;
        for u in session_updates(&[Write::Event(row.clone())]) {
            update_session(&mut tx, &u).await?;
        }
        tx.commit().await.map_err(sort)
    }

    async fn write_batch(&self, items: &[Write]) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await.map_err(sort)?;
        for item in items {
            match item {
                Write::Session { meta, at } => insert_session(&mut tx, meta, at).await?,
                Write::Event(row) => insert_event(&mut tx, row).await?,
            }
        }
        for u in session_updates(items) {
            update_session(&mut tx, &u).await?;
        }
        tx.commit().await.map_err(sort)
    }

    async fn hold(&self, session_id: &str) -> Result<bool, DbError> {
        self.locks.take(&without_nul(session_id), sort).await
    }

    async fn release(&self, session_id: &str) -> Result<(), DbError> {
        self.locks.release(&without_nul(session_id), sort).await
    }

    async fn fork(&self, from: &str, new_id: &str, at: &str) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await.map_err(sort)?;
        let n = sqlx::query(
            "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, title, forked_from) \
             SELECT $1, $2::timestamptz, $2::timestamptz, cwd, provider, model, title, id FROM sessions \
             WHERE id = $3",
        )
        .bind(without_nul(new_id))
        .bind(at)
        .bind(without_nul(from))
        .execute(&mut *tx)
        .await
        .map_err(sort)?
        .rows_affected();
        if n != 1 {
            return Err(DbError::Rejected(format!("no session {from} to fork")));
        }
        sqlx::query(
            "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
             SELECT $1 || ':' || seq, $1, seq, kind, content, data, created_at FROM events \
             WHERE session_id = $2 ORDER BY seq",
        )
        .bind(without_nul(new_id))
        .bind(without_nul(from))
        .execute(&mut *tx)
        .await
        .map_err(sort)?;
        tx.commit().await.map_err(sort)
    }

    async fn delete_session(&self, session_id: &str) -> Result<(), DbError> {
        sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(without_nul(session_id))
            .execute(&self.pool)
            .await
            .map_err(sort)?;
        Ok(())
    }

    async fn event_exists(&self, id: &str) -> Result<bool, DbError> {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(sort)?;
        Ok(n > 0)
    }

    async fn sessions(&self, select: Select<'_>) -> Result<Vec<SessionInfo>, DbError> {
        let (sql, arg) = match select {
            Select::All => (session_sql("", ""), None),
            Select::LatestIn(cwd) => (session_sql("WHERE s.cwd = $1", "LIMIT 1"), Some(cwd.to_string())),
            Select::Id(id) => (session_sql("WHERE s.id = $1", ""), Some(id.to_string())),
            Select::Prefix(p) => (
                session_sql("WHERE s.id LIKE $1 ESCAPE '\\'", "LIMIT 2"),
                Some(like_prefix(p)),
            ),
        };
        let mut q = sqlx::query(&sql);
        if let Some(arg) = arg {
            q = q.bind(without_nul(&arg).into_owned());
        }
        let rows = q.fetch_all(&self.pool).await.map_err(sort)?;
        rows.iter().map(|r| session_info(r).map_err(sort)).collect()
    }

    async fn count_prefix(&self, prefix: &str) -> Result<i64, DbError> {
        sqlx::query_scalar("SELECT count(*) FROM sessions WHERE id LIKE $1 ESCAPE '\\'")
            .bind(without_nul(&like_prefix(prefix)).into_owned())
            .fetch_one(&self.pool)
            .await
            .map_err(sort)
    }

    async fn each_event(
        &self,
        session_id: &str,
        each: &mut (dyn FnMut(StoredEvent) -> ControlFlow<()> + Send),
    ) -> Result<(), DbError> {
        let mut rows = sqlx::query(
            "SELECT id, seq, kind, content, data::text AS data, \
             to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS created_at \
             FROM events WHERE session_id = $1 ORDER BY seq",
        )
        .bind(without_nul(session_id))
        .fetch(&self.pool);
        // Row by row: a long session is never held as rows.
        while let Some(r) = rows.try_next().await.map_err(sort)? {
            if each(StoredEvent::from_row(&r).map_err(sort)?).is_break() {
                break;
            }
        }
        Ok(())
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
