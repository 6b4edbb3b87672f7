//! The provider factory: the only place that knows provider kinds, presets, key policy and
//! setup hints. Merges preset < `[providers.NAME]` section < explicit settings into a
//! `Spec`, and builds the provider of that kind. Knows no wire format.

use std::sync::Arc;
use std::time::Duration;

use super::presets::{self, WireKind};
use super::text_protocol::render::Continuation;
use super::text_protocol::wrapper::{ToolMode, ToolProtocol};
use super::{Provider, ProviderError};
use crate::config::{Config, Secret};

/// Why no provider could be set up; a configuration problem (exit code 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SetupError {
    #[error("unknown provider `{name}`: choose one of {known}, or add a [providers.{name}] section")]
    UnknownProvider { name: String, known: String },
    #[error("provider `{name}`: unknown kind `{kind}` (choose one of {known})")]
    UnknownKind {
        name: String,
        kind: String,
        known: String,
    },
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

/// One provider, fully resolved: everything a provider of any kind needs to talk to it.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub kind: WireKind,
    /// Without a trailing `/`.
    pub base_url: String,
    pub model: String,
    /// Empty for servers that need no key.
    pub api_key_env: String,
    pub api_key: Option<Secret>,
    /// Nothing can be sent without a key (the vendor's own endpoint, or a section that
    /// names a key variable).
    pub key_required: bool,
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
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
}

