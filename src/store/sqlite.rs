//! The SQLite backend: opens (and creates, mode 0600, WAL) the file, applies the
//! embedded migrations, and runs the store's statements. No retry policy here.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, sqlite::SqliteRow};

use super::backend::{
    Backend, DbError, EventRow, MESSAGE_KINDS_SQL, OpenError, Select, StoredEvent, check_applied, classify,
    like_prefix, migrate_failed,
};
use super::location::parent_dir;
use super::{SessionInfo, SessionMeta};

/// The SQLite schema, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// SQLite result codes (primary, low byte) that mean "not now" rather than "never".
const TRANSIENT_CODES: [i64; 8] = [
    5,  // BUSY
    6,  // LOCKED
    7,  // NOMEM
    8,  // READONLY
    10, // IOERR
    13, // FULL
    14, // CANTOPEN
    15, // PROTOCOL
];

fn sort(e: sqlx::Error) -> DbError {
    classify(e, |d| {
        let code = d.code().and_then(|c| c.parse::<i64>().ok()).unwrap_or(0);
        if TRANSIENT_CODES.contains(&(code & 0xff)) {
            DbError::Unavailable(d.message().to_string())
        } else {
            DbError::Rejected(d.message().to_string())
        }
    })
}

/// An open SQLite database.
pub(crate) struct Sqlite {
    pool: SqlitePool,
}

/// Creates the folder (0700) and file (0600) when missing, opens the pool in WAL mode
/// and brings the schema up to date.
pub(crate) async fn connect(path: &Path, timeout: Duration) -> Result<Arc<dyn Backend>, OpenError> {
    if let Some(dir) = parent_dir(path) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| OpenError::Unavailable(format!("cannot create folder {}: {e}", dir.display())))?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(OpenError::Unavailable(format!(
                "cannot create {}: {e}",
                path.display()
            )));
        }
    }
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .acquire_timeout(timeout)
        .connect_with(options)
        .await
        .map_err(|e| OpenError::from(sort(e)))?;
    let has_table: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_one(&pool)
    .await
    .map_err(|e| OpenError::from(sort(e)))?;
    if has_table > 0 {
        let applied: Option<i64> = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
            .fetch_one(&pool)
            .await
            .map_err(|e| OpenError::from(sort(e)))?;
        check_applied(applied, &MIGRATOR)?;
    }
    // SQLite has no migration lock: two processes starting on a fresh file may both try
    // to apply a migration. The loser fails, then finds it applied on the next run.
    let mut attempt = 0;
    loop {
        match MIGRATOR.run(&pool).await {
            Ok(()) => break,
            // The loser's error is `ExecuteMigration` ("table … already exists") or, while
            // the winner holds the write lock, a busy `Execute`.
            Err(
                sqlx::migrate::MigrateError::Execute(_) | sqlx::migrate::MigrateError::ExecuteMigration(..),
            ) if attempt < 8 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
            }
            Err(e) => return Err(migrate_failed(e, &MIGRATOR, sort)),
        }
    }
    Ok(Arc::new(Sqlite { pool }))
}

const SESSION_SELECT: &str = "SELECT s.id, s.created_at, s.updated_at, s.cwd, s.provider, s.model, s.title, \
     (SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.kind IN (";

fn session_sql(filter: &str, limit: &str) -> String {
    format!(
        "{SESSION_SELECT}{MESSAGE_KINDS_SQL})) AS messages FROM sessions s {filter} \
         ORDER BY s.updated_at DESC, s.id DESC {limit}"
    )
}

fn session_info(row: &SqliteRow) -> Result<SessionInfo, sqlx::Error> {
    Ok(SessionInfo {
        id: row.try_get("id")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        cwd: row.try_get("cwd")?,
        provider: row.try_get("provider")?,
        model: row.try_get("model")?,
        messages: row.try_get("messages")?,
        title: row.try_get("title")?,
    })
}

#[async_trait]
impl Backend for Sqlite {
    async fn insert_session(&self, meta: &SessionMeta, at: &str) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model) \
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&meta.id)
        .bind(at)
        .bind(at)
        .bind(&meta.cwd)
        .bind(&meta.provider)
        .bind(&meta.model)
        .execute(&self.pool)
        .await
        .map_err(sort)?;
        Ok(())
    }

    async fn max_seq(&self, session_id: &str) -> Result<i64, DbError> {
        let max: Option<i64> = sqlx::query_scalar("SELECT max(seq) FROM events WHERE session_id = ?")
            .bind(session_id)
            .fetch_one(&self.pool)
            .await
            .map_err(sort)?;
        Ok(max.unwrap_or(0))
    }

    async fn insert_event(&self, row: &EventRow) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await.map_err(sort)?;
        sqlx::query(
            "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&row.id)
        .bind(&row.session_id)
        .bind(row.seq)
        .bind(&row.kind)
        .bind(&row.content)
        .bind(row.data.as_ref().map(|d| d.to_string()))
        .bind(&row.created_at)
        .execute(&mut *tx)
        .await
        .map_err(sort)?;
        sqlx::query(
            "UPDATE sessions SET updated_at = max(updated_at, ?), title = coalesce(title, ?), \
             model = coalesce(?, model) WHERE id = ?",
        )
        .bind(&row.created_at)
        .bind(&row.title)
        .bind(&row.model)
        .bind(&row.session_id)
        .execute(&mut *tx)
        .await
        .map_err(sort)?;
        tx.commit().await.map_err(sort)
    }

    async fn event_exists(&self, id: &str) -> Result<bool, DbError> {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(sort)?;
        Ok(n > 0)
    }

    async fn sessions(&self, select: Select<'_>) -> Result<Vec<SessionInfo>, DbError> {
        let (sql, arg) = match select {
            Select::All => (session_sql("", ""), None),
            Select::LatestIn(cwd) => (session_sql("WHERE s.cwd = ?", "LIMIT 1"), Some(cwd.to_string())),
            Select::Id(id) => (session_sql("WHERE s.id = ?", ""), Some(id.to_string())),
            Select::Prefix(p) => (
                session_sql("WHERE s.id LIKE ? ESCAPE '\\'", "LIMIT 2"),
                Some(like_prefix(p)),
            ),
        };
        let mut q = sqlx::query(&sql);
        if let Some(arg) = arg {
            q = q.bind(arg);
        }
        let rows = q.fetch_all(&self.pool).await.map_err(sort)?;
        rows.iter().map(|r| session_info(r).map_err(sort)).collect()
    }

    async fn count_prefix(&self, prefix: &str) -> Result<i64, DbError> {
        sqlx::query_scalar("SELECT count(*) FROM sessions WHERE id LIKE ? ESCAPE '\\'")
            .bind(like_prefix(prefix))
            .fetch_one(&self.pool)
            .await
            .map_err(sort)
    }

    async fn events(&self, session_id: &str) -> Result<Vec<StoredEvent>, DbError> {
        let rows =
            sqlx::query("SELECT seq, kind, content, data FROM events WHERE session_id = ? ORDER BY seq")
                .bind(session_id)
                .fetch_all(&self.pool)
                .await
                .map_err(sort)?;
        rows.iter()
            .map(|r| {
                Ok(StoredEvent {
                    seq: r.try_get("seq")?,
                    kind: r.try_get("kind")?,
                    content: r.try_get("content")?,
                    data: r.try_get("data")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(sort)
    }
}
