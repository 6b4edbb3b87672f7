//! The real test model (fetched by `make deps`) and small helpers shared by the local
//! engine's tests. A missing model fails loudly with the command that fetches it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use ikigai::provider::local::engine::{Engine, EngineEvent};
use ikigai::provider::local::render::ChatPrompt;
use ikigai::provider::local::{LocalSettings, load};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

pub fn model_path() -> PathBuf {
    let path = std::env::var_os("IKIGAI_TEST_MODEL").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"),
                PathBuf::from,
            );
            cache.join("ikigai/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
        },
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "the local engine's test model is missing at {}: run `make deps` (or `bash scripts/fetch-test-model.sh`) to fetch it once",
        path.display()
    );
    path
}

/// Deterministic settings: greedy sampling, 2 threads, a small context.
pub fn settings(ctx: u32) -> LocalSettings {
    let mut s = LocalSettings::new(model_path());
    s.ctx = ctx;
    s.temperature = 0.0;
    s.threads = 2;
    s.max_output_tokens = 24;
    s
}

fn lock() -> &'static tokio::sync::Mutex<()> {
    static LOCK: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
}

/// The engine's tests share two cores with everything else: one model runs at a time.
pub fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    lock().blocking_lock()
}

pub async fn serial_async() -> tokio::sync::MutexGuard<'static, ()> {
    lock().lock().await
}

pub fn prompt(user: &str) -> ChatPrompt {
    ChatPrompt {
        turns: vec![
            ("system".into(), "You are a terse assistant.".into()),
            ("user".into(), user.into()),
        ],
        continuation: None,
    }
}

/// Runs one job to its end and returns all its events.
pub async fn run(engine: &Engine, prompt: ChatPrompt, max_tokens: u32) -> Vec<EngineEvent> {
    let (mut rx, _cancel) = engine.start(prompt, Some(max_tokens));
    let mut out = Vec::new();
    while let Some(e) = rx.recv().await {
        let last = matches!(e, EngineEvent::Finished { .. } | EngineEvent::Failed(_));
        out.push(e);
        if last {
            break;
        }
    }
    out
}

pub fn text_of(events: &[EngineEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// How many tokens the engine's tokenizer makes of `text` (special tokens parsed, no BOS),
/// from a vocabulary-only load of the same file.
pub fn token_count(text: &str) -> usize {
    let backend = load::backend().expect("llama.cpp backend");
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model = LlamaModel::load_from_file(backend, model_path(), &params).expect("vocab");
    model.vocab().tokenize(text.as_bytes(), false, true).len()
}
