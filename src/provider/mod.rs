//! Model providers behind one trait: one wire format per file; nothing else knows a
//! wire format. A provider turns canonical messages into a request and a response
//! stream back into `StreamEvent`s.

pub mod http;
pub mod openai;
pub mod window;

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
}

/// One thing learned from the response stream, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// A complete tool call (all its argument fragments joined).
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    Usage {
        input: u64,
        output: u64,
    },
    /// The response is complete; `reason` is the provider's finish reason when it gave one.
    Finished {
        reason: Option<String>,
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

/// A model vendor's wire protocol.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short name for the status line and the store (`openai`).
    fn name(&self) -> &str;
    /// Sends the request; resolves once response headers arrived (errors before the first
    /// byte come back here, so they can be retried).
    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError>;
}
