//! What a user reads about a provider: the setup hint when nothing can be sent, what to
//! do about an error, and the provider's rows of `/config`. The vendors named come from
//! `presets`. Pure text; never shows a key.

use super::error::ProviderError;
use super::presets::{self, PRESETS};
use super::spec::Spec;
use crate::config::{Config, redact_url};

/// Longest line of the hint (it must fit an 80-column terminal).
const WIDTH: usize = 79;
/// The hint's label column.
const INDENT: usize = 17;

/// A few lines (each under 80 columns) on how to set this provider up; empty when it is
/// ready.
pub fn setup_hint(spec: &Spec) -> Vec<String> {
    if !spec.missing_key() {
        return Vec::new();
    }
    let var = &spec.api_key_env;
    let vendors: Vec<&str> = PRESETS
        .iter()
        .filter(|p| !p.local && p.api_key_env != var.as_str())
        .map(|p| p.name)
        .collect();
    let servers: Vec<&str> = PRESETS.iter().filter(|p| p.local).map(|p| p.name).collect();
    let mut out = vec![
        format!("No API key in ${var} for provider `{}`. Choose one:", spec.name),
        format!("  {}:{}export {var}=...", spec.name, pad(&spec.name)),
    ];
    out.extend(choices(
        "  Other vendor:  ikigai --provider ",
        &vendors,
        " (each reads its own key variable)",
    ));
    out.extend(choices(
        "  Local server:  ikigai --provider ",
        &servers,
        " (no key), or",
    ));
    out.extend([
        format!(
            "{}--base-url http://127.0.0.1:8080/v1 for any compatible server",
            " ".repeat(INDENT)
        ),
        "  Config file:   $XDG_CONFIG_HOME/ikigai/config.toml or ~/.config/ikigai/".to_string(),
        format!(
            "{}config.toml, [providers.NAME] (see config.example.toml)",
            " ".repeat(INDENT)
        ),
    ]);
    if cfg!(feature = "local") {
        out.insert(
            out.len() - 2,
            "  Local model:   ikigai --model PATH/TO/MODEL.gguf (in-process, no server)".to_string(),
        );
    }
    out
}

/// `first` then `names` joined by `|`, then `tail`, wrapped under the label column.
fn choices(first: &str, names: &[&str], tail: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let last = names.len().saturating_sub(1);
    for (i, name) in names.iter().enumerate() {
        let word = if i == last {
            name.to_string()
        } else {
            format!("{name}|")
        };
        if line.len() + word.len() > WIDTH && line.len() > INDENT {
            lines.push(std::mem::replace(&mut line, " ".repeat(INDENT)));
        }
        line.push_str(&word);
    }
    if line.len() + tail.len() > WIDTH {
        lines.push(std::mem::replace(&mut line, " ".repeat(INDENT)));
        line.push_str(tail.trim_start());
    } else {
        line.push_str(tail);
    }
    lines.push(line);
    lines
}

fn pad(name: &str) -> String {
    " ".repeat(15usize.saturating_sub(name.len() + 1).max(1))
}

/// The error as the user should read it, with what to do about it.
pub fn describe_error(spec: &Spec, e: &ProviderError) -> String {
    match e {
        ProviderError::MissingKey { .. } => setup_hint(spec).join("\n"),
        ProviderError::Auth { .. } if spec.api_key.is_none() => format!(
            "{e}\nSet it with `export {}=...`, or choose another provider with --provider.",
            spec.api_key_env
        ),
        ProviderError::Connect { .. } => format!(
            "{e}\nIs the server running? Check the base URL of provider `{}` ({}).",
            spec.name,
            redact_url(&spec.base_url)
        ),
        ProviderError::NothingListening { .. } => format!(
            "{e}\nStart the server, or check the base URL of provider `{}`.",
            spec.name
        ),
        ProviderError::UnknownModel { .. } => {
            format!("{e}\nChoose another model with --model or /model (it lists what is offered).")
        }
        _ => e.to_string(),
    }
}

