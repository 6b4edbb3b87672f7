//! From settings to a provider `Spec`: which provider is selected, and what it resolves
//! to (preset < `[providers.NAME]` section < explicit settings, the key read from its
//! variable). Reads the config and the key lookup it is given, never changes the config,
//! builds nothing, knows no wire format. Everything about vendors comes from `presets`.

use std::time::Duration;

use super::presets::{self, WireKind};
use super::prices::Pricing;
use super::spec::{EngineOptions, LOCAL, SetupError, Spec, ToolMode};
use crate::config::{Config, Continuation, Protocol, ProviderSection, Secret};

/// What the settings resolve to: the selected provider, and every variable that holds a
/// provider key (never passed to a tool process, and their values scrubbed everywhere).
#[derive(Clone, Debug)]
pub struct Resolved {
    pub spec: Spec,
    pub key_vars: Vec<String>,
}

/// Where ikigai reads a provider key: the variable in its environment.
pub fn env_key(var: &str) -> Option<String> {
    crate::environ::var(var)
}

/// The selected provider, resolved; reads keys with `keys` (`env_key` in the binary).
pub fn resolve(config: &Config, keys: &dyn Fn(&str) -> Option<String>) -> Result<Resolved, SetupError> {
    let (name, _) = selected(config);
    Ok(Resolved {
        spec: spec_for(config, &name, None, keys)?,
        key_vars: key_vars(config),
    })
}

/// Every provider name the user can choose: the presets, the in-process engine (when
/// built in), then the sections' own names.
pub fn names(config: &Config) -> Vec<String> {
    let mut out: Vec<String> = presets::PRESETS.iter().map(|p| p.name.to_string()).collect();
    if cfg!(feature = "local") {
        out.push(LOCAL.to_string());
    }
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
    let known = presets::find(name).is_some() || config.providers.contains_key(name) || name == LOCAL;
    (known && !rest.is_empty()).then_some((name, rest))
}

/// The key variable of every preset (and the other names of its key), every section and
/// the explicit `api_key_env`, without duplicates.
pub fn key_vars(config: &Config) -> Vec<String> {
    let mut vars: Vec<String> = Vec::new();
    let table: Vec<&str> = presets::key_vars().collect();
    let candidates = config
        .api_key_env
        .iter()
        .map(String::as_str)
        .chain(config.providers.values().filter_map(|s| s.api_key_env.as_deref()))
        .chain(table);
    for v in candidates {
        if !v.is_empty() && !vars.iter().any(|x| x == v) {
            vars.push(v.to_string());
        }
    }
    vars
}

/// Whether `model` names a GGUF file (the in-process engine's model).
pub fn is_gguf(model: &str) -> bool {
    model.trim().to_ascii_lowercase().ends_with(".gguf")
}

/// The selected provider's name and the model asked for: explicit `provider`, else the
/// `NAME/` of the model, else the default preset; a `.gguf` model selects the engine.
fn selected(config: &Config) -> (String, String) {
    let model = config.model.clone().unwrap_or_default();
    if is_gguf(&model) {
        let path = model.strip_prefix("local/").unwrap_or(&model);
        return (LOCAL.to_string(), path.to_string());
    }
    if let Some(p) = &config.provider {
        return (p.clone(), model);
    }
    match split_model(config, &model) {
        Some((name, m)) => (name.to_string(), m.to_string()),
        None => (presets::DEFAULT.to_string(), model),
    }
}

