//! The store writer: one task owns the database, connects in the background, writes
//! queued records in order (each its own event), keeps them in memory while the database
//! is down and retries. `Store` is the `Sessions` handle the agent holds; it never waits
//! on the database when recording.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot, watch};

use super::backend::{Backend, DbError, EventRow, OpenError, Select};
use super::location::Location;
use super::{Record, SessionInfo, SessionMeta, Sessions, StoreError, postgres, sqlite};
use crate::config::Config;
use crate::protocol::{Event, NoticeLevel};

/// How the writer waits and how much it keeps. `Default` is what ikigai uses.
#[derive(Clone, Debug)]
pub struct Options {
    /// First wait before retrying an unavailable database; doubles up to `retry_max`.
    pub retry_min: Duration,
    pub retry_max: Duration,
    /// Longest wait for a connection (and for one connection attempt).
    pub connect_timeout: Duration,
    /// How long `flush` still waits once the database is down.
    pub flush_grace: Duration,
    /// Most records kept in memory while the database is down; newer ones are dropped
    /// (with one warning) beyond that.
    pub max_queued: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            retry_min: Duration::from_secs(1),
            retry_max: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            flush_grace: Duration::from_secs(3),
            max_queued: 200_000,
        }
    }
}

/// Opens the session store for `config` at once; connecting and migrating happen in the
/// background. Problems reach the user as `Event::Notice`s on `notices`.
pub fn open(config: &Config, notices: mpsc::UnboundedSender<Event>) -> Arc<dyn Sessions> {
    open_with(config, notices, Options::default())
}

/// `open` with explicit timings and limits.
pub fn open_with(
    config: &Config,
    notices: mpsc::UnboundedSender<Event>,
    options: Options,
) -> Arc<dyn Sessions> {
    let (tx, rx) = mpsc::unbounded_channel();
    let (state_tx, state_rx) = watch::channel(Conn::Connecting);
    let pending = Arc::new(AtomicUsize::new(0));
    let location = Location::from_config(config);
    let name = match &location {
        Ok(l) => l.name(),
        Err(_) => "the session database".to_string(),
    };
    let mut writer = Writer {
        rx,
        queue: VecDeque::new(),
        queued: 0,
        state: state_tx,
        db: None,
        location: None,
        name: name.clone(),
        notices: notices.clone(),
        next_seq: HashMap::new(),
        down: false,
        failed: false,
        over_limit: false,
        refused: false,
        closed: false,
        failures: 0,
        pending: pending.clone(),
        options: options.clone(),
    };
    match location {
        Ok(location) => writer.location = Some(location),
        Err(e) => writer.fail(Fatal::from(e)),
    }
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(writer.run());
        }
        Err(_) => writer.fail(Fatal::Other("no async runtime to write sessions from".into())),
    }
    Arc::new(Store {
        tx,
        state: state_rx,
        pending,
        notices,
        name,
        grace: options.flush_grace,
    })
}

/// A final failure, kept so every later read can report it.
#[derive(Clone, Debug)]
enum Fatal {
    TooNew { found: i64, known: i64 },
    Other(String),
}

impl From<StoreError> for Fatal {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TooNew { found, known } => Fatal::TooNew { found, known },
            other => Fatal::Other(other.to_string()),
        }
    }
}

impl From<&Fatal> for StoreError {
    fn from(f: &Fatal) -> Self {
        match f {
            Fatal::TooNew { found, known } => StoreError::TooNew {
                found: *found,
                known: *known,
            },
            Fatal::Other(s) => StoreError::Other(s.clone()),
        }
    }
}

/// The connection as readers see it.
#[derive(Clone)]
enum Conn {
    Connecting,
    Up(Arc<dyn Backend>),
    /// Why it is down, naming the database.
    Down(String),
    Failed(Fatal),
}

