//! The store writer: one task owns the database writes. It connects in the background,
//! writes queued records in order, many per transaction, keeps them in memory while the
//! database is down and retries, spools them at exit when the database cannot take them,
//! replays spool files once connected, and recreates a SQLite file deleted under it.
//! Reading is `handle.rs`'s; this module never answers a query.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

mod save;

use super::backend::{Backend, OpenError, Write};
use super::channel::{Cmd, Conn};
use super::handle::Store;
use super::lease::Holder;
use super::location::Location;
use super::{Sessions, postgres, spool, sqlite};
use crate::config::Config;
use crate::protocol::{Event, NoticeLevel};

/// Most writes committed in one transaction.
const BATCH: usize = 512;

/// How the writer waits and how much it keeps. `Default` is what ikigai uses.
#[derive(Clone, Debug)]
pub struct Options {
    /// First wait before retrying an unavailable database; doubles up to `retry_max`.
    pub retry_min: Duration,
    pub retry_max: Duration,
    /// Longest wait for a connection (and for one connection attempt).
    pub connect_timeout: Duration,
    /// How long `flush` waits for a writer that does not answer once the database is
    /// down (the writer normally spools at once).
    pub flush_grace: Duration,
    /// Most records kept in memory while the database is down; newer ones are dropped
    /// (with one warning) beyond that.
    pub max_queued: usize,
    /// Where unsaved writes go at exit; `None`: `$XDG_STATE_HOME/ikigai/spool`.
    pub spool_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            retry_min: Duration::from_secs(1),
            retry_max: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            flush_grace: Duration::from_secs(3),
            max_queued: 200_000,
            spool_dir: None,
        }
    }
}

/// Opens the session store for `config` at once; connecting, migrating and replaying
/// the spool happen in the background. Problems reach the user as `Event::Notice`s.
/// Also makes ikigai's data folder private (0700).
pub fn open(config: &Config, notices: mpsc::UnboundedSender<Event>) -> Arc<dyn Sessions> {
    super::location::secure_data_dir(&|k| crate::environ::var(k));
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
    let spool_dir = options
        .spool_dir
        .clone()
        .or_else(|| spool::default_spool_dir(&|k| crate::environ::var(k)));
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
        spool_dir,
        spooled: false,
        touched: HashSet::new(),
        held: None,
        me: Holder::new(),
        options: options.clone(),
    };
    match location {
        Ok(location) => writer.location = Some(location),
        Err(e) => writer.fail(e),
    }
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(writer.run());
        }
        Err(_) => writer.fail(super::StoreError::Other(
            "no async runtime to write sessions from".into(),
        )),
    }
    Arc::new(Store::new(
        tx,
        state_rx,
        pending,
        notices,
        name,
        options.flush_grace,
    ))
}

/// What the queue holds. A write is the large variant (see `channel::Cmd`).
#[allow(clippy::large_enum_variant)]
enum Item {
    /// `counted`: the handle counts it as pending (replayed spool writes are not).
    Write {
        write: Write,
        counted: bool,
    },
    Sync(oneshot::Sender<()>),
    Flush(oneshot::Sender<()>),
    /// Every write of this spool file (`n` of them) is done: remove it and say so.
    SpoolDone {
        path: PathBuf,
        n: usize,
    },
}

struct Writer {
    rx: mpsc::UnboundedReceiver<Cmd>,
    queue: VecDeque<Item>,
    /// Write items in `queue`.
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
    spool_dir: Option<PathBuf>,
    /// This process spooled writes it may still save itself: take them back before the
    /// next write.
    spooled: bool,
    /// Sessions written here (carried into a recreated SQLite file).
    touched: HashSet<String>,
    /// The session this store holds.
    held: Option<String>,
    me: Holder,
    options: Options,
}

impl Writer {
    async fn run(mut self) {
        self.work().await;
        // Every handle is gone: let go of the session (a process that simply exits
        // leaves a lease whose pid is dead, or a closed lock connection, instead).
        if let (Some(db), Some(id)) = (&self.db, &self.held) {
            let _ = db.release(id).await;
        }
    }

