//! One writer per session. Who this store is (a random owner token, pid, host), the
//! SQLite lease rows (taken over once stale or when their process is gone) and the
//! PostgreSQL session-scoped advisory locks on a dedicated connection. Decides holding
//! only; what a refused hold means (a fork) is the handle's business.

use std::collections::HashSet;
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqlitePool;
use sqlx::{Connection, PgConnection, Row};
use tokio::sync::Mutex;

use super::backend::DbError;

/// How often a holder refreshes its SQLite lease rows.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(10);
/// A lease whose heartbeat is older than this is free, whoever wrote it.
pub(crate) const STALE: Duration = Duration::from_secs(60);

/// This store as a lease holder.
#[derive(Clone, Debug)]
pub(crate) struct Holder {
    /// Random per store handle: two stores in one process are two holders.
    pub token: String,
    pub pid: i64,
    pub host: String,
}

impl Holder {
    pub(super) fn new() -> Holder {
        Holder {
            token: uuid::Uuid::new_v4().to_string(),
            pid: i64::from(std::process::id()),
            host: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_default(),
        }
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Whether process `pid` exists on this host (a zombie counts until reaped).
fn process_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::ESRCH) => false,
        // EPERM: it exists, it is just not ours.
        Err(_) => true,
    }
}

/// A lease row as stored.
struct LeaseRow {
    owner: String,
    pid: i64,
    host: String,
    heartbeat: i64,
}

impl LeaseRow {
    /// Whether the holder it names may still be writing: its heartbeat is recent and,
    /// on this host, its process exists (a reused pid cannot keep a lease past `STALE`).
    fn live(&self, me: &Holder) -> bool {
        let age = now_ms().saturating_sub(self.heartbeat);
        if u128::try_from(age).unwrap_or(0) >= STALE.as_millis() {
            return false;
        }
        self.host != me.host || self.pid == me.pid || process_alive(self.pid)
    }
}

