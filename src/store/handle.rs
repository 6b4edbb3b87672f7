//! The `Sessions` handle callers hold: queues writes for the writer task (never waiting
//! on the database), and reads, claims, forks and deletes through the connection the
//! writer opened, after the writes queued before them.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot, watch};

use super::backend::{Backend, EventRow, Select, Write, now};
use super::channel::{Cmd, Conn};
use super::restore::{Rebuilder, Restored};
use super::{Claimed, EventInfo, Record, SessionInfo, SessionMeta, Sessions, StoreError, Target};
use crate::protocol::{Event, NoticeLevel};

/// The `Sessions` handle.
pub(crate) struct Store {
    tx: mpsc::UnboundedSender<Cmd>,
    state: watch::Receiver<Conn>,
    pending: Arc<AtomicUsize>,
    notices: mpsc::UnboundedSender<Event>,
    name: String,
    grace: Duration,
}

impl Store {
    pub(super) fn new(
        tx: mpsc::UnboundedSender<Cmd>,
        state: watch::Receiver<Conn>,
        pending: Arc<AtomicUsize>,
        notices: mpsc::UnboundedSender<Event>,
        name: String,
        grace: Duration,
    ) -> Store {
        Store {
            tx,
            state,
            pending,
            notices,
            name,
            grace,
        }
    }

    fn send(&self, cmd: Cmd) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(cmd).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn unavailable(&self, conn: &Conn) -> StoreError {
        match conn {
            Conn::Down(why) => StoreError::Unavailable(why.clone()),
            Conn::Failed(f) => f.clone(),
            _ => StoreError::Unavailable(format!("{}: the writer stopped", self.name)),
        }
    }

    /// The database once connected, after every write queued before this call (and the
    /// spool replayed at start) is written.
    async fn ready(&self) -> Result<Arc<dyn Backend>, StoreError> {
        let mut state = self.state.clone();
        let conn = state
            .wait_for(|c| !matches!(c, Conn::Connecting))
            .await
            .map(|c| c.clone())
            .map_err(|_| StoreError::Unavailable(format!("{}: the writer stopped", self.name)))?;
        if !matches!(conn, Conn::Up(_)) {
            return Err(self.unavailable(&conn));
        }
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Sync(tx)).is_err() {
            return Err(self.unavailable(&conn));
        }
        let mut watch = self.state.clone();
        let mut rx = rx;
        let down = tokio::select! {
            _ = &mut rx => None,
            down = watch.wait_for(|c| matches!(c, Conn::Down(_) | Conn::Failed(_))) => {
                Some(down.map(|c| c.clone()).unwrap_or(Conn::Connecting))
            }
        };
        if let Some(conn) = down {
            // A write queued before this read failed for a moment (SQLite busy past its
            // timeout under load, a dropped connection): the writer retries after its
            // backoff; the read waits for it that long, not failing at the first blip.
            // A final failure is reported at once.
            if matches!(conn, Conn::Failed(_)) || tokio::time::timeout(self.grace, rx).await.is_err() {
                let now = self.state.borrow().clone();
                return Err(self.unavailable(&now));
            }
        }
        // The writer may have swapped the connection (a recreated file).
        match self.state.borrow().clone() {
            Conn::Up(db) => Ok(db),
            other => Err(self.unavailable(&other)),
        }
    }

    /// The session an id or unique id prefix names.
    async fn find(&self, db: &dyn Backend, id_prefix: &str) -> Result<SessionInfo, StoreError> {
        let prefix = id_prefix.trim();
        if prefix.is_empty() {
            return Err(StoreError::NotFound(id_prefix.to_string()));
        }
        if let Some(info) = db.sessions(Select::Id(prefix)).await?.into_iter().next() {
            return Ok(info);
        }
        let mut found = db.sessions(Select::Prefix(prefix)).await?;
        match found.len() {
            0 => Err(StoreError::NotFound(prefix.to_string())),
            1 => Ok(found.remove(0)),
            _ => {
                let count = db.count_prefix(prefix).await?;
                Err(StoreError::Ambiguous {
                    prefix: prefix.to_string(),
                    count: usize::try_from(count).unwrap_or(usize::MAX),
                })
            }
        }
    }

    async fn records(&self, db: &dyn Backend, id: &str) -> Result<Vec<Record>, StoreError> {
        let mut out = Vec::new();
        self.each_record(db, id, &mut |r| out.push(r)).await?;
        Ok(out)
    }

    /// Hands a session's records to `each` in order, converting row by row (neither the
    /// rows nor the records are held whole); stops at the first damaged one.
    async fn each_record(
        &self,
        db: &dyn Backend,
        id: &str,
        each: &mut (dyn FnMut(Record) + Send),
    ) -> Result<(), StoreError> {
        let mut damage = None;
        db.each_event(id, &mut |e| match e.into_record(id) {
            Ok(r) => {
                each(r);
                ControlFlow::Continue(())
            }
            Err(e) => {
                damage = Some(e);
                ControlFlow::Break(())
            }
        })
        .await?;
        damage.map_or(Ok(()), Err)
    }

    /// A session's conversation, rebuilt as its rows arrive, and its record count. `info`
    /// counts its messages, so the conversation is sized once instead of growing by
    /// doubling (which for a moment holds it one and a half times).
    async fn restore(&self, db: &dyn Backend, info: &SessionInfo) -> Result<(Restored, usize), StoreError> {
        let id = info.id.as_str();
        let mut b = Rebuilder::with_capacity(usize::try_from(info.messages).unwrap_or(0));
        self.each_record(db, id, &mut |r| b.push(r)).await?;
        let count = b.count();
        Ok((b.finish(), count))
    }
}