enum Cmd {
    Begin { meta: SessionMeta, at: String },
    Event(Box<EventRow>),
    Flush(oneshot::Sender<()>),
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

struct Writer {
    rx: mpsc::UnboundedReceiver<Cmd>,
    queue: VecDeque<Cmd>,
    /// Begin and Event commands in `queue`.
    queued: usize,
    state: watch::Sender<Conn>,
    db: Option<Arc<dyn Backend>>,
    location: Option<Location>,
    name: String,
    notices: mpsc::UnboundedSender<Event>,
    /// The next `seq` per session, once read from the database.
    next_seq: HashMap<String, i64>,
    /// A warning was shown and no write has succeeded since.
    down: bool,
    failed: bool,
    over_limit: bool,
    /// A refused event was reported and nothing was written since.
    refused: bool,
    /// Every handle is gone.
    closed: bool,
    /// Failed attempts in a row; the next pause is `backoff::delay(failures, …)`.
    failures: u32,
    pending: Arc<AtomicUsize>,
    options: Options,
}

impl Writer {
    async fn run(mut self) {
        loop {
            self.drain();
            self.answer_leading_flushes();
            if self.db.is_none() && !self.failed {
                if self.connect().await {
                    continue;
                }
                if self.closed || self.failed {
                    if self.closed {
                        return;
                    }
                    continue;
                }
                self.pause().await;
                continue;
            }
            let Some(cmd) = self.queue.pop_front() else {
                if self.closed {
                    return;
                }
                match self.rx.recv().await {
                    Some(c) => self.enqueue(c),
                    None => self.closed = true,
                }
                continue;
            };
            let Some(db) = self.db.clone() else {
                self.queue.push_front(cmd);
                continue;
            };
            let (result, cmd) = self.write(db.as_ref(), cmd).await;
            match result {
                Ok(()) => {
                    self.done(1);
                    self.refused = false;
                    self.recovered(db);
                }
                Err(DbError::Unavailable(why)) => {
                    if let Some(cmd) = cmd {
                        self.queue.push_front(cmd);
                    }
                    self.went_down(&why);
                    if self.closed {
                        return;
                    }
                    self.pause().await;
                }
                Err(e) => {
                    let why = match e {
                        DbError::Rejected(why) | DbError::Unavailable(why) => why,
                        DbError::Conflict => "duplicate key".to_string(),
                    };
                    self.done(1);
                    // One warning until a write succeeds again, not one per event.
                    if !self.refused {
                        self.refused = true;
                        let text = format!("an event could not be saved to {}: {why}", self.name);
                        self.notice(NoticeLevel::Warning, text);
                    }
                }
            }
        }
    }

    /// Writes one command; hands it back when it must be retried.
    async fn write(&mut self, db: &dyn Backend, cmd: Cmd) -> (Result<(), DbError>, Option<Cmd>) {
        match cmd {
            Cmd::Begin { meta, at } => {
                let r = db.insert_session(&meta, &at).await;
                (r, Some(Cmd::Begin { meta, at }))
            }
            Cmd::Event(mut row) => {
                let r = self.write_event(db, &mut row).await;
                (r, Some(Cmd::Event(row)))
            }
            Cmd::Flush(tx) => {
                let _ = tx.send(());
                (Ok(()), None)
            }
        }
    }

    /// Inserts at the session's next `seq`; when another writer took it, re-reads the
    /// highest `seq` and tries again.
    async fn write_event(&mut self, db: &dyn Backend, row: &mut EventRow) -> Result<(), DbError> {
        for _ in 0..1000 {
            let seq = match self.next_seq.get(&row.session_id) {
                Some(s) => *s,
                None => db.max_seq(&row.session_id).await? + 1,
            };
            row.seq = seq;
            match db.insert_event(row).await {
                Ok(()) => {
                    self.next_seq.insert(row.session_id.clone(), seq + 1);
                    return Ok(());
                }
                Err(DbError::Conflict) => {
                    self.next_seq.remove(&row.session_id);
                    // An earlier attempt may have landed before its answer was lost.
                    if db.event_exists(&row.id).await? {
                        return Ok(());
                    }
                }
                Err(e) => {
                    self.next_seq.remove(&row.session_id);
                    return Err(e);
                }
            }
        }
        Err(DbError::Rejected(
            "another writer kept taking the next position".into(),
        ))
    }

    async fn connect(&mut self) -> bool {
        let timeout = self.options.connect_timeout;
        let result = match &self.location {
            Some(Location::Sqlite(path)) => sqlite::connect(path, timeout).await,
            Some(Location::Postgres(url)) => postgres::connect(url, timeout).await,
            None => return false,
        };
        match result {
            Ok(db) => {
                self.db = Some(db.clone());
                self.recovered(db);
                true
            }
            Err(OpenError::Unavailable(why)) => {
                self.went_down(&why);
                false
            }
            Err(OpenError::Fatal(e)) => {
                self.fail(Fatal::from(e));
                false
            }
        }
    }

    fn enqueue(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Flush(tx) if self.queued == 0 => {
                let _ = tx.send(());
            }
            Cmd::Flush(tx) => self.queue.push_back(Cmd::Flush(tx)),
            _ if self.failed => self.settled(1),
            Cmd::Event(_) if self.queued >= self.options.max_queued => {
                self.settled(1);
                if !self.over_limit {
                    self.over_limit = true;
                    let text = format!(
                        "{} unsaved events are waiting for {}; newer events will not be saved",
                        self.queued, self.name
                    );
                    self.notice(NoticeLevel::Warning, text);
                }
            }
            cmd => {
                self.queued += 1;
                self.queue.push_back(cmd);
            }
        }
    }

