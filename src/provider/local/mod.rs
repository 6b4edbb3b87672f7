//! The in-process engine (cargo feature `local`): a GGUF model run by llama.cpp inside
//! ikigai, behind the ordinary `Provider` trait. Owns loading, prompt rendering in the
//! SYSTEM.EXEC text protocol, generation on its own thread and the KV cache across turns;
//! must not know the agent loop, the store or any front end.
//!
//! How a tool round works (the design choice): when the sampled text completes
//! `<SYSTEM.EXEC||>`, the engine pauses right there and the stream yields an ordinary
//! `StreamEvent::ToolCall` (`bash`, `{"command": …}`, or another offered tool written
//! as `name(key="value", …)` inside the tag) and finishes with reason
//! `tool_calls`. The agent runs it like any call, bash through the bash tool (same timeout, cap, filtered
//! environment, process-group kill) and stores the usual `tool_call` / `tool_result` pair,
//! exactly as with any provider. Its follow-up request renders that pair back as the tag
//! and `<||SYSTEM.OUTPUT>\n…\n<SYSTEM.OUTPUT||>` inside the same, still open, assistant
//! turn. The engine's KV cache already holds everything up to the closing tag, so the
//! longest-common-prefix step finds that the only new text is the output block: it is
//! tokenized and decoded straight into the context and generation continues in the same
//! assistant turn — no re-prefill, no re-tokenizing of the conversation's cached part.
//! The same prefix step makes a new user message decode only its own tokens, and a
//! resumed session prefill once.
//!
//! Files: `settings` (defaults), `load` (checks and clear load errors), `render`
//! (conversation → template turns), `tag` (the tiny closing-tag matcher the engine uses;
//! the provider-wide text-protocol wrapper of issue 12 is separate), `messages` (what the
//! handle and the thread exchange), `engine` (the handle, channels), `worker` (the
//! thread: prefix cache, prefill, sampling).

pub mod engine;
mod grammar;
pub mod load;
pub mod messages;
pub mod render;
mod sampling;
pub mod settings;
pub mod tag;
mod worker;

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::stream::{self, BoxStream, StreamExt};

pub use engine::{Counters, Engine, EngineError, EngineEvent, Finish, Status};
pub use settings::LocalSettings;
pub use worker::CHATML_NOTICE;

use super::{EventStream, FinishReason, Provider, ProviderError, Request, SetupError, Spec, StreamEvent};
use crate::protocol::NoticeLevel;
use crate::tool_vocab::ToolSchema;
use engine::CancelOnDrop;

/// The `local` provider: a shared engine.
#[derive(Clone)]
pub struct LocalProvider {
    engine: Arc<Engine>,
    spec: Spec,
    /// Whether the prompt starts with the example exchange (`text_protocol::wrapper::primer`).
    primer: bool,
}

impl LocalProvider {
    /// Checks the file now (a clear error naming it) and starts loading the model in the
    /// background; returns at once. The spec's engine options and its temperature and
    /// output cap override the defaults.
    pub fn from_spec(spec: Spec) -> Result<Self, SetupError> {
        let mut s = LocalSettings::new(spec.model_path());
        let o = &spec.engine;
        if let Some(v) = o.ctx {
            s.ctx = v;
        }
        if let Some(v) = o.threads {
            s.threads = v.max(1);
        }
        if let Some(v) = o.gpu_layers {
            s.gpu_layers = v;
        }
        if let Some(v) = spec.temperature {
            s.temperature = v as f32;
        }
        if let Some(v) = o.top_p {
            s.top_p = v as f32;
        }
        if let Some(v) = o.seed {
            s.seed = v;
        }
        if let Some(v) = spec.max_output_tokens {
            s.max_output_tokens = u32::try_from(v).unwrap_or(u32::MAX);
        }
        let fail = |message: String| SetupError::Other {
            name: spec.name.clone(),
            message,
        };
        load::inspect(&s.model_path).map_err(|e| fail(e.to_string()))?;
        let engine = Engine::spawn(s).map_err(|e| fail(e.to_string()))?;
        Ok(LocalProvider {
            engine: Arc::new(engine),
            primer: spec.tool_mode.primer,
            spec,
        })
    }

