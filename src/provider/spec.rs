//! What one provider is, fully resolved (`Spec`), and why none could be set up
//! (`SetupError`). Data with small accessors; a leaf of `provider/`: it knows no wire
//! format, reads nothing and builds nothing.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{Continuation, Secret, WireKind};

/// The in-process engine's provider name: `provider = "local"`, a model that names a
/// `.gguf` file, or a section with `kind = "local"`.
pub const LOCAL: &str = "local";

/// Why no provider could be set up; a configuration problem (exit code 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SetupError {
    #[error("unknown provider `{name}`: choose one of {known}, or add a [providers.{name}] section")]
    UnknownProvider { name: String, known: String },
    #[error("provider `{name}`: no kind (set kind = \"openai-chat\" or another in [providers.{name}])")]
    NoKind { name: String },
    #[error("provider `{name}`: no base_url (set it in [providers.{name}])")]
    NoBaseUrl { name: String },
    #[error("provider `{name}`: no model (give --model or set model in [providers.{name}])")]
    NoModel { name: String },
    #[error("provider `{name}` ({kind}) is not available in this build")]
    Unsupported { name: String, kind: &'static str },
    #[error("cannot set up provider `{name}`: {message}")]
    Other { name: String, message: String },
}

/// How a provider handles tools: native calls or the text protocol, and how text-mode
/// output is continued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolMode {
    /// Start in text mode (`tool_protocol = "text"`).
    pub text: bool,
    pub continuation: Continuation,
    /// Native mode: turn a whole-response JSON call into a real call.
    pub recover: bool,
    /// Text mode and the in-process engine: one example exchange before the conversation
    /// (`primer`, default on).
    pub primer: bool,
    /// Native mode: the same exchange as one native tool call and its result (`primer`,
    /// default on for the local presets only).
    pub native_primer: bool,
}

impl Default for ToolMode {
    fn default() -> Self {
        ToolMode {
            text: false,
            continuation: Continuation::User,
            recover: false,
            primer: true,
            native_primer: false,
        }
    }
}

/// The in-process engine's own settings (`[providers.local]`); `None` keeps its default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineOptions {
    pub ctx: Option<u32>,
    pub threads: Option<u32>,
    pub gpu_layers: Option<u32>,
    pub top_p: Option<f64>,
    pub seed: Option<u32>,
}

/// One provider, fully resolved: everything a provider of any kind needs to talk to it.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub kind: WireKind,
    /// Without a trailing `/`.
    pub base_url: String,
    /// The model; for the in-process engine the GGUF file.
    pub model: String,
    /// Empty for servers that need no key.
    pub api_key_env: String,
    pub api_key: Option<Secret>,
    /// Nothing can be sent without a key (the vendor's own endpoint, or a section that
    /// names a key variable).
    pub key_required: bool,
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    /// Tokens; 0 when unknown.
    pub context_window: u64,
    pub temperature: Option<f64>,
    pub reasoning_effort: Option<String>,
    pub max_output_tokens: Option<u64>,
    pub connect_timeout: Duration,
    /// Longest silence inside a response.
    pub idle: Duration,
    /// Most bytes of text, reasoning and tool arguments in one response.
    pub max_response_bytes: usize,
    /// Longest one response may take, request to end.
    pub response_timeout: Duration,
    /// Native tool calls or the text protocol, and how text-mode output is continued.
    pub tool_mode: ToolMode,
    /// The in-process engine's settings (ignored by the other kinds).
    pub engine: EngineOptions,
    /// What its tokens cost.
    pub pricing: super::prices::Pricing,
    /// The model takes images (`images = true|false`; see `resolve`).
    pub images: bool,
}

impl Spec {
    /// A spec for the in-process engine running `model_path`, with nothing configured.
    pub fn local(model_path: &std::path::Path, context_window: u64) -> Spec {
        Spec {
            name: LOCAL.into(),
            kind: WireKind::Local,
            base_url: String::new(),
            model: model_path.display().to_string(),
            api_key_env: String::new(),
            api_key: None,
            key_required: false,
            headers: Vec::new(),
            query: Vec::new(),
            context_window,
            temperature: None,
            reasoning_effort: None,
            max_output_tokens: None,
            connect_timeout: Duration::ZERO,
            idle: Duration::ZERO,
            max_response_bytes: usize::MAX,
            response_timeout: Duration::ZERO,
            tool_mode: ToolMode::default(),
            engine: EngineOptions::default(),
            pricing: super::prices::Pricing::Local,
            images: false,
        }
    }

    /// The image types its wire format takes (Gemini takes no GIF).
    pub fn image_types(&self) -> &'static [&'static str] {
        match self.kind {
            WireKind::Google => &["image/png", "image/jpeg", "image/webp"],
            _ => &["image/png", "image/jpeg", "image/gif", "image/webp"],
        }
    }

    /// The GGUF file of the in-process engine.
    pub fn model_path(&self) -> PathBuf {
        PathBuf::from(&self.model)
    }

    /// True when a request would be refused for want of a key, so none is sent.
    pub fn missing_key(&self) -> bool {
        self.key_required && self.api_key.is_none()
    }

    /// `base_url` + `path` + the configured query parameters.
    pub fn url(&self, path: &str) -> String {
        let mut url = format!("{}{path}", self.base_url);
        for (i, (k, v)) in self.query.iter().enumerate() {
            url.push(if i == 0 && !path.contains('?') { '?' } else { '&' });
            url.push_str(&format!("{k}={v}"));
        }
        url
    }
}