    fn drain(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok(c) => self.enqueue(c),
                Err(mpsc::error::TryRecvError::Empty) => return,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    self.closed = true;
                    return;
                }
            }
        }
    }

    fn answer_leading_flushes(&mut self) {
        while matches!(self.queue.front(), Some(Cmd::Flush(_))) {
            if let Some(Cmd::Flush(tx)) = self.queue.pop_front() {
                let _ = tx.send(());
            }
        }
    }

    /// Waits out the backoff while still taking new commands.
    async fn pause(&mut self) {
        self.failures = self.failures.saturating_add(1);
        let wait = crate::backoff::delay(
            self.failures,
            self.options.retry_min,
            self.options.retry_max,
            None,
        );
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(c)) => self.enqueue(c),
                Ok(None) => {
                    self.closed = true;
                    break;
                }
                Err(_) => break,
            }
        }
    }

    /// `n` queued Begin or Event commands left the queue (written, rejected or dropped).
    fn done(&mut self, n: usize) {
        self.queued = self.queued.saturating_sub(n);
        self.settled(n);
    }

    /// `n` commands the handle counted as pending are finished with.
    fn settled(&self, n: usize) {
        let _ = self
            .pending
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |p| Some(p.saturating_sub(n)));
    }

    fn recovered(&mut self, db: Arc<dyn Backend>) {
        self.failures = 0;
        if self.down {
            self.down = false;
            self.over_limit = false;
            let text = format!("{} is reachable again; the session is being saved", self.name);
            self.notice(NoticeLevel::Info, text);
        }
        if !matches!(*self.state.borrow(), Conn::Up(_)) {
            self.state.send_replace(Conn::Up(db));
        }
    }

    fn went_down(&mut self, why: &str) {
        if !self.down {
            self.down = true;
            let text = format!(
                "cannot save the session to {}: {why}. The session goes on in memory; \
                 ikigai keeps retrying and saves it when the database is back",
                self.name
            );
            self.notice(NoticeLevel::Warning, text);
        }
        self.state
            .send_replace(Conn::Down(format!("{}: {why}", self.name)));
    }

    fn fail(&mut self, fatal: Fatal) {
        self.failed = true;
        self.db = None;
        let text = format!("sessions will not be saved: {}", StoreError::from(&fatal));
        self.notice(NoticeLevel::Warning, text);
        self.state.send_replace(Conn::Failed(fatal));
        let dropped = self.queued;
        self.queue.clear();
        self.done(dropped);
    }

    fn notice(&self, level: NoticeLevel, text: String) {
        let _ = self.notices.send(Event::notice(level, text));
    }
}

/// The `Sessions` handle: queues commands for the writer, reads through its pool.
struct Store {
    tx: mpsc::UnboundedSender<Cmd>,
    state: watch::Receiver<Conn>,
    pending: Arc<AtomicUsize>,
    notices: mpsc::UnboundedSender<Event>,
    name: String,
    grace: Duration,
}

impl Store {
    fn send(&self, cmd: Cmd) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(cmd).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The database once connected, after this handle's queued records are written.
    async fn ready(&self) -> Result<Arc<dyn Backend>, StoreError> {
        let mut state = self.state.clone();
        let conn = state
            .wait_for(|c| !matches!(c, Conn::Connecting))
            .await
            .map(|c| c.clone())
            .map_err(|_| StoreError::Unavailable(format!("{}: the writer stopped", self.name)))?;
        match conn {
            Conn::Up(db) => {
                self.flush().await;
                Ok(db)
            }
            Conn::Down(why) => Err(StoreError::Unavailable(why)),
            Conn::Failed(f) => Err(StoreError::from(&f)),
            Conn::Connecting => Err(StoreError::Unavailable(self.name.clone())),
        }
    }
}

#[async_trait]
impl Sessions for Store {
    fn begin(&self, meta: SessionMeta) {
        self.send(Cmd::Begin { meta, at: now() });
    }

    fn record(&self, session_id: &str, record: Record) {
        let id = uuid::Uuid::now_v7().to_string();
        let row = EventRow::new(id, session_id.to_string(), record, now());
        self.send(Cmd::Event(Box::new(row)));
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
        let prefix = id_prefix.trim();
        if prefix.is_empty() {
            return Err(StoreError::NotFound(id_prefix.to_string()));
        }
        let db = self.ready().await?;
        let info = match db.sessions(Select::Id(prefix)).await?.into_iter().next() {
            Some(info) => info,
            None => {
                let mut found = db.sessions(Select::Prefix(prefix)).await?;
                match found.len() {
                    0 => return Err(StoreError::NotFound(prefix.to_string())),
                    1 => found.remove(0),
                    _ => {
                        let count = db.count_prefix(prefix).await?;
                        return Err(StoreError::Ambiguous {
                            prefix: prefix.to_string(),
                            count: usize::try_from(count).unwrap_or(usize::MAX),
                        });
                    }
                }
            }
        };
        let records = db
            .events(&info.id)
            .await?
            .into_iter()
            .map(|e| e.into_record(&info.id))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((info, records))
    }

    async fn flush(&self) {
        if self.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Flush(tx)).is_err() {
            return;
        }
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