/// Every provider name the user can choose: the presets, then the sections' own names.
pub fn names(config: &Config) -> Vec<String> {
    let mut out: Vec<String> = presets::PRESETS.iter().map(|p| p.name.to_string()).collect();
    for name in config.providers.keys() {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// Splits `NAME/MODEL` when NAME is a known provider (`openrouter/openai/gpt-5` →
/// (`openrouter`, `openai/gpt-5`)); `None` otherwise.
pub fn split_model<'a>(config: &Config, model: &'a str) -> Option<(&'a str, &'a str)> {
    let (name, rest) = model.split_once('/')?;
    let known = presets::find(name).is_some() || config.providers.contains_key(name);
    (known && !rest.is_empty()).then_some((name, rest))
}

/// The in-process engine's provider name: `provider = "local"`, a model that names a
/// `.gguf` file, or a section with `kind = "local"`.
pub const LOCAL: &str = "local";

/// The selected provider's name: explicit `provider`, else the `NAME/` of the model, else
/// the default.
fn selected(config: &Config) -> (String, String) {
    if config.model.to_ascii_lowercase().ends_with(".gguf") {
        return (LOCAL.to_string(), config.model.clone());
    }
    if !config.provider.is_empty() {
        return (config.provider.clone(), config.model.clone());
    }
    match split_model(config, &config.model) {
        Some((name, model)) => (name.to_string(), model.to_string()),
        None => (presets::DEFAULT.to_string(), config.model.clone()),
    }
}

/// The spec of provider `name`. For the selected provider the explicit top-level settings
/// (`base_url`, `model`, `api_key_env`, a given key) win over its section and preset.
pub fn spec_for(
    config: &Config,
    name: &str,
    model: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Spec, SetupError> {
    let (selected_name, selected_model) = selected(config);
    let is_selected = name == selected_name;
    let preset = presets::find(name);
    let section = config.providers.get(name);
    if preset.is_none() && section.is_none() && name != LOCAL {
        return Err(SetupError::UnknownProvider {
            name: name.to_string(),
            known: names(config).join(", "),
        });
    }
    let sec = section.cloned().unwrap_or_default();
    let kind = match (&sec.kind, preset) {
        (Some(k), _) => WireKind::parse(k).ok_or_else(|| SetupError::UnknownKind {
            name: name.to_string(),
            kind: k.clone(),
            known: WireKind::ALL.map(WireKind::as_str).join(", "),
        })?,
        (None, Some(p)) => p.kind,
        (None, None) if name == LOCAL => WireKind::Local,
        (None, None) => {
            return Err(SetupError::NoKind {
                name: name.to_string(),
            });
        }
    };
    let openai_kind = matches!(kind, WireKind::OpenAiChat | WireKind::OpenAiResponses);
    let preset_url = preset.map(|p| p.base_url.to_string());
    let mut base_url = sec
        .base_url
        .clone()
        .or_else(|| preset_url.clone())
        .or_else(|| (kind == WireKind::Local).then(String::new));
    let mut api_key_env = sec
        .api_key_env
        .clone()
        .or_else(|| preset.map(|p| p.api_key_env.to_string()))
        .unwrap_or_default();
    let mut chosen_model = sec.model.clone().or_else(|| preset.map(|p| p.model.to_string()));
    if let Some(path) = &sec.model_path {
        chosen_model = Some(path.display().to_string());
    }
    let mut api_key = None;
    if is_selected {
        if !config.base_url.is_empty() && (openai_kind || !config.base_url_from_env) {
            base_url = Some(config.base_url.clone());
        }
        if !config.api_key_env.is_empty() {
            api_key_env = config.api_key_env.clone();
        }
        if !selected_model.is_empty() {
            chosen_model = Some(selected_model);
        }
        api_key = config.api_key.clone();
    }
    if let Some(m) = model.filter(|m| !m.is_empty()) {
        chosen_model = Some(m.to_string());
    }
    let base_url = base_url
        .ok_or_else(|| SetupError::NoBaseUrl {
            name: name.to_string(),
        })?
        .trim_end_matches('/')
        .to_string();
    let model = chosen_model
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| SetupError::NoModel {
            name: name.to_string(),
        })?;
    if api_key.is_none() && !api_key_env.is_empty() {
        api_key = env(&api_key_env).filter(|v| !v.is_empty()).map(Secret::new);
    }
    // The vendor's own endpoint always needs a key; a server the user pointed at may not,
    // unless the user's section names a key variable.
    let own_endpoint = preset_url.as_deref() == Some(base_url.as_str());
    let key_required = !api_key_env.is_empty() && (own_endpoint || sec.api_key_env.is_some());
    let tool_mode = tool_mode(config, &sec, name, kind, is_selected, &base_url);
    Ok(Spec {
        tool_mode,
        name: name.to_string(),
        kind,
        base_url,
        model,
        api_key_env,
        api_key,
        key_required,
        headers: sec.headers.into_iter().collect(),
        query: sec.query.into_iter().collect(),
        context_window: sec
            .context_window
            .or(preset.map(|p| p.context_window))
            .or((kind == WireKind::Local).then(|| u64::from(sec.ctx.unwrap_or(8192))))
            .unwrap_or(0),
        temperature: sec.temperature,
        reasoning_effort: sec.reasoning_effort,
        max_output_tokens: sec.max_output_tokens,
        connect_timeout: Duration::from_secs(config.connect_timeout_secs),
        idle: Duration::from_secs(config.idle_timeout_secs),
        max_response_bytes: config.max_response_bytes,
        response_timeout: Duration::from_secs(config.response_timeout_secs),
    })
}

/// The local servers: small models that often write tool calls as text.
const LOCAL_PRESETS: [&str; 4] = ["ollama", "llamacpp", "vllm", "lmstudio"];

/// A profile's tool protocol: the flag or top-level `tool_protocol` (selected provider
/// only) over its section, then the defaults: recovery of text tool calls on for local
/// servers (a local preset or a loopback URL), prefill continuation where the server
/// continues a final assistant message (llama.cpp, Ollama, loopback servers, Anthropic).
fn tool_mode(
    config: &Config,
    sec: &crate::config::ProviderSection,
    name: &str,
    kind: WireKind,
    is_selected: bool,
    base_url: &str,
) -> ToolMode {
    let loopback = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| h == "localhost" || h == "[::1]" || h.starts_with("127."));
    let local = LOCAL_PRESETS.contains(&name) || loopback;
    let protocol = config
        .tool_protocol
        .as_deref()
        .filter(|_| is_selected)
        .or(sec.tool_protocol.as_deref());
    let prefill = matches!(name, "llamacpp" | "ollama")
        || (loopback && kind == WireKind::OpenAiChat)
        || kind == WireKind::Anthropic;
    let continuation = sec
        .text_protocol_continue
        .as_deref()
        .and_then(Continuation::parse)
        .unwrap_or(if prefill {
            Continuation::Prefill
        } else {
            Continuation::User
        });
    ToolMode {
        text: protocol == Some("text"),
        continuation,
        recover: sec.recover_text_tool_calls.unwrap_or(local),
    }
}