    async fn work(&mut self) {
        loop {
            self.drain();
            self.answer_leading();
            if self.db.is_none() && !self.failed {
                if self.connect().await {
                    self.take_spool();
                    continue;
                }
                if self.closed {
                    return;
                }
                if !self.failed {
                    self.pause().await;
                }
                continue;
            }
            let Some(db) = self.db.clone() else {
                // Failed: nothing is written; answer and wait for the handle to go.
                match self.rx.recv().await {
                    Some(c) => self.enqueue(c),
                    None => return,
                }
                continue;
            };
            if self.spooled {
                self.spooled = false;
                self.take_spool();
            }
            match self.queue.front() {
                None => {
                    if self.closed {
                        return;
                    }
                    match self.rx.recv().await {
                        Some(c) => self.enqueue(c),
                        None => self.closed = true,
                    }
                }
                Some(Item::SpoolDone { .. }) => {
                    if let Some(Item::SpoolDone { path, n }) = self.queue.pop_front() {
                        spool::remove(&path);
                        let text = format!(
                            "saved {n} events to {} that an earlier run could not (from the spool {})",
                            self.name,
                            path.display()
                        );
                        self.notice(NoticeLevel::Info, text);
                    }
                }
                Some(Item::Sync(_) | Item::Flush(_)) => {
                    // A flush waits for a file deleted after the last write to be made again.
                    if self.check_file(db).await.is_some() {
                        self.answer_leading();
                    }
                }
                Some(Item::Write { .. }) => {
                    let db = match self.check_file(db).await {
                        Some(db) => db,
                        None => continue,
                    };
                    if !self.write_some(db).await {
                        if self.closed {
                            return;
                        }
                        self.pause().await;
                    }
                }
            }
        }
    }

    async fn connect(&mut self) -> bool {
        let timeout = self.options.connect_timeout;
        let result = match &self.location {
            Some(Location::Sqlite(path)) => sqlite::connect(path, timeout, &self.me).await,
            Some(Location::Postgres(url)) => postgres::connect(url, timeout).await,
            None => return false,
        };
        match result {
            Ok(db) => {
                if db.replaced_at_open() {
                    let text = format!(
                        "{} was deleted or replaced while ikigai was opening it; it was created \
                         again, and saving goes on there",
                        self.name
                    );
                    self.notice(NoticeLevel::Warning, text);
                }
                self.db = Some(db.clone());
                self.recovered(db);
                true
            }
            Err(OpenError::Unavailable(why)) => {
                self.went_down(&why);
                self.spool_if_flushing();
                false
            }
            Err(OpenError::Fatal(e)) => {
                self.fail(e);
                false
            }
        }
    }

    fn enqueue(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Sync(tx) if self.queued == 0 => {
                let _ = tx.send(());
            }
            Cmd::Sync(tx) => self.queue.push_back(Item::Sync(tx)),
            Cmd::Flush(tx) if self.queued == 0 => {
                let _ = tx.send(());
            }
            Cmd::Flush(tx) => {
                self.queue.push_back(Item::Flush(tx));
                self.spool_if_flushing();
            }
            Cmd::Held(id) => {
                self.touched.insert(id.clone());
                self.held = Some(id);
            }
            Cmd::Write(_) if self.failed => self.settled(1),
            Cmd::Write(_) if self.queued >= self.options.max_queued => {
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
            Cmd::Write(write) => {
                self.queued += 1;
                self.queue.push_back(Item::Write { write, counted: true });
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

    /// Answers the syncs and flushes at the head of the queue; a flush waits while the
    /// SQLite file is gone (`work` recreates it first).
    fn answer_leading(&mut self) {
        while matches!(self.queue.front(), Some(Item::Sync(_) | Item::Flush(_))) {
            let gone = self.db.as_ref().is_some_and(|db| db.file_gone());
            if gone && matches!(self.queue.front(), Some(Item::Flush(_))) {
                return;
            }
            match self.queue.pop_front() {
                Some(Item::Sync(tx) | Item::Flush(tx)) => {
                    let _ = tx.send(());
                }
                Some(other) => self.queue.push_front(other),
                None => {}
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

    /// `n` queued writes left the queue, `counted` of them counted by the handle.
    fn done(&mut self, n: usize, counted: usize) {
        self.queued = self.queued.saturating_sub(n);
        self.settled(counted);
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

    fn fail(&mut self, fatal: super::StoreError) {
        self.failed = true;
        self.db = None;
        let text = format!("sessions will not be saved: {fatal}");
        self.notice(NoticeLevel::Warning, text);
        self.state.send_replace(Conn::Failed(fatal));
        let mut n = 0;
        let mut counted = 0;
        for item in std::mem::take(&mut self.queue) {
            match item {
                Item::Write { counted: c, .. } => {
                    n += 1;
                    counted += usize::from(c);
                }
                Item::Sync(tx) | Item::Flush(tx) => {
                    let _ = tx.send(());
                }
                Item::SpoolDone { .. } => {}
            }
        }
        self.done(n, counted);
    }

    fn notice(&self, level: NoticeLevel, text: String) {
        let _ = self.notices.send(Event::notice(level, text));
    }
}
