//! The engine handle: one dedicated thread per engine owns the model, the llama.cpp
//! context and its KV cache; the async side talks to it only through channels and never
//! blocks. Jobs run one at a time, in order. Owns no rendering or wire format.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::{mpsc as tmpsc, watch};

use super::load::LoadError;
use super::render::ChatPrompt;
use super::settings::LocalSettings;
use super::worker;

/// Where the model is in its life.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Loading in the background (the status line shows "loading model…").
    Loading,
    /// Ready; `notice` says when the GGUF's own chat template could not be used.
    Ready {
        name: String,
        notice: Option<String>,
    },
    Failed(LoadError),
}

/// Why a generation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The model ended its turn.
    Stop,
    /// `max_output_tokens` reached.
    Length,
    /// A complete exec tag: generation paused after it; the cache ends at the closing tag.
    Exec,
    /// Cancelled between two tokens; the partial answer stays in the cache.
    Cancelled,
}

impl Finish {
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::Exec => "tool_calls",
            Finish::Cancelled => "cancelled",
        }
    }
}

/// A failure of one job.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Load(LoadError),
    /// The prompt or the answer does not fit the context window; nothing was overwritten.
    #[error("context length exceeded: {needed} tokens needed, the context holds {n_ctx} (setting `ctx`)")]
    ContextFull { needed: u32, n_ctx: u32 },
    #[error("llama.cpp failed: {0}")]
    Llama(String),
    /// The engine thread is gone (it panicked or the process is exiting).
    #[error("the local engine stopped")]
    Gone,
}

/// What a job streams back, in order; `Finished` or `Failed` is always last.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineEvent {
    /// Visible text (tags are never part of it).
    Text(String),
    /// A complete `<||SYSTEM.EXEC>…<SYSTEM.EXEC||>`: its command, verbatim.
    Exec(String),
    Finished {
        finish: Finish,
        /// Tokens of the rendered prompt (the cache position before generation).
        prompt_tokens: u32,
        /// Of those, tokens that were already in the KV cache.
        reused: u32,
        generated: u32,
    },
    Failed(EngineError),
}

/// One request to the engine thread.
pub struct Job {
    pub prompt: ChatPrompt,
    /// Defaults to the settings' `max_output_tokens`.
    pub max_tokens: Option<u32>,
    pub events: tmpsc::UnboundedSender<EngineEvent>,
    pub cancel: Arc<AtomicBool>,
}

/// What the engine did, for tests, benches and the status line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub jobs: u64,
    /// Tokens in the KV cache (the next position).
    pub position: u32,
    pub n_ctx: u32,
    /// Of the last job: tokens of the rendered prompt, how many were already cached,
    /// how many were decoded as prompt, and how many were generated.
    pub prompt_tokens: u32,
    pub reused: u32,
    pub decoded: u32,
    pub generated: u32,
    /// Milliseconds: loading the model and creating the context; prompt processing
    /// (rendering, tokenizing and decoding), decoding alone (what llama-server's prompt
    /// timings count), first token, and generation, of the last job.
    pub load_ms: f64,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub first_token_ms: f64,
    pub generation_ms: f64,
}

impl Counters {
    pub fn generation_tps(&self) -> f64 {
        if self.generation_ms <= 0.0 || self.generated < 2 {
            return 0.0;
        }
        f64::from(self.generated - 1) * 1000.0 / self.generation_ms
    }
}

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
        let (events, rx) = tmpsc::unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job {
            prompt,
            max_tokens,
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
