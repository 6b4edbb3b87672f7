//! What the engine handle and its thread say to each other: the job sent, the events and
//! status that come back, the counters kept. Data only, so that `engine` (the async
//! side) and `worker` (the thread) both depend on it and not on each other.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tokio::sync::mpsc as tmpsc;

use super::load::LoadError;
use super::render::ChatPrompt;
use crate::tool_vocab::ToolSchema;

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
    /// The offered tools: a tag may name one, and the grammar inside an open exec tag
    /// allows their calls (see `grammar`).
    pub tools: Vec<ToolSchema>,
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
    /// Of those, sampled under the exec-tag grammar (constrained decoding).
    pub constrained: u32,
    /// Why the last job's grammar did not load (it then ran unconstrained).
    pub grammar_error: Option<String>,
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