/// Fills the selected provider's effective values into `config` (provider, kind, base URL,
/// model, key variable and key, context window) and lists every configured provider's key
/// variable. Call once after `Config::load`.
pub fn resolve(config: &mut Config, env: &dyn Fn(&str) -> Option<String>) -> Result<(), SetupError> {
    let (name, _) = selected(config);
    let spec = spec_for(config, &name, None, env)?;
    config.provider = spec.name.clone();
    config.kind = spec.kind.as_str().to_string();
    config.base_url = spec.base_url.clone();
    config.base_url_from_env = false;
    config.model = spec.model.clone();
    config.api_key_env = spec.api_key_env.clone();
    config.api_key = spec.api_key.clone();
    config.context_window = spec.context_window;
    config.provider_key_vars = key_vars(config);
    Ok(())
}

/// The key variable of every preset and configured provider, without duplicates.
pub fn key_vars(config: &Config) -> Vec<String> {
    let mut vars: Vec<String> = Vec::new();
    let candidates = presets::PRESETS
        .iter()
        .map(|p| p.api_key_env.to_string())
        .chain(config.providers.values().filter_map(|s| s.api_key_env.clone()))
        .chain(std::iter::once(config.api_key_env.clone()));
    for v in candidates {
        if !v.is_empty() && !vars.contains(&v) {
            vars.push(v);
        }
    }
    vars
}

/// Builds the selected provider from a loaded (resolved or not) config.
pub fn build(config: &Config) -> Result<Arc<dyn Provider>, SetupError> {
    let (name, _) = selected(config);
    let spec = spec_for(config, &name, None, &|k| crate::environ::var(k))?;
    if spec.kind == WireKind::Local {
        return build_local(config, spec);
    }
    build_spec(spec)
}

/// Builds provider `name` with `model` (for `/model NAME/MODEL`).
pub fn build_named(
    config: &Config,
    name: &str,
    model: Option<&str>,
) -> Result<Arc<dyn Provider>, SetupError> {
    let spec = spec_for(config, name, model, &|k| crate::environ::var(k))?;
    if spec.kind == WireKind::Local {
        return build_local(config, spec);
    }
    build_spec(spec)
}

/// The in-process engine: its `[providers.NAME]` settings travel with the spec.
#[cfg(feature = "local")]
fn build_local(config: &Config, spec: Spec) -> Result<Arc<dyn Provider>, SetupError> {
    let section = config.providers.get(&spec.name).cloned().unwrap_or_default();
    let provider = super::local::LocalProvider::from_spec(spec, &section)?;
    Ok(Arc::new(provider))
}

#[cfg(not(feature = "local"))]
fn build_local(_config: &Config, spec: Spec) -> Result<Arc<dyn Provider>, SetupError> {
    Err(SetupError::Unsupported {
        name: spec.name,
        kind: "local (this build has no in-process engine: cargo feature `local`)",
    })
}

/// One match arm per wire kind: the extension point for new provider kinds.
pub fn build_spec(spec: Spec) -> Result<Arc<dyn Provider>, SetupError> {
    let mode = spec.tool_mode;
    let inner = build_kind(spec)?;
    // Every provider goes through the tool-protocol wrapper: it passes native calls
    // through and switches to the text protocol when the model cannot take tools.
    Ok(Arc::new(ToolProtocol::new(inner, mode)))
}

