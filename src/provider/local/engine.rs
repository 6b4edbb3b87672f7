//! The engine handle: one dedicated thread per engine owns the model, the llama.cpp
//! context and its KV cache; the async side talks to it only through channels and never
//! blocks. Jobs run one at a time, in order. Owns no rendering or wire format.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::{mpsc as tmpsc, watch};

pub use super::messages::{Counters, EngineError, EngineEvent, Finish, Job, Status};
use super::render::ChatPrompt;
use super::settings::LocalSettings;
use super::worker;
use crate::tool_vocab::ToolSchema;

/// A running engine. Cheap to share (`Arc`); dropping the last handle ends the thread
/// after the job in progress.
pub struct Engine {
    jobs: Mutex<mpsc::Sender<Job>>,
    status: watch::Receiver<Status>,
    counters: Arc<Mutex<Counters>>,
    settings: LocalSettings,
}

impl Engine {
    /// Starts the thread; the model loads in the background, jobs queue meanwhile.
    pub fn spawn(settings: LocalSettings) -> Result<Engine, EngineError> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (status_tx, status) = watch::channel(Status::Loading);
        let counters = Arc::new(Mutex::new(Counters::default()));
        let c = Arc::clone(&counters);
        let s = settings.clone();
        std::thread::Builder::new()
            .name("ikigai-llama".into())
            .spawn(move || worker::run(s, rx, status_tx, c))
            .map_err(|e| EngineError::Llama(format!("cannot start the engine thread: {e}")))?;
        Ok(Engine {
            jobs: Mutex::new(tx),
            status,
            counters,
            settings,
        })
    }

    pub fn settings(&self) -> &LocalSettings {
        &self.settings
    }

    /// The current status; subscribe with `status_watch` to follow it.
    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    pub fn status_watch(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }

    /// Waits until the model has loaded (or failed).
    pub async fn ready(&self) -> Result<String, EngineError> {
        let mut rx = self.status.clone();
        let st = rx
            .wait_for(|s| !matches!(s, Status::Loading))
            .await
            .map_err(|_| EngineError::Gone)?
            .clone();
        match st {
            Status::Ready { name, .. } => Ok(name),
            Status::Failed(e) => Err(EngineError::Load(e)),
            Status::Loading => Err(EngineError::Gone),
        }
    }

    pub fn counters(&self) -> Counters {
        self.counters.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Queues a generation; events arrive on the returned receiver. Setting `cancel`
    /// (or dropping the receiver) stops it between two tokens.
    pub fn start(
        &self,
        prompt: ChatPrompt,
        max_tokens: Option<u32>,
    ) -> (tmpsc::UnboundedReceiver<EngineEvent>, Arc<AtomicBool>) {
        self.start_with_tools(prompt, max_tokens, Vec::new())
    }

    /// `start`, with the offered tools: a tag may name one directly, and inside an open
    /// exec tag sampling allows their calls besides a shell command.
    pub fn start_with_tools(
        &self,
        prompt: ChatPrompt,
        max_tokens: Option<u32>,
        tools: Vec<ToolSchema>,
    ) -> (tmpsc::UnboundedReceiver<EngineEvent>, Arc<AtomicBool>) {
        let (events, rx) = tmpsc::unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job {
            prompt,
            max_tokens,
            tools,
            events: events.clone(),
            cancel: Arc::clone(&cancel),
        };
        let sent = self.jobs.lock().map(|tx| tx.send(job).is_ok()).unwrap_or(false);
        if !sent {
            let _ = events.send(EngineEvent::Failed(EngineError::Gone));
        }
        (rx, cancel)
    }
}

/// Sets the cancel flag when dropped: dropping a stream stops its generation.
pub struct CancelOnDrop(pub Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