/// The spec of provider `name` (with `model` when given). For the selected provider the
/// explicit top-level settings (`base_url`, `model`, `api_key_env`, a given key) win over
/// its section and preset.
pub fn spec_for(
    config: &Config,
    name: &str,
    model: Option<&str>,
    keys: &dyn Fn(&str) -> Option<String>,
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
    let kind = match (sec.kind, preset) {
        (Some(k), _) => k,
        (None, Some(p)) => p.kind,
        (None, None) if name == LOCAL => WireKind::Local,
        (None, None) => {
            return Err(SetupError::NoKind {
                name: name.to_string(),
            });
        }
    };
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
        if let Some(url) = &config.base_url
            && (kind.is_openai() || !config.base_url_from_env)
        {
            base_url = Some(url.clone());
        }
        if let Some(var) = config.api_key_env.as_ref().filter(|v| !v.is_empty()) {
            api_key_env = var.clone();
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
        api_key = keys(&api_key_env).filter(|v| !v.is_empty()).map(Secret::new);
    }
    // The vendor's own endpoint always needs a key; a server the user pointed at may not,
    // unless the user's section names a key variable.
    let own_endpoint = preset_url.as_deref() == Some(base_url.as_str());
    let key_required = !api_key_env.is_empty() && (own_endpoint || sec.api_key_env.is_some());
    let protocol = config.tool_protocol.filter(|_| is_selected).or(sec.tool_protocol);
    let pricing = match sec.price {
        Some(p) => Pricing::Configured(p),
        None if kind == WireKind::Local || preset.is_some_and(|p| p.local) || loopback(&base_url) => {
            Pricing::Local
        }
        None => Pricing::Table,
    };
    // Local servers and the in-process engine mostly run models without vision; the
    // vendors' own formats all take images.
    let local_server =
        preset.is_some_and(|p| p.local) || (kind == WireKind::OpenAiChat && loopback(&base_url));
    let images = sec.images.unwrap_or(kind != WireKind::Local && !local_server);
    Ok(Spec {
        images,
        pricing,
        tool_mode: tool_mode(&sec, protocol, preset, kind, &base_url),
        context_window: sec
            .context_window
            .or(preset.map(|p| p.context_window))
            .or((kind == WireKind::Local).then(|| u64::from(sec.ctx.unwrap_or(8192))))
            .unwrap_or(0),
        engine: EngineOptions {
            ctx: sec.ctx,
            threads: sec.threads,
            gpu_layers: sec.gpu_layers,
            top_p: sec.top_p,
            seed: sec.seed,
        },
        name: name.to_string(),
        kind,
        base_url,
        model,
        api_key_env,
        api_key,
        key_required,
        headers: sec.headers.into_iter().collect(),
        query: sec.query.into_iter().collect(),
        temperature: sec.temperature.or(local_server.then_some(LOCAL_TEMPERATURE)),
        reasoning_effort: sec.reasoning_effort,
        max_output_tokens: sec.max_output_tokens,
        connect_timeout: Duration::from_secs(config.connect_timeout_secs),
        idle: Duration::from_secs(config.idle_timeout_secs),
        max_response_bytes: config.max_response_bytes,
        response_timeout: Duration::from_secs(config.response_timeout_secs),
    })
}

/// The sampling temperature for local servers unless configured: small models call tools
/// far more reliably when sampling is nearly greedy (`make eval`, text protocol, 0.5B
/// model: 6/14 at the server's default 0.8, 10/14 at 0.2). The in-process engine samples
/// greedily (its own default, `local::settings`).
pub const LOCAL_TEMPERATURE: f64 = 0.2;

/// Whether `base_url` is a server on this machine.
fn loopback(base_url: &str) -> bool {
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| h == "localhost" || h == "[::1]" || h.starts_with("127."))
}

/// A provider's tool protocol: `protocol` (the flag or top-level setting for the selected
/// provider, else its section), then the defaults: recovery of text tool calls on for
/// local servers (a local preset or a loopback URL), prefill continuation where the
/// server continues a final assistant message (the presets that say so, loopback Chat
/// Completions servers, Anthropic).
fn tool_mode(
    sec: &ProviderSection,
    protocol: Option<Protocol>,
    preset: Option<&presets::Preset>,
    kind: WireKind,
    base_url: &str,
) -> ToolMode {
    let loopback = loopback(base_url);
    let local = preset.is_some_and(|p| p.local) || loopback;
    let prefill = preset.is_some_and(|p| p.prefill)
        || (loopback && kind == WireKind::OpenAiChat)
        || kind == WireKind::Anthropic;
    ToolMode {
        text: protocol == Some(Protocol::Text),
        continuation: sec.text_protocol_continue.unwrap_or(if prefill {
            Continuation::Prefill
        } else {
            Continuation::User
        }),
        recover: sec.recover_text_tool_calls.unwrap_or(local),
        primer: sec.primer.unwrap_or(true),
        native_primer: sec.primer.unwrap_or(preset.is_some_and(|p| p.local)),
    }
}

#[cfg(test)]
mod tests;