    /// An engine with these settings, for tests and benches (no file check up front).
    pub fn new(settings: LocalSettings) -> Result<Self, ProviderError> {
        let mut spec = Spec::local(&settings.model_path, u64::from(settings.ctx));
        spec.temperature = Some(f64::from(settings.temperature));
        spec.max_output_tokens = Some(u64::from(settings.max_output_tokens));
        let engine = Engine::spawn(settings).map_err(|e| ProviderError::Api(e.to_string()))?;
        // Tests and benches give the prompt exactly: no primer.
        Ok(LocalProvider {
            engine: Arc::new(engine),
            spec,
            primer: false,
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

fn provider_error(e: EngineError) -> ProviderError {
    match e {
        EngineError::ContextFull { needed, n_ctx } => ProviderError::ContextLength {
            requested: Some(u64::from(needed)),
            window: Some(u64::from(n_ctx)),
            detail: format!(": {e}"),
        },
        other => ProviderError::Api(other.to_string()),
    }
}

/// The call a command inside an exec tag stands for: `(tool name, arguments JSON)`.
pub fn tool_call(command: &str, tools: &[ToolSchema]) -> (String, String) {
    super::text_protocol::calls::to_call(command, tools)
}

/// One engine event as provider stream events.
/// A command in the exec tag is a shell command for `bash`, or `name(key="value", …)` for
/// another offered tool.
fn translate(e: EngineEvent, tools: &[ToolSchema]) -> Vec<Result<StreamEvent, ProviderError>> {
    match e {
        EngineEvent::Text(t) => vec![Ok(StreamEvent::TextDelta(t))],
        EngineEvent::Exec(command) => {
            let id = format!("call_{}", uuid::Uuid::new_v4().simple());
            let (name, arguments) = tool_call(&command, tools);
            vec![Ok(StreamEvent::ToolCall { id, name, arguments })]
        }
        EngineEvent::Finished {
            finish,
            prompt_tokens,
            reused,
            generated,
        } => {
            let reason = match finish {
                Finish::Stop => FinishReason::Stop,
                Finish::Length => FinishReason::Length,
                Finish::Exec => FinishReason::ToolCalls,
                Finish::Cancelled => FinishReason::Other("cancelled".into()),
            };
            vec![
                Ok(StreamEvent::Usage {
                    input: u64::from(prompt_tokens),
                    output: u64::from(generated),
                    cached: u64::from(reused),
                }),
                Ok(StreamEvent::Finished { reason: Some(reason) }),
            ]
        }
        EngineEvent::Failed(e) => vec![Err(provider_error(e))],
    }
}

/// "loading model…", then the model's name (and the ChatML notice) or the load error.
fn status_notices(
    mut status: tokio::sync::watch::Receiver<Status>,
) -> BoxStream<'static, (NoticeLevel, String)> {
    let loading = stream::iter([(NoticeLevel::Info, "loading model…".to_string())]);
    let outcome = stream::once(async move {
        let done = status
            .wait_for(|s| !matches!(s, Status::Loading))
            .await
            .map(|s| s.clone());
        match done {
            Ok(Status::Ready { name, notice }) => {
                let mut v = Vec::new();
                if let Some(n) = notice {
                    v.push((NoticeLevel::Warning, n));
                }
                v.push((NoticeLevel::Info, format!("model {name} loaded")));
                v
            }
            Ok(Status::Failed(e)) => vec![(NoticeLevel::Error, e.to_string())],
            _ => Vec::new(),
        }
    })
    .flat_map(stream::iter);
    loading.chain(outcome).boxed()
}

#[async_trait]
impl Provider for LocalProvider {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn notices(&self) -> Option<BoxStream<'static, (NoticeLevel, String)>> {
        Some(status_notices(self.engine.status_watch()))
    }

    fn takes_images(&self) -> bool {
        // The engine renders a text prompt: it has no image input, whatever is configured.
        false
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        // In process, no prompt cache outlives the run: the environment after the system
        // prompt, as it always was.
        let system =
            crate::provider::text_protocol::environment::after_system(request.system, request.environment);
        let prompt = render::chat_prompt_with(&system, request.messages, request.tools, self.primer);
        let tools: Arc<[ToolSchema]> = request.tools.into();
        // The configured cap, else the agent's answer reserve, else the settings' default.
        let cap = request
            .output_cap(&self.spec)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let (rx, cancel) = self.engine.start_with_tools(prompt, cap, request.tools.to_vec());
        let guard = CancelOnDrop(cancel);
        let events = stream::unfold(
            (rx, guard, VecDeque::new(), false),
            move |(mut rx, guard, mut pending, mut done)| {
                let tools = Arc::clone(&tools);
                async move {
                    loop {
                        if let Some(item) = pending.pop_front() {
                            return Some((item, (rx, guard, pending, done)));
                        }
                        if done {
                            return None;
                        }
                        let event = rx.recv().await?;
                        done = matches!(event, EngineEvent::Finished { .. } | EngineEvent::Failed(_));
                        pending.extend(translate(event, &tools));
                    }
                }
            },
        );
        Ok(Box::pin(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;

    fn call(e: EngineEvent) -> (String, serde_json::Value) {
        match translate(e, &Registry::builtin().schemas()).remove(0) {
            Ok(StreamEvent::ToolCall { name, arguments, .. }) => {
                (name, serde_json::from_str(&arguments).unwrap_or_default())
            }
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn an_exec_tag_is_bash_or_an_offered_tool_in_the_short_form() {
        let (name, args) = call(EngineEvent::Exec("ls -la | wc -l".into()));
        assert_eq!(
            (name.as_str(), &args),
            ("bash", &serde_json::json!({"command": "ls -la | wc -l"}))
        );
        let (name, args) = call(EngineEvent::Exec(
            r#"file_read(path="src/main.rs", offset=3)"#.into(),
        ));
        assert_eq!(name, "file_read");
        assert_eq!(args, serde_json::json!({"path": "src/main.rs", "offset": 3}));
        // Not a registered tool: a shell command like any other.
        let (name, _) = call(EngineEvent::Exec("no_such_tool(x=1)".into()));
        assert_eq!(name, "bash");
    }
}