fn build_kind(spec: Spec) -> Result<Arc<dyn Provider>, SetupError> {
    let fail = |spec: &Spec, e: ProviderError| SetupError::Other {
        name: spec.name.clone(),
        message: e.to_string(),
    };
    match spec.kind {
        WireKind::OpenAiChat => match super::openai::OpenAiChat::from_spec(spec.clone()) {
            Ok(p) => Ok(Arc::new(p)),
            Err(e) => Err(fail(&spec, e)),
        },
        WireKind::Anthropic => match super::anthropic::Anthropic::from_spec(spec.clone()) {
            Ok(p) => Ok(Arc::new(p)),
            Err(e) => Err(fail(&spec, e)),
        },
        WireKind::Google => match super::google::Google::from_spec(spec.clone()) {
            Ok(p) => Ok(Arc::new(p)),
            Err(e) => Err(fail(&spec, e)),
        },
        WireKind::OpenAiResponses => match super::responses::OpenAiResponses::from_spec(spec.clone()) {
            Ok(p) => Ok(Arc::new(p)),
            Err(e) => Err(fail(&spec, e)),
        },
        WireKind::Local => Err(SetupError::Other {
            name: spec.name.clone(),
            message: "the local engine is built with its settings by provider::build".into(),
        }),
    }
}

