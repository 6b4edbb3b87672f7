//! The SQLite backend: opens (and creates, mode 0600, WAL) the file through one lasting
//! connection, applies the embedded migrations, and runs the store's statements; notices
//! (by device and inode) when the file is deleted or replaced under it, and recreates it
//! from the original it still has open. No retry policy here.

use std::ops::ControlFlow;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, sqlite::SqliteRow};

use super::backend::{
    Backend, DbError, EventRow, MESSAGE_KINDS_SQL, OpenError, Select, SessionUpdate, StoredEvent, Write,
    check_applied, classify, like_prefix, migrate_failed, session_updates,
};
use super::lease::{self, Holder};
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
    path: PathBuf,
    /// (device, inode) of the file when opened.
    file: Option<(u64, u64)>,
    me: Holder,
    timeout: Duration,
    /// The file was deleted or replaced while it was being opened.
    replaced_at_open: bool,
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Creates the folder (0700) and file (0600) when missing, opens the pool in WAL mode
/// and brings the schema up to date. `me` holds sessions through lease rows, refreshed
/// by a heartbeat task while this backend lives.
pub(crate) async fn connect(
    path: &Path,
    timeout: Duration,
    me: &Holder,
) -> Result<Arc<dyn Backend>, OpenError> {
    let db = open(path, timeout, me).await?;
    tokio::spawn(heartbeat(Arc::downgrade(&db)));
    Ok(db)
}

/// `open_once`, again when the file was deleted or replaced while it was being opened
/// (by a tool the model ran, say): the store then starts on the file now at `path`.
async fn open(path: &Path, timeout: Duration, me: &Holder) -> Result<Arc<Sqlite>, OpenError> {
    let mut tries = 0;
    loop {
        let mut file = None;
        match open_once(path, timeout, me, &mut file).await {
            Err(e) if tries < 4 && file_id(path) != file => {
                tries += 1;
                drop(e);
            }
            Ok(mut db) if tries > 0 => {
                if let Some(db) = Arc::get_mut(&mut db) {
                    db.replaced_at_open = true;
                }
                return Ok(db);
            }
            result => return result,
        }
    }
}

/// Creates and opens the file at `path`; `file` gets the (device, inode) it opened.
async fn open_once(
    path: &Path,
    timeout: Duration,
    me: &Holder,
    file: &mut Option<(u64, u64)>,
) -> Result<Arc<Sqlite>, OpenError> {
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
    // The one connection this file gets (see `pool`), checked to be this very file.
    *file = file_id(path);
    let file = *file;
    let options = SqliteConnectOptions::new()
        .filename(path)
        // Created above; a connection opened later must not make an empty one.
        .create_if_missing(false)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true)
        // At most 512 KiB of cached pages (SQLite's default is 2 MiB): counting a long
        // session's messages reads all its rows, which would stay resident.
        .pragma("cache_size", "-512");
    let pool = pool(path, file, timeout)
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
    let db = Arc::new(Sqlite {
        file,
        pool,
        path: path.to_path_buf(),
        me: me.clone(),
        timeout,
        replaced_at_open: false,
    });
    Ok(db)
}

/// One connection, opened once and kept for the life of the backend. A file deleted or
/// replaced under ikigai is then read and written only through the connection that
/// opened the original (which still reaches its data) until the writer notices and
/// `recreate`s it: a second connection opened later would see an empty or foreign file,
/// and share the original's `-wal` and `-shm` with it. Should the pool ever open another
/// connection, one to a file other than `file` is refused.
fn pool(path: &Path, file: Option<(u64, u64)>, timeout: Duration) -> SqlitePoolOptions {
    let path = path.to_path_buf();
    SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .idle_timeout(None)
        .max_lifetime(None)
        .test_before_acquire(false)
        .acquire_timeout(timeout)
        .after_connect(move |_, _| {
            let same = file.is_some() && file_id(&path) == file;
            let path = path.clone();
            Box::pin(async move {
                if same {
                    Ok(())
                } else {
                    Err(sqlx::Error::Io(std::io::Error::other(format!(
                        "{} was deleted or replaced",
                        path.display()
                    ))))
                }
            })
        })
}