#[async_trait]
impl Sessions for Store {
    fn begin(&self, meta: SessionMeta) {
        self.send(Cmd::Write(Write::Session { meta, at: now() }));
    }

    fn record(&self, session_id: &str, record: Record) {
        let id = uuid::Uuid::now_v7().to_string();
        let row = EventRow::new(id, session_id.to_string(), record, now());
        self.send(Cmd::Write(Write::Event(row)));
    }

    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let db = self.ready().await?;
        Ok(db.sessions(Select::All).await?)
    }

    async fn latest_in(&self, cwd: &str) -> Result<Option<SessionInfo>, StoreError> {
        let db = self.ready().await?;
        Ok(db.sessions(Select::LatestIn(cwd)).await?.into_iter().next())
    }

    async fn load(&self, id_prefix: &str) -> Result<(SessionInfo, Vec<Record>), StoreError> {
        let db = self.ready().await?;
        let info = self.find(db.as_ref(), id_prefix).await?;
        let records = self.records(db.as_ref(), &info.id).await?;
        Ok((info, records))
    }

    async fn claim(&self, target: Target<'_>) -> Result<Claimed, StoreError> {
        let db = self.ready().await?;
        let info = match target {
            Target::Id(prefix) => self.find(db.as_ref(), prefix).await?,
            Target::LatestIn(cwd) => db
                .sessions(Select::LatestIn(cwd))
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| StoreError::NotFound(format!("any session in {cwd}")))?,
        };
        if db.hold(&info.id).await? {
            let _ = self.tx.send(Cmd::Held(info.id.clone()));
            let (restored, records) = self.restore(db.as_ref(), &info).await?;
            return Ok(Claimed {
                info,
                restored,
                records,
                forked_from: None,
            });
        }
        // A fork is visible (it is the newest session of the folder) before this process
        // holds it, so a racing `--continue` may take it first: then fork again.
        let mut fork_id = uuid::Uuid::new_v4().to_string();
        let mut tries = 0;
        loop {
            db.fork(&info.id, &fork_id, &now()).await?;
            if db.hold(&fork_id).await? {
                break;
            }
            tries += 1;
            if tries >= 8 {
                return Err(StoreError::Held(fork_id));
            }
            fork_id = uuid::Uuid::new_v4().to_string();
        }
        let _ = self.tx.send(Cmd::Held(fork_id.clone()));
        let fork = self.find(db.as_ref(), &fork_id).await?;
        let (restored, records) = self.restore(db.as_ref(), &fork).await?;
        Ok(Claimed {
            info: fork,
            restored,
            records,
            forked_from: Some(info.id),
        })
    }

    async fn delete(&self, id_prefix: &str) -> Result<SessionInfo, StoreError> {
        let db = self.ready().await?;
        let info = self.find(db.as_ref(), id_prefix).await?;
        if !db.hold(&info.id).await? {
            return Err(StoreError::Held(info.id));
        }
        db.delete_session(&info.id).await?;
        db.release(&info.id).await?;
        Ok(info)
    }

    async fn export(&self, id_prefix: &str) -> Result<(SessionInfo, Vec<EventInfo>), StoreError> {
        let db = self.ready().await?;
        let info = self.find(db.as_ref(), id_prefix).await?;
        let events = db.events(&info.id).await?.iter().map(|e| e.info()).collect();
        Ok((info, events))
    }

    async fn flush(&self) {
        if self.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Flush(tx)).is_err() {
            return;
        }
        // The writer answers at once when the database is down (it spools); this only
        // guards against a writer stuck on a database that hangs.
        let mut state = self.state.clone();
        let grace = self.grace;
        let give_up = async move {
            let _ = state
                .wait_for(|c| matches!(c, Conn::Down(_) | Conn::Failed(_)))
                .await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            _ = rx => {}
            _ = give_up => {
                let n = self.pending.load(Ordering::SeqCst);
                if n > 0 {
                    let text = format!("{n} events are not saved yet: {} is unavailable", self.name);
                    let _ = self.notices.send(Event::notice(NoticeLevel::Warning, text));
                }
            }
        }
    }
}