impl Spec {
    /// `stream` bounded by this endpoint's size cap and deadline (counted from `started`).
    pub fn bounded(&self, stream: super::EventStream, started: tokio::time::Instant) -> super::EventStream {
        super::limits::bounded(stream, self.max_response_bytes, self.response_timeout, started)
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

    /// What an error message may name about this endpoint (never the key itself).
    pub fn error_context(&self, model: &str, url: &str) -> super::http::ErrorContext {
        super::http::ErrorContext {
            model: model.to_string(),
            url: url.to_string(),
            api_key_env: self.api_key_env.clone(),
            key_set: self.api_key.is_some(),
            secret: self.api_key.as_ref().map(|k| k.expose().to_string()),
        }
    }

    /// A few lines (each under 80 columns) on how to set this provider up; empty when
    /// it is ready.
    pub fn setup_hint(&self) -> Vec<String> {
        if !self.missing_key() {
            return Vec::new();
        }
        let var = &self.api_key_env;
        vec![
            format!("No API key in ${var} for provider `{}`. Choose one:", self.name),
            format!("  {}:{}export {var}=...", self.name, pad(&self.name)),
            "  Other vendor:  ikigai --provider anthropic|google|xai|deepseek|openrouter|".to_string(),
            "                 groq|mistral (each reads its own key variable)".to_string(),
            "  Local server:  ikigai --provider ollama|llamacpp|vllm|lmstudio (no key), or".to_string(),
            "                 --base-url http://127.0.0.1:8080/v1 for any compatible server".to_string(),
            "  Config file:   $XDG_CONFIG_HOME/ikigai/config.toml or ~/.config/ikigai/".to_string(),
            "                 config.toml, [providers.NAME] (see config.example.toml)".to_string(),
        ]
    }

    /// The error as the user should read it, with what to do about it.
    pub fn describe(&self, e: &ProviderError) -> String {
        match e {
            ProviderError::MissingKey { .. } => self.setup_hint().join("\n"),
            ProviderError::Auth { .. } if self.api_key.is_none() => format!(
                "{e}\nSet it with `export {}=...`, or choose another provider with --provider.",
                self.api_key_env
            ),
            ProviderError::Connect { .. } => format!(
                "{e}\nIs the server running? Check the base URL of provider `{}` ({}).",
                self.name,
                crate::config::redact_url(&self.base_url)
            ),
            ProviderError::UnknownModel { .. } => {
                format!("{e}\nChoose another model with --model or /model (it lists what is offered).")
            }
            _ => e.to_string(),
        }
    }
}

fn pad(name: &str) -> String {
    " ".repeat(15usize.saturating_sub(name.len() + 1).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderSection;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn default_is_openai_chat_and_needs_its_key() {
        let mut c = Config::unresolved();
        resolve(&mut c, &env_of(&[])).unwrap();
        assert_eq!(
            (c.provider.as_str(), c.kind.as_str(), c.base_url.as_str()),
            ("openai", "openai-chat", "https://api.openai.com/v1")
        );
        assert_eq!(
            (c.model.as_str(), c.api_key_env.as_str()),
            ("gpt-5-mini", "OPENAI_API_KEY")
        );
        assert_eq!(c.context_window, 400_000);
        let spec = spec_for(&c, "openai", None, &env_of(&[])).unwrap();
        assert!(spec.missing_key());
        let hint = spec.setup_hint().join("\n");
        assert!(
            hint.contains("$OPENAI_API_KEY") && hint.contains("--provider"),
            "{hint}"
        );
        assert!(spec.setup_hint().iter().all(|l| l.chars().count() < 80), "{hint}");
        let spec = spec_for(&c, "openai", None, &env_of(&[("OPENAI_API_KEY", "sk-x")])).unwrap();
        assert!(!spec.missing_key() && spec.setup_hint().is_empty());
    }

    #[test]
    fn config_default_is_the_resolved_default_provider() {
        let mut c = Config::unresolved();
        resolve(&mut c, &env_of(&[])).unwrap();
        let d = Config::default();
        assert_eq!(
            (
                &c.provider,
                &c.kind,
                &c.base_url,
                &c.model,
                &c.api_key_env,
                c.context_window
            ),
            (
                &d.provider,
                &d.kind,
                &d.base_url,
                &d.model,
                &d.api_key_env,
                d.context_window
            )
        );
        assert!(spec_for(&d, "openai", None, &env_of(&[])).unwrap().missing_key());
    }

    #[test]
    fn presets_are_selected_by_name_or_model_prefix_and_read_their_own_key() {
        let mut c = Config {
            model: "xai/grok-4-fast".into(),
            ..Config::unresolved()
        };
        resolve(&mut c, &env_of(&[("XAI_API_KEY", "xk")])).unwrap();
        assert_eq!((c.provider.as_str(), c.model.as_str()), ("xai", "grok-4-fast"));
        assert_eq!(c.base_url, "https://api.x.ai/v1");
        assert_eq!(c.api_key.as_ref().unwrap().expose(), "xk");
        // An explicit provider takes the model verbatim (OpenRouter names contain '/').
        let mut c = Config {
            provider: "openrouter".into(),
            model: "anthropic/claude-sonnet-4".into(),
            ..Config::unresolved()
        };
        resolve(&mut c, &env_of(&[])).unwrap();
        assert_eq!(
            (c.provider.as_str(), c.model.as_str()),
            ("openrouter", "anthropic/claude-sonnet-4")
        );
        // Local servers need no key.
        let mut c = Config {
            provider: "ollama".into(),
            ..Config::unresolved()
        };
        resolve(&mut c, &env_of(&[])).unwrap();
        let spec = spec_for(&c, "ollama", None, &env_of(&[])).unwrap();
        assert!(!spec.missing_key());
        assert_eq!(spec.base_url, "http://127.0.0.1:11434/v1");
    }

    #[test]
    fn sections_override_presets_and_add_providers() {
        let mut c = Config {
            provider: "azure".into(),
            ..Config::unresolved()
        };
        c.providers.insert(
            "azure".into(),
            ProviderSection {
                kind: Some("openai-chat".into()),
                base_url: Some("https://r.openai.azure.com/openai/v1/".into()),
                api_key_env: Some("AZURE_OPENAI_API_KEY".into()),
                model: Some("gpt-5".into()),
                query: [("api-version".to_string(), "preview".to_string())].into(),
                context_window: Some(1000),
                ..Default::default()
            },
        );
        c.providers.insert(
            "groq".into(),
            ProviderSection {
                model: Some("llama-3.3-70b-versatile".into()),
                ..Default::default()
            },
        );
        resolve(&mut c, &env_of(&[])).unwrap();
        let spec = spec_for(&c, "azure", None, &env_of(&[])).unwrap();
        assert_eq!(
            spec.url("/chat/completions"),
            "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview"
        );
        assert!(spec.missing_key(), "a section that names a key variable needs it");
        assert_eq!(c.context_window, 1000);
        let groq = spec_for(&c, "groq", None, &env_of(&[])).unwrap();
        assert_eq!(
            (groq.model.as_str(), groq.base_url.as_str()),
            ("llama-3.3-70b-versatile", "https://api.groq.com/openai/v1")
        );
        let vars = c.provider_key_vars.clone();
        for v in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "XAI_API_KEY",
            "AZURE_OPENAI_API_KEY",
        ] {
            assert!(vars.contains(&v.to_string()), "{v} in {vars:?}");
        }
        assert!(!vars.contains(&String::new()));
    }

    #[test]
    fn a_given_base_url_makes_the_key_optional_and_env_url_is_openai_only() {
        let mut c = Config {
            base_url: "http://127.0.0.1:9/v1".into(),
            ..Config::unresolved()
        };
        resolve(&mut c, &env_of(&[])).unwrap();
        let spec = spec_for(&c, "openai", None, &env_of(&[])).unwrap();
        assert!(!spec.missing_key());
        let c = Config {
            provider: "anthropic".into(),
            base_url: "http://proxy/v1".into(),
            base_url_from_env: true,
            ..Config::unresolved()
        };
        let spec = spec_for(&c, "anthropic", None, &env_of(&[])).unwrap();
        assert_eq!(
            spec.base_url, "https://api.anthropic.com/v1",
            "OPENAI_BASE_URL is for OpenAI kinds"
        );
    }

    #[test]
    fn unknown_names_and_kinds_are_setup_errors() {
        let mut c = Config {
            provider: "nope".into(),
            ..Config::unresolved()
        };
        let e = resolve(&mut c, &env_of(&[])).unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("ollama"), "{e}");
        let mut c = Config {
            provider: "x".into(),
            ..Config::unresolved()
        };
        c.providers.insert(
            "x".into(),
            ProviderSection {
                kind: Some("soap".into()),
                base_url: Some("http://h/v1".into()),
                model: Some("m".into()),
                ..Default::default()
            },
        );
        let e = resolve(&mut c, &env_of(&[])).unwrap_err().to_string();
        assert!(e.contains("soap") && e.contains("openai-responses"), "{e}");
        assert_eq!(split_model(&c, "x/m"), Some(("x", "m")));
        assert_eq!(split_model(&c, "meta-llama/llama-3"), None);
    }