/// Refreshes this holder's leases until the backend is dropped.
async fn heartbeat(db: Weak<Sqlite>) {
    loop {
        tokio::time::sleep(lease::HEARTBEAT).await;
        let Some(db) = db.upgrade() else { return };
        if db.pool.is_closed() {
            return;
        }
        let _ = lease::sqlite_heartbeat(&db.pool, &db.me).await;
    }
}

async fn insert_event(tx: &mut sqlx::SqliteConnection, row: &EventRow) -> Result<(), DbError> {
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
    Ok(())
}

async fn update_session(c: &mut sqlx::SqliteConnection, u: &SessionUpdate) -> Result<(), DbError> {
    sqlx::query(
        "UPDATE sessions SET updated_at = max(updated_at, ?), title = coalesce(title, ?), \
         model = coalesce(?, model), provider = coalesce(?, provider) WHERE id = ?",
    )
    .bind(&u.updated_at)
    .bind(&u.title)
    .bind(&u.model)
    .bind(&u.provider)
    .bind(&u.session_id)
    .execute(&mut *c)
    .await
    .map_err(sort)?;
    Ok(())
}

async fn insert_session(c: &mut sqlx::SqliteConnection, meta: &SessionMeta, at: &str) -> Result<(), DbError> {
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
    .execute(&mut *c)
    .await
    .map_err(sort)?;
    Ok(())
}

/// One session as stored, to carry into a recreated file.
struct Dump {
    session: SessionInfo,
    events: Vec<StoredEvent>,
}

const SESSION_SELECT: &str = "SELECT s.id, s.created_at, s.updated_at, s.cwd, s.provider, s.model, s.title, s.forked_from, \
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
        forked_from: row.try_get("forked_from")?,
    })
}

