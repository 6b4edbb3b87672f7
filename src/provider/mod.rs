//! Model providers behind one trait. The public face: `Provider`, the request and the
//! stream events; `resolve` (settings → `Spec`, from the one table in `presets`) and
//! `build` (`Spec` → provider); `describe` and the setup hint. Every HTTP wire format is
//! one `Wire` (what differs: paths, key header, body, decoder, error reading, model list)
//! under one generic `HttpProvider`; `history` is the one pass a conversation goes
//! through before any wire format writes it. Nothing outside this folder knows a wire
//! format.

pub mod anthropic;
pub mod body;
pub(crate) mod build;
pub mod decode;
pub(crate) mod early;
pub(crate) mod error;
pub mod google;
pub(crate) mod help;
pub(crate) mod history;
pub mod http;
pub(crate) mod image;
pub(crate) mod limits;
#[cfg(feature = "local")]
pub mod local;
pub mod openai;
pub(crate) mod presets;
pub mod prices;
pub(crate) mod resolve;
pub mod responses;
pub(crate) mod screen;
pub(crate) mod spec;
pub mod sse;
pub mod status;
pub(crate) mod text_protocol;
pub(crate) mod window;
pub mod wire;

pub use build::build;
pub use error::ProviderError;
pub use help::{describe, setup_hint};
pub use resolve::{Resolved, env_key, is_gguf, key_vars, names, resolve, spec_for, split_model};
pub use spec::{LOCAL, SetupError, Spec, ToolMode};

use std::pin::Pin;

use async_trait::async_trait;
use futures_util::Stream;

use crate::message::Message;
use crate::tool_vocab::ToolSchema;

/// Everything one model request needs.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSchema],
    /// Stop sequences (the text protocol's closing tag); empty for none.
    pub stop: &'a [String],
    /// Where the session runs and its date (`agent::prompt`); empty for none. The
    /// tool-protocol layer puts it where a server's prompt cache keeps the most: before
    /// the first message when it copies the history anyway (the text protocol, a local
    /// preset's example exchange), so the system prompt and the tool list after it are
    /// the same bytes for every session of a project; else after the system prompt, as
    /// before. The providers it wraps get it already placed (empty here).
    pub environment: &'a str,
    /// The answer's length limit the agent asks for (the budget's output reserve), sent
    /// as each format's output cap; a `max_output_tokens` configured for the provider wins.
    pub max_output_tokens: Option<u64>,
}

impl Request<'_> {
    /// The output cap to send: the configured one, else the one asked for.
    pub fn output_cap(&self, spec: &Spec) -> Option<u64> {
        spec.max_output_tokens.or(self.max_output_tokens)
    }
}

/// Why a response ended, in canonical terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The output token limit cut the response off: text may be truncated and a tool
    /// call in progress is incomplete.
    Length,
    /// The vendor's content filter stopped the response; the vendor's reason (`SAFETY`,
    /// `RECITATION`, `refusal`, `content_filter`…).
    ContentFilter(String),
    /// Anything else, as the vendor named it.
    Other(String),
}

impl FinishReason {
    /// Maps a vendor's reason (`stop`, `end_turn`, `tool_use`, `max_tokens`, `SAFETY`…).
    pub fn parse(raw: &str) -> FinishReason {
        match raw.to_ascii_lowercase().as_str() {
            "stop" | "end_turn" | "stop_sequence" | "completed" => FinishReason::Stop,
            "tool_calls" | "tool_use" | "function_call" => FinishReason::ToolCalls,
            "length" | "max_tokens" | "max_output_tokens" => FinishReason::Length,
            "content_filter" | "safety" | "refusal" | "recitation" | "blocklist" | "prohibited_content"
            | "spii" | "image_safety" => FinishReason::ContentFilter(raw.to_string()),
            _ => FinishReason::Other(raw.to_string()),
        }
    }

    /// The canonical name (`stop`, `tool_calls`, `length`, `content_filter`, or the vendor's).
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter(_) => "content_filter",
            FinishReason::Other(s) => s,
        }
    }
}

/// One thing learned from the response stream, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    TextDelta(String),
    /// Something the user should know about this response (a tag that was not run, a
    /// recovered call, a protocol switch); shown as a warning, never sent to the model.
    Notice(String),
    /// Visible reasoning text, for display (never mixed into the answer).
    ReasoningDelta(String),
    /// A finished reasoning block to store: its whole visible text and the provider's
    /// opaque payload (signature, encrypted item), sent back only to this provider.
    Reasoning {
        text: String,
        opaque: serde_json::Value,
    },
    /// A complete tool call (all its argument fragments joined).
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    /// Token usage of this response; `cached` is the part of `input` read from the
    /// vendor's prompt cache (0 when not reported).
    Usage {
        input: u64,
        output: u64,
        cached: u64,
    },
    /// The response is complete; `reason` is the finish reason when the provider gave one.
    Finished {
        reason: Option<FinishReason>,
    },
}

/// The response stream; an `Err` item ends it.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A model vendor's wire protocol. Each kind (openai-chat, openai-responses, anthropic,
/// google…) implements `spec` and `stream`; the rest has defaults built on the `Spec`.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The resolved endpoint this provider talks to.
    fn spec(&self) -> &Spec;

    /// The configured provider name for the status line, the store and reasoning
    /// ownership (`openai`, `xai`, a `[providers.NAME]` section).
    fn name(&self) -> &str {
        &self.spec().name
    }

    /// Lines telling the user how to set this provider up when nothing could be sent
    /// (no key for an endpoint that needs one); empty when ready.
    fn setup_hint(&self) -> Vec<String> {
        help::setup_hint(self.spec())
    }

    /// The error as the user should read it, with what to do about it.
    fn describe(&self, e: &ProviderError) -> String {
        help::describe_error(self.spec(), e)
    }

    /// Notices about the provider's own state while it gets ready, for the status line
    /// (the local engine: "loading model…", then the model's name or why it failed).
    /// `None` for providers that are ready at once.
    fn notices(
        &self,
    ) -> Option<futures_util::stream::BoxStream<'static, (crate::protocol::NoticeLevel, String)>> {
        None
    }

    /// Whether a request may carry images (`@shot.png`, an MCP tool's image): the model
    /// takes them (`images` in its settings) and the format has an image part.
    fn takes_images(&self) -> bool {
        self.spec().images
    }

    /// The image types a request may carry: none when the model takes no images.
    fn image_types(&self) -> &'static [&'static str] {
        if self.takes_images() {
            self.spec().image_types()
        } else {
            &[]
        }
    }

    /// Model names the endpoint offers (`GET /models`); empty when it offers no list.
    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(Vec::new())
    }

    /// `model`'s context window in tokens as the endpoint itself reports it (llama.cpp
    /// `/props`, OpenRouter `/models`, Ollama `/api/show`), each asked for at most 3 s and
    /// read to `window::PROBE_MAX` bytes; `Ok(None)` when it does not say, an error when
    /// an answer was too large. The agent asks once, when neither the settings nor the
    /// presets know the window.
    async fn context_window(&self, model: &str) -> Result<Option<u64>, ProviderError> {
        let spec = self.spec();
        let limit = std::time::Duration::from_secs(3);
        let Ok(client) = http::client(spec.connect_timeout.min(limit)) else {
            return Ok(None);
        };
        window::probe(&client, &spec.base_url, model, limit).await
    }

    /// Sends the request; resolves once response headers arrived (errors before the first
    /// byte come back here, so they can be retried).
    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError>;
}
