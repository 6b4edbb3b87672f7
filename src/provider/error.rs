//! How a provider fails (`ProviderError`), with which failures are worth retrying. Data
//! only: turning a vendor's answer into one of these is `status`'s business.

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
    /// A server on this machine refused the connection: nothing listens there. Not
    /// retryable with backoff (the agent tries once more, quickly).
    #[error("nothing listens at {url} (connection refused)")]
    NothingListening { url: String },
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
    /// An answer ikigai reads whole (a model list, a window probe) passed the most bytes it
    /// reads of one; the rest was not read. Not retryable.
    #[error("{what} passed {cap} bytes; the rest was not read")]
    BodyTooLarge { what: String, cap: usize },
    /// The response passed `response_timeout_secs`; the stream was cut and what arrived is
    /// kept. Not retryable.
    #[error("the response was cut off: it took longer than {0} s (response_timeout_secs)")]
    Deadline(u64),
    /// The conversation no longer fits the model's context window. Not retryable as is:
    /// the agent may compact the history and try once more. The provider fills in what
    /// the server said: the request's tokens and the window, either maybe unknown.
    #[error("the conversation is too long for the model's context window{detail}")]
    ContextLength {
        requested: Option<u64>,
        window: Option<u64>,
        /// `: ` and the server's words, for the user (empty when it said nothing).
        detail: String,
    },
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
    Setup(#[from] super::spec::SetupError),
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