/// Writes a session row and its events as they were in an older file.
async fn restore_dump(c: &mut sqlx::SqliteConnection, dump: &Dump) -> Result<(), DbError> {
    let s = &dump.session;
    sqlx::query(
        "INSERT OR IGNORE INTO sessions (id, created_at, updated_at, cwd, provider, model, title, forked_from) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&s.id)
    .bind(&s.created_at)
    .bind(&s.updated_at)
    .bind(&s.cwd)
    .bind(&s.provider)
    .bind(&s.model)
    .bind(&s.title)
    .bind(&s.forked_from)
    .execute(&mut *c)
    .await
    .map_err(sort)?;
    for e in &dump.events {
        sqlx::query(
            "INSERT OR IGNORE INTO events (id, session_id, seq, kind, content, data, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&e.id)
        .bind(&s.id)
        .bind(e.seq)
        .bind(&e.kind)
        .bind(&e.content)
        .bind(&e.data)
        .bind(&e.created_at)
        .execute(&mut *c)
        .await
        .map_err(sort)?;
    }
    Ok(())
}

#[async_trait]
impl Backend for Sqlite {
    async fn insert_session(&self, meta: &SessionMeta, at: &str) -> Result<(), DbError> {
        let mut c = self.pool.acquire().await.map_err(sort)?;
        insert_session(&mut c, meta, at).await
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
        if !lease::sqlite_take(&self.pool, &self.me, session_id, sort).await? {
            return Ok(false);
        }
        lease::sqlite_release(&self.pool, &self.me, None, Some(session_id), sort).await?;
        Ok(true)
    }

    async fn release(&self, session_id: &str) -> Result<(), DbError> {
        lease::sqlite_release(&self.pool, &self.me, Some(session_id), None, sort).await
    }

    async fn fork(&self, from: &str, new_id: &str, at: &str) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await.map_err(sort)?;
        let n = sqlx::query(
            "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, title, forked_from) \
             SELECT ?, ?, ?, cwd, provider, model, title, id FROM sessions WHERE id = ?",
        )
        .bind(new_id)
        .bind(at)
        .bind(at)
        .bind(from)
        .execute(&mut *tx)
        .await
        .map_err(sort)?
        .rows_affected();
        if n != 1 {
            return Err(DbError::Rejected(format!("no session {from} to fork")));
        }
        sqlx::query(
            "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
             SELECT ? || ':' || seq, ?, seq, kind, content, data, created_at FROM events \
             WHERE session_id = ? ORDER BY seq",
        )
        .bind(new_id)
        .bind(new_id)
        .bind(from)
        .execute(&mut *tx)
        .await
        .map_err(sort)?;
        tx.commit().await.map_err(sort)
    }

    async fn delete_session(&self, session_id: &str) -> Result<(), DbError> {
        sqlx::query("DELETE FROM sessions WHERE id = ?")
            .bind(session_id)
            .execute(&self.pool)
            .await
            .map_err(sort)?;
        Ok(())
    }

    fn replaced_at_open(&self) -> bool {
        self.replaced_at_open
    }

    fn file_gone(&self) -> bool {
        self.file.is_some() && file_id(&self.path) != self.file
    }

    async fn recreate(&self, keep: &[String]) -> Result<Arc<dyn Backend>, DbError> {
        // The old file is unlinked but still open here: read what must survive first.
        let mut dumps = Vec::new();
        for id in keep {
            let Some(session) = self.sessions(Select::Id(id)).await?.into_iter().next() else {
                continue;
            };
            let events = self.events(id).await?;
            dumps.push(Dump { session, events });
        }
        self.pool.close().await;
        if !self.path.exists() {
            // A WAL left by the deleted file must not be replayed into the new one.
            for suffix in ["-wal", "-shm"] {
                let mut p = self.path.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(PathBuf::from(p));
            }
        }
        let fresh = open(&self.path, self.timeout, &self.me)
            .await
            .map_err(|e| match e {
                OpenError::Unavailable(why) => DbError::Unavailable(why),
                OpenError::Fatal(e) => DbError::Rejected(e.to_string()),
            })?;
        tokio::spawn(heartbeat(Arc::downgrade(&fresh)));
        let mut tx = fresh.pool.begin().await.map_err(sort)?;
        for d in &dumps {
            restore_dump(&mut tx, d).await?;
        }
        tx.commit().await.map_err(sort)?;
        Ok(fresh)
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

    async fn each_event(
        &self,
        session_id: &str,
        each: &mut (dyn FnMut(StoredEvent) -> ControlFlow<()> + Send),
    ) -> Result<(), DbError> {
        let mut c = self.pool.acquire().await.map_err(sort)?;
        // One pass over the rows needs few cached pages: a small cache keeps a long
        // session's pages from piling up beside the conversation being built from them.
        let usual: i64 = sqlx::query_scalar("PRAGMA cache_size")
            .fetch_one(&mut *c)
            .await
            .unwrap_or(-512);
        let _ = sqlx::query("PRAGMA cache_size = -64").execute(&mut *c).await;
        {
            let mut rows = sqlx::query(
                "SELECT id, seq, kind, content, data, created_at FROM events WHERE session_id = ? ORDER BY seq",
            )
            .bind(session_id)
            .fetch(&mut *c);
            // Row by row: a long session is never held as rows.
            while let Some(r) = rows.try_next().await.map_err(sort)? {
                if each(StoredEvent::from_row(&r).map_err(sort)?).is_break() {
                    break;
                }
            }
        }
        // Then give them back, and the connection its usual cache. Only memory and
        // speed: errors are moot.
        let _ = sqlx::query("PRAGMA shrink_memory").execute(&mut *c).await;
        let _ = sqlx::query(&format!("PRAGMA cache_size = {usual}"))
            .execute(&mut *c)
            .await;
        Ok(())
    }
}