/// SQLite: takes the lease of `session_id` for `me` unless a live holder has it.
/// Compare-and-set, so two processes racing for a free or stale lease cannot both win.
pub(crate) async fn sqlite_take(
    pool: &SqlitePool,
    me: &Holder,
    session_id: &str,
    sort: fn(sqlx::Error) -> DbError,
) -> Result<bool, DbError> {
    for _ in 0..5 {
        let row = sqlx::query("SELECT owner, pid, host, heartbeat FROM leases WHERE session_id = ?")
            .bind(session_id)
            .fetch_optional(pool)
            .await
            .map_err(sort)?;
        let row = match row {
            Some(r) => Some(LeaseRow {
                owner: r.try_get("owner").map_err(sort)?,
                pid: r.try_get("pid").map_err(sort)?,
                host: r.try_get("host").map_err(sort)?,
                heartbeat: r.try_get("heartbeat").map_err(sort)?,
            }),
            None => None,
        };
        let done = match row {
            None => sqlx::query(
                "INSERT INTO leases (session_id, owner, pid, host, heartbeat) VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT (session_id) DO NOTHING",
            )
            .bind(session_id)
            .bind(&me.token)
            .bind(me.pid)
            .bind(&me.host)
            .bind(now_ms())
            .execute(pool)
            .await
            .map_err(sort)?
            .rows_affected(),
            Some(r) if r.owner == me.token => return Ok(true),
            Some(r) if r.live(me) => return Ok(false),
            Some(r) => sqlx::query(
                "UPDATE leases SET owner = ?, pid = ?, host = ?, heartbeat = ? \
                 WHERE session_id = ? AND owner = ?",
            )
            .bind(&me.token)
            .bind(me.pid)
            .bind(&me.host)
            .bind(now_ms())
            .bind(session_id)
            .bind(&r.owner)
            .execute(pool)
            .await
            .map_err(sort)?
            .rows_affected(),
        };
        if done == 1 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// SQLite: drops `me`'s lease rows, all of them or all but `keep`.
pub(crate) async fn sqlite_release(
    pool: &SqlitePool,
    me: &Holder,
    only: Option<&str>,
    keep: Option<&str>,
    sort: fn(sqlx::Error) -> DbError,
) -> Result<(), DbError> {
    sqlx::query(
        "DELETE FROM leases WHERE owner = ? AND (? IS NULL OR session_id = ?) \
         AND (? IS NULL OR session_id <> ?)",
    )
    .bind(&me.token)
    .bind(only)
    .bind(only)
    .bind(keep)
    .bind(keep)
    .execute(pool)
    .await
    .map_err(sort)?;
    Ok(())
}

/// SQLite: tells other processes `me` is alive.
pub(crate) async fn sqlite_heartbeat(pool: &SqlitePool, me: &Holder) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE leases SET heartbeat = ? WHERE owner = ?")
        .bind(now_ms())
        .bind(&me.token)
        .execute(pool)
        .await
        .map(|_| ())
}

/// The advisory lock class of ikigai sessions ("ikig"); the object is `hashtext(id)`.
const LOCK_CLASS: i32 = 0x696b_6967;

/// PostgreSQL: session-scoped advisory locks held on one dedicated connection, which
/// the server releases by itself when this process (and so the connection) is gone.
pub(crate) struct PgLocks {
    options: PgConnectOptions,
    timeout: Duration,
    /// The connection and the sessions locked on it.
    state: Mutex<(Option<PgConnection>, HashSet<String>)>,
}

impl PgLocks {
    pub(super) fn new(options: PgConnectOptions, timeout: Duration) -> PgLocks {
        PgLocks {
            options,
            timeout,
            state: Mutex::new((None, HashSet::new())),
        }
    }

    async fn connect(&self, sort: fn(sqlx::Error) -> DbError) -> Result<PgConnection, DbError> {
        match tokio::time::timeout(self.timeout, PgConnection::connect_with(&self.options)).await {
            Ok(r) => r.map_err(sort),
            Err(_) => Err(DbError::Unavailable("cannot connect (timed out)".into())),
        }
    }

    /// Locks `session_id` (unless already held here), then unlocks every other one.
    pub(super) async fn take(
        &self,
        session_id: &str,
        sort: fn(sqlx::Error) -> DbError,
    ) -> Result<bool, DbError> {
        let mut state = self.state.lock().await;
        let (conn, held) = &mut *state;
        // A connection the server dropped lost its locks: start again.
        if let Some(c) = conn.as_mut()
            && c.ping().await.is_err()
        {
            *conn = None;
            held.clear();
        }
        if conn.is_none() {
            *conn = Some(self.connect(sort).await?);
        }
        let Some(c) = conn.as_mut() else {
            return Err(DbError::Unavailable("no lock connection".into()));
        };
        if !held.contains(session_id) {
            let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, hashtext($2))")
                .bind(LOCK_CLASS)
                .bind(session_id)
                .fetch_one(&mut *c)
                .await
                .map_err(sort)?;
            if !got {
                return Ok(false);
            }
            held.insert(session_id.to_string());
        }
        let others: Vec<String> = held.iter().filter(|s| *s != session_id).cloned().collect();
        for other in others {
            unlock(c, &other, sort).await?;
            held.remove(&other);
        }
        Ok(true)
    }

    /// Re-takes the held locks when the server dropped their connection (a restart);
    /// a lock someone else took meanwhile is given up.
    pub(super) async fn keepalive(&self, sort: fn(sqlx::Error) -> DbError) {
        let mut state = self.state.lock().await;
        let (conn, held) = &mut *state;
        let Some(c) = conn.as_mut() else { return };
        if c.ping().await.is_ok() {
            return;
        }
        *conn = None;
        let Ok(mut fresh) = self.connect(sort).await else {
            return; // the next keepalive or hold tries again
        };
        let mut kept = HashSet::new();
        for id in held.iter() {
            let got: Result<bool, _> = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, hashtext($2))")
                .bind(LOCK_CLASS)
                .bind(id)
                .fetch_one(&mut fresh)
                .await;
            if matches!(got, Ok(true)) {
                kept.insert(id.clone());
            }
        }
        *held = kept;
        *conn = Some(fresh);
    }

    /// Unlocks `session_id` if held here.
    pub(super) async fn release(
        &self,
        session_id: &str,
        sort: fn(sqlx::Error) -> DbError,
    ) -> Result<(), DbError> {
        let mut state = self.state.lock().await;
        let (conn, held) = &mut *state;
        if held.remove(session_id)
            && let Some(c) = conn.as_mut()
        {
            unlock(c, session_id, sort).await?;
        }
        Ok(())
    }
}

async fn unlock(
    c: &mut PgConnection,
    session_id: &str,
    sort: fn(sqlx::Error) -> DbError,
) -> Result<(), DbError> {
    sqlx::query("SELECT pg_advisory_unlock($1, hashtext($2))")
        .bind(LOCK_CLASS)
        .bind(session_id)
        .execute(c)
        .await
        .map_err(sort)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_follows_pid_on_this_host_and_heartbeat_elsewhere() {
        let me = Holder::new();
        let row = |pid: i64, host: &str, age_ms: i64| LeaseRow {
            owner: "other".into(),
            pid,
            host: host.into(),
            heartbeat: now_ms() - age_ms,
        };
        // This very process (another store in it) is alive while it keeps beating.
        assert!(row(me.pid, &me.host, 1_000).live(&me));
        assert!(!row(me.pid, &me.host, 10_000_000).live(&me));
        // A pid that cannot exist is dead on this host, even with a fresh heartbeat.
        assert!(!row(i64::from(i32::MAX), &me.host, 0).live(&me));
        // On another host only the heartbeat counts.
        assert!(row(1, "elsewhere", 1_000).live(&me));
        assert!(!row(1, "elsewhere", 10_000_000).live(&me));
    }
}
