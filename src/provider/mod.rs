//! Model providers behind one trait: one wire format per file; nothing else knows a
//! wire format. A provider turns canonical messages into a request and a response
//! stream back into `StreamEvent`s.

pub mod anthropic;
pub mod body;
pub mod decode;
pub mod early;
pub mod factory;
pub mod google;
pub mod http;
pub mod limits;
#[cfg(feature = "local")]
pub mod local;
pub mod openai;
pub mod presets;
pub mod responses;
pub mod screen;
pub mod sse;
pub mod text_protocol;
pub mod window;

pub use factory::{SetupError, Spec, build, resolve};

use std::pin::Pin;

use async_trait::async_trait;
use futures_util::Stream;

use crate::message::Message;
use crate::tools::ToolSchema;

/// Everything one model request needs.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSchema],
    /// Stop sequences (the text protocol's closing tag); empty for none.
    pub stop: &'a [String],
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
    /// The vendor's safety filter stopped the response.
    ContentFilter,
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
            "content_filter" | "safety" | "refusal" | "recitation" | "blocklist" | "prohibited_content" => {
                FinishReason::ContentFilter
            }
            _ => FinishReason::Other(raw.to_string()),
        }
    }

    /// The canonical name (`stop`, `tool_calls`, `length`, `content_filter`, or the vendor's).
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
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

/// A provider failure. `is_retryable` says which ones the agent retries.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// No key is configured for an endpoint that needs one; nothing was sent. Not retryable.
    #[error("no API key in ${env_var}")]
    MissingKey { env_var: String },
    /// 401/403. Not retryable.
    #[error("authentication failed ({status}): check the API key in ${env_var}{detail}")]
    Auth {
        status: u16,
        env_var: String,
        detail: String,
    },
    /// 404. Not retryable.
    #[error("not found (404): model `{model}` or endpoint {url} does not exist{detail}")]
    NotFound {
        model: String,
        url: String,
        detail: String,
    },
    /// 400 and other 4xx: the server's own message. Not retryable.
    #[error("request rejected ({status}): {message}")]
    Rejected { status: u16, message: String },
    /// 429. Retryable, after `retry_after` seconds when the server said so.
    #[error("rate limited (429){detail}")]
    RateLimited {
        retry_after: Option<f64>,
        detail: String,
    },
    /// 5xx. Retryable.
    #[error("server error ({status}): {message}")]
    Server {
        status: u16,
        message: String,
        retry_after: Option<f64>,
    },
    /// No connection could be made. Retryable.
    #[error("cannot connect to {url}: {message}")]
    Connect { url: String, message: String },
    /// The stream broke after it began. Not retryable (the partial answer is kept).
    #[error("the response stream broke: {0}")]
    Stream(String),
    /// Nothing arrived for the idle timeout. Not retryable.
    #[error("the response stalled: nothing received for {0} s")]
    Idle(u64),
    /// The server sent an error inside the stream. Not retryable.
    #[error("the provider reported an error: {0}")]
    Api(String),
    /// The response passed `max_response_bytes`; the stream was cut and what arrived is
    /// kept. Not retryable.
    #[error("the response was cut off: {0} (max_response_bytes)")]
    TooLarge(String),
    /// The response passed `response_timeout_secs`; the stream was cut and what arrived is
    /// kept. Not retryable.
    #[error("the response was cut off: it took longer than {0} s (response_timeout_secs)")]
    Deadline(u64),
    /// The conversation no longer fits the model's context window. Not retryable as is:
    /// the agent may compact the history and try once more.
    #[error("the conversation is too long for the model's context window{detail}")]
    ContextLength { detail: String },
    /// The model or endpoint does not exist. Not retryable.
    #[error("unknown model `{model}`{detail}")]
    UnknownModel { model: String, detail: String },
    /// The vendor's safety filter refused the request. Not retryable.
    #[error("the provider's content filter refused the request{detail}")]
    ContentFiltered { detail: String },
    /// The request could not be written (ikigai's own fault; nothing was sent). Not
    /// retryable.
    #[error("cannot encode the request: {0}")]
    Encode(String),
    /// The provider cannot be set up from the settings; nothing was sent. Not retryable.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The account has no credit or quota left. Not retryable.
    #[error("the account's quota is exhausted (billing){detail}")]
    QuotaExhausted { detail: String },
    /// The server answered with a redirect, which is never followed (the key and the
    /// conversation would go along). Not retryable.
    #[error("the server redirected ({status}) to {location}; set base_url to that if you trust it")]
    Redirected { status: u16, location: String },
    /// A success answer that is not what the API sends (an HTML page: a proxy, a login
    /// portal, a wrong base URL). Not retryable.
    #[error("the server answered {status} with {content_type}, not the API's response: {start}")]
    NotApi {
        status: u16,
        content_type: String,
        /// Its first bytes, cleaned.
        start: String,
    },
}

impl ProviderError {
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. } | ProviderError::Server { .. } | ProviderError::Connect { .. }
        )
    }

    /// Seconds the server asked us to wait, if any.
    pub fn retry_after(&self) -> Option<f64> {
        match self {
            ProviderError::RateLimited { retry_after, .. } | ProviderError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }
}

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
        self.spec().setup_hint()
    }

    /// The error as the user should read it, with what to do about it.
    fn describe(&self, e: &ProviderError) -> String {
        self.spec().describe(e)
    }

    /// Notices about the provider's own state while it gets ready, for the status line
    /// (the local engine: "loading model…", then the model's name or why it failed).
    /// `None` for providers that are ready at once.
    fn notices(
        &self,
    ) -> Option<futures_util::stream::BoxStream<'static, (crate::protocol::NoticeLevel, String)>> {
        None
    }

    /// Model names the endpoint offers (`GET /models`); empty when it offers no list.
    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(Vec::new())
    }

    /// `model`'s context window in tokens as the endpoint itself reports it (llama.cpp
    /// `/props`, OpenRouter `/models`, Ollama `/api/show`), each asked for at most 3 s;
    /// `None` when it does not say. The agent asks once, when neither the settings nor
    /// the presets know the window.
    async fn context_window(&self, model: &str) -> Option<u64> {
        let spec = self.spec();
        let limit = std::time::Duration::from_secs(3);
        let client = http::client(spec.connect_timeout.min(limit)).ok()?;
        window::probe(&client, &spec.base_url, model, limit).await
    }

    /// Sends the request; resolves once response headers arrived (errors before the first
    /// byte come back here, so they can be retried).
    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError>;
}
