//! `/model`: listing the configured providers with their models, and switching model or
//! provider mid-session. The provider is resolved and built by `provider`; the canonical history stays
//! as it is (each provider serialises it, keeping only its own reasoning). Knows no wire
//! format and never shows a key.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::state::AgentState;
use crate::config::WireKind;
use crate::protocol::{Event, KeyState, NoticeLevel, ProviderInfo};
use crate::provider::{self, Provider, ProviderError, SetupError, Spec};
use crate::store::MarkerKind;

/// How long `/model` waits for one provider's model list.
pub(crate) const LIST_TIMEOUT: Duration = Duration::from_secs(3);

/// `/model MODEL` (current provider), `/model PROVIDER/MODEL` (switch provider) or
/// `/model PROVIDER/` (switch to the provider's own model).
pub(crate) fn set_model(st: &mut AgentState, arg: &str) {
    let arg = arg.trim();
    if arg.is_empty() {
        st.notice(NoticeLevel::Error, "usage: /model MODEL or /model PROVIDER/MODEL");
        return;
    }
    let current = st.provider().name().to_string();
    let provider_alone = arg
        .strip_suffix('/')
        .filter(|name| provider::names(st.config()).iter().any(|n| n == name));
    let split = match provider_alone {
        Some(name) => Some((name, "")),
        None => provider::split_model(st.config(), arg)
            // A `.gguf` file is the in-process engine's model, whatever provider is current.
            .or_else(|| provider::is_gguf(arg).then_some((provider::LOCAL, arg))),
    };
    // The engine holds one model: another file means another engine.
    let reload =
        |name: &str, model: &str| name == provider::LOCAL && !model.is_empty() && model != st.model();
    match split {
        Some((name, model)) if name != current || reload(name, model) => {
            let (name, model) = (name.to_string(), model.to_string());
            if let Err(e) = switch_provider(st, &name, &model) {
                let model_now = format!("{current}/{}", st.model());
                st.notice(
                    NoticeLevel::Error,
                    format!("/model {arg}: {e}; still using {model_now}"),
                );
            }
        }
        Some((_, "")) => apply(st, st.provider().spec().model.clone()),
        Some((_, model)) => apply(st, model.to_string()),
        None => apply(st, arg.to_string()),
    }
}

/// Why another provider cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SwitchError {
    /// Unknown provider, bad section.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// It needs what is not there (a key); the lines say how to set it up.
    #[error("{}", .0.join(" "))]
    NotReady(Vec<String>),
}

/// Builds provider `name` with `model` and makes it current; on failure (unknown
/// provider, no key, bad section) the current provider stays and the error says why.
pub(crate) fn switch_provider(st: &mut AgentState, name: &str, model: &str) -> Result<(), SwitchError> {
    let spec = provider::spec_for(st.config(), name, Some(model), &provider::env_key)?;
    let provider = provider::build(spec)?;
    let hint = provider.setup_hint();
    if !hint.is_empty() {
        return Err(SwitchError::NotReady(hint));
    }
    let model = provider.spec().model.clone();
    st.set_provider(provider);
    apply(st, model);
    Ok(())
}

/// Uses `model` on the current provider from the next request on, and records it.
fn apply(st: &mut AgentState, model: String) {
    let provider = st.provider().name().to_string();
    let window = st.provider().spec().context_window;
    st.set_model(model.clone(), window);
    st.marker(MarkerKind::Model, json!({"model": model, "provider": provider}));
    st.emit(Event::ModelChanged {
        model: model.clone(),
        provider: provider.clone(),
    });
    st.notice(NoticeLevel::Info, format!("model set to {provider}/{model}"));
}

/// `/model` alone: every configured provider, with the models its endpoint lists (asked
/// at once, each bounded by `LIST_TIMEOUT`; no request where the key is missing).
pub(crate) async fn list(st: &AgentState) {
    let current = st.provider().name().to_string();
    let mut rows = Vec::new();
    let mut asks = Vec::new();
    for name in provider::names(st.config()) {
        if name == current {
            let row = info(st.provider().spec(), st.model(), true);
            asks.push((row.key != KeyState::Missing).then(|| st.provider().clone()));
            rows.push(row);
            continue;
        }
        match provider::spec_for(st.config(), &name, None, &provider::env_key) {
            Ok(spec) => {
                let row = info(&spec, &spec.model, false);
                let ask = (row.key != KeyState::Missing && spec.kind != WireKind::Local)
                    .then(|| provider::build(spec).ok())
                    .flatten();
                rows.push(row);
                asks.push(ask);
            }
            // The engine without a configured file: any `.gguf` file will do.
            Err(SetupError::NoModel { .. }) if name == provider::LOCAL => {
                rows.push(ProviderInfo {
                    kind: WireKind::Local.as_str().to_string(),
                    model: "(any .gguf file: /model PATH.gguf)".to_string(),
                    ..info(&provider::Spec::local(std::path::Path::new(""), 0), "", false)
                });
                asks.push(None);
            }
            Err(e) => {
                rows.push(ProviderInfo {
                    name: name.clone(),
                    kind: String::new(),
                    model: String::new(),
                    current: false,
                    key: KeyState::NotNeeded,
                    key_env: String::new(),
                    models: Vec::new(),
                    error: Some(e.to_string()),
                });
                asks.push(None);
            }
        }
    }
    let answers = futures_util::future::join_all(asks.into_iter().map(models_of)).await;
    for (row, answer) in rows.iter_mut().zip(answers) {
        match answer {
            Some(Ok(models)) => row.models = models,
            Some(Err(e)) => row.error = Some(e),
            None => {}
        }
    }
    st.emit(Event::Providers { providers: rows });
}

/// The model list of one provider: `None` when not asked.
async fn models_of(provider: Option<Arc<dyn Provider>>) -> Option<Result<Vec<String>, String>> {
    let provider = provider?;
    if provider.spec().kind == WireKind::Local {
        return None;
    }
    Some(
        match tokio::time::timeout(LIST_TIMEOUT, provider.models()).await {
            Ok(Ok(models)) => Ok(models),
            Ok(Err(e)) => Err(one_line(&e)),
            Err(_) => Err(format!(
                "no model list from {} within {} s",
                provider.spec().base_url,
                LIST_TIMEOUT.as_secs()
            )),
        },
    )
}

fn one_line(e: &ProviderError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// A provider's row without its model list.
fn info(spec: &Spec, model: &str, current: bool) -> ProviderInfo {
    let key = if spec.api_key.is_some() {
        KeyState::Set
    } else if spec.missing_key() {
        KeyState::Missing
    } else {
        KeyState::NotNeeded
    };
    ProviderInfo {
        name: spec.name.clone(),
        kind: spec.kind.as_str().to_string(),
        model: model.to_string(),
        current,
        key,
        key_env: spec.api_key_env.clone(),
        models: Vec::new(),
        error: None,
    }
}
