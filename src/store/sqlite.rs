//! The SQLite backend: opens (and creates, mode 0600, WAL) the file through one lasting
//! connection, applies the embedded migrations, and runs the store's statements; notices
//! (by device and inode) when the file is deleted or replaced under it, and recreates it
//! from the original it still has open. No retry policy here.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::SessionInfo;
use super::backend::{
    Backend, DbError, MESSAGE_KINDS_SQL, OpenError, Select, StoredEvent, check_applied, classify,
    migrate_failed,
};
use super::lease::{self, Holder};
use super::location::parent_dir;
use super::sql::{Db, Dialect};

/// The SQLite schema, embedded in the binary.
pub(super) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

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

/// The page cache every connection keeps, in KiB (negative: a size, not pages).
const CACHE_KIB: &str = "-512";
const CACHE_SIZE: &str = "PRAGMA cache_size = -512";

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

/// SQLite's side of the statements: `?` placeholders, lease rows to hold a session, and
/// the file on disk, which may be deleted or replaced under ikigai.
pub(crate) struct Lite {
    path: PathBuf,
    /// (device, inode) of the file when opened.
    file: Option<(u64, u64)>,
    me: Holder,
    timeout: Duration,
    /// The file was deleted or replaced while it was being opened.
    replaced_at_open: bool,
}

/// An open SQLite database.
pub(crate) type Sqlite = Db<Lite>;

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
                    db.dialect.replaced_at_open = true;
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
        .pragma("cache_size", CACHE_KIB);
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
    let db = Arc::new(Db {
        pool,
        dialect: Lite {
            file,
            path: path.to_path_buf(),
            me: me.clone(),
            timeout,
            replaced_at_open: false,
        },
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
        let _ = lease::sqlite_heartbeat(&db.pool, &db.dialect.me).await;
    }
}

/// One session as stored, to carry into a recreated file.
struct Dump {
    session: SessionInfo,
    events: Vec<StoredEvent>,
}

/// Writes a session row and its events as they were in an older file.
async fn restore_dump(c: &mut sqlx::SqliteConnection, dump: &Dump) -> Result<(), DbError> {
    let s = &dump.session;
    sqlx::query(
        "INSERT OR IGNORE INTO sessions (id, created_at, updated_at, cwd, provider, model, title, forked_from, \
         parent_id, parent_call) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&s.id)
    .bind(&s.created_at)
    .bind(&s.updated_at)
    .bind(&s.cwd)
    .bind(&s.provider)
    .bind(&s.model)
    .bind(&s.title)
    .bind(&s.forked_from)
    .bind(&s.parent)
    .bind(&s.parent_call)
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
impl Dialect for Lite {
    type Db = sqlx::Sqlite;
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const INSERT_SESSION: &'static str = "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, parent_id, parent_call) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING";
    const INSERT_EVENT: &'static str = "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)";
    const UPDATE_SESSION: &'static str = "UPDATE sessions SET updated_at = max(updated_at, ?), title = coalesce(title, ?), \
         model = coalesce(?, model), provider = coalesce(?, provider) WHERE id = ?";
    const FORK_SESSION: &'static str = "INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, title, forked_from) \
         SELECT ?, ?, ?, cwd, provider, model, title, id FROM sessions WHERE id = ?";
    const FORK_EVENTS: &'static str = "INSERT INTO events (id, session_id, seq, kind, content, data, created_at) \
         SELECT ? || ':' || seq, ?, seq, kind, content, data, created_at FROM events \
         WHERE session_id = ? ORDER BY seq";
    const DELETE_SESSION: &'static str = "DELETE FROM sessions WHERE id = ?";
    const MAX_SEQ: &'static str = "SELECT max(seq) FROM events WHERE session_id = ?";
    const EVENT_EXISTS: &'static str = "SELECT count(*) FROM events WHERE id = ?";
    const COUNT_PREFIX: &'static str = "SELECT count(*) FROM sessions WHERE id LIKE ? ESCAPE '\\'";
    const EVENTS: &'static str =
        "SELECT id, seq, kind, content, data, created_at FROM events WHERE session_id = ? ORDER BY seq";
    const BY_CWD: &'static str = "WHERE s.cwd = ? AND s.parent_id IS NULL";
    const BY_ID: &'static str = "WHERE s.id = ?";
    const BY_PREFIX: &'static str = "WHERE s.id LIKE ? ESCAPE '\\'";

    fn sessions_sql(filter: &str, limit: &str) -> String {
        format!(
            "SELECT s.id, s.created_at, s.updated_at, s.cwd, s.provider, s.model, s.title, s.forked_from, s.parent_id, s.parent_call, \
             (SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.kind IN ({MESSAGE_KINDS_SQL})) \
             AS messages, \
             (SELECT sum(json_extract(e.data, '$.cost')) FROM events e WHERE e.session_id = s.id AND e.kind = 'usage') \
             AS cost FROM sessions s {filter} ORDER BY s.updated_at DESC, s.id DESC {limit}"
        )
    }

    fn sort(e: sqlx::Error) -> DbError {
        sort(e)
    }

    fn affected(r: &sqlx::sqlite::SqliteQueryResult) -> u64 {
        r.rows_affected()
    }

    async fn hold(&self, pool: &SqlitePool, session_id: &str) -> Result<bool, DbError> {
        if !lease::sqlite_take(pool, &self.me, session_id, sort).await? {
            return Ok(false);
        }
        lease::sqlite_release(pool, &self.me, None, Some(session_id), sort).await?;
        Ok(true)
    }

    async fn release(&self, pool: &SqlitePool, session_id: &str) -> Result<(), DbError> {
        lease::sqlite_release(pool, &self.me, Some(session_id), None, sort).await
    }

    fn file_gone(&self) -> bool {
        self.file.is_some() && file_id(&self.path) != self.file
    }

    fn replaced_at_open(&self) -> bool {
        self.replaced_at_open
    }

    async fn recreate(&self, old: &Sqlite, keep: &[String]) -> Result<Arc<dyn Backend>, DbError> {
        // The old file is unlinked but still open here: read what must survive first.
        let mut dumps = Vec::new();
        for id in keep {
            let Some(session) = old.sessions(Select::Id(id)).await?.into_iter().next() else {
                continue;
            };
            let events = old.events(id).await?;
            dumps.push(Dump { session, events });
        }
        old.pool.close().await;
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
        let mut tx = fresh.pool.begin_with(Self::BEGIN_WRITE).await.map_err(sort)?;
        for d in &dumps {
            restore_dump(&mut tx, d).await?;
        }
        tx.commit().await.map_err(sort)?;
        Ok(fresh)
    }

    async fn before_scan(&self, c: &mut sqlx::SqliteConnection) {
        // One pass over the rows needs few cached pages: a small cache keeps a long
        // session's pages from piling up beside the conversation being built from them.
        let _ = sqlx::query("PRAGMA cache_size = -64").execute(&mut *c).await;
    }

    async fn after_scan(&self, c: &mut sqlx::SqliteConnection) {
        // Then give them back, and the connection its usual cache.
        let _ = sqlx::query("PRAGMA shrink_memory").execute(&mut *c).await;
        let _ = sqlx::query(CACHE_SIZE).execute(&mut *c).await;
    }
}