/// The `/config` rows: the settings, with the provider in use (`spec`, running `model`)
/// after the config file's row. Secrets redacted; the key only as its state.
pub fn describe(config: &Config, spec: &Spec, model: &str) -> Vec<(String, String)> {
    let key = match (&spec.api_key, spec.api_key_env.as_str()) {
        (Some(_), var) => format!("set in ${var} (redacted)"),
        (None, "") => "none needed".to_string(),
        (None, var) => format!("not set (${var})"),
    };
    let provider = [
        ("provider", spec.name.clone()),
        ("kind", spec.kind.as_str().to_string()),
        ("base_url", redact_url(&spec.base_url)),
        ("model", model.to_string()),
        ("api key", key),
        ("context_window", spec.context_window.to_string()),
        (
            "images",
            if takes_images(spec) { "yes" } else { "no" }.to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v));
    let mut rows = config.describe();
    let at = rows.len().min(1);
    rows.splice(at..at, provider);
    rows
}

/// Whether images may go to this provider's model: configured (or by default) so, and
/// neither the in-process engine nor the text protocol.
fn takes_images(spec: &Spec) -> bool {
    spec.images && spec.kind != crate::config::WireKind::Local && !spec.tool_mode.text
}

/// The names `--provider` takes, for the command line's help.
pub fn preset_names() -> String {
    presets::PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;
    use crate::provider::resolve::spec_for;

    #[test]
    fn config_rows_say_whether_the_model_takes_images() {
        let images = |name: &str| {
            let spec = spec_for(&Config::default(), name, None, &|_| None).unwrap();
            describe(&Config::default(), &spec, &spec.model)
                .into_iter()
                .find(|(k, _)| k == "images")
                .map(|(_, v)| v)
        };
        assert_eq!(images("anthropic").as_deref(), Some("yes"));
        assert_eq!(images("ollama").as_deref(), Some("no"));
    }

    #[test]
    fn the_hint_names_every_other_vendor_and_server_from_the_table() {
        let spec = spec_for(&Config::default(), "openai", None, &|_| None).unwrap();
        let hint = setup_hint(&spec);
        assert_eq!(
            hint[2..6],
            [
                "  Other vendor:  ikigai --provider anthropic|google|xai|deepseek|openrouter|",
                "                 groq|mistral (each reads its own key variable)",
                "  Local server:  ikigai --provider ollama|llamacpp|vllm|lmstudio (no key), or",
                "                 --base-url http://127.0.0.1:8080/v1 for any compatible server",
            ]
        );
        for p in PRESETS.iter().filter(|p| p.api_key_env != "OPENAI_API_KEY") {
            assert!(hint.join("\n").contains(p.name), "{} is missing", p.name);
        }
        let spec = spec_for(&Config::default(), "anthropic", None, &|_| None).unwrap();
        let hint = setup_hint(&spec);
        assert!(hint.iter().all(|l| l.chars().count() < 80), "{hint:#?}");
        assert!(hint.join("\n").contains("openai|"), "{hint:#?}");
    }

    #[test]
    fn config_rows_show_the_provider_in_use_without_its_key() {
        let c = Config {
            api_key: Some(Secret::new("sk-very-secret")),
            database_url: Some(Secret::new("postgres://u:pw@host/db")),
            ..Default::default()
        };
        let spec = spec_for(&c, "openai", None, &|_| None).unwrap();
        let rows = describe(&c, &spec, "gpt-5");
        let shown = format!("{rows:?}");
        assert!(
            !shown.contains("sk-very-secret") && !shown.contains(":pw@"),
            "{shown}"
        );
        assert_eq!(rows[0].0, "config file");
        assert_eq!(rows[1], ("provider".to_string(), "openai".to_string()));
        assert_eq!(rows[4], ("model".to_string(), "gpt-5".to_string()));
        assert_eq!(rows[5].1, "set in $OPENAI_API_KEY (redacted)");
        assert_eq!(preset_names().split(", ").count(), PRESETS.len());
    }
}