    #[test]
    fn a_gguf_model_or_provider_local_selects_the_in_process_engine() {
        let mut c = Config {
            model: "/m/qwen.GGUF".into(),
            ..Config::unresolved()
        };
        resolve(&mut c, &env_of(&[])).unwrap();
        assert_eq!((c.provider.as_str(), c.kind.as_str()), ("local", "local"));
        assert_eq!((c.model.as_str(), c.context_window), ("/m/qwen.GGUF", 8192));
        assert!(!spec_for(&c, "local", None, &env_of(&[])).unwrap().missing_key());

        let mut c = Config {
            provider: "local".into(),
            ..Config::unresolved()
        };
        c.providers.insert(
            "local".into(),
            ProviderSection {
                model_path: Some("/m/coder.gguf".into()),
                ctx: Some(4096),
                ..Default::default()
            },
        );
        resolve(&mut c, &env_of(&[])).unwrap();
        assert_eq!((c.model.as_str(), c.context_window), ("/m/coder.gguf", 4096));
        let err = build(&c).err().map(|e| e.to_string()).unwrap_or_default();
        if cfg!(feature = "local") {
            assert!(
                err.contains("/m/coder.gguf") && err.contains("does not exist"),
                "{err}"
            );
        } else {
            assert!(err.contains("not available in this build"), "{err}");
        }
    }
}
