//! The text of the `/model` listing, shared by both front ends: one line per configured
//! provider (current marked, key state by variable name, never a key), then its models or
//! why they could not be listed. Pure; styling is each front end's job.

use crate::protocol::{KeyState, ProviderInfo};

/// One provider's lines.
pub(crate) struct Entry {
    pub current: bool,
    /// `* name  kind  model`, padded to align with the other entries.
    pub head: String,
    /// `key $VAR`, `no key: set $VAR`, or `no key needed`.
    pub key: String,
    pub key_missing: bool,
    /// `models: a, b, c`, or the error (`Err`), or nothing.
    pub detail: Option<Result<String, String>>,
}

/// The title line above the entries.
pub(crate) const TITLE: &str =
    "Providers (* current; /model PROVIDER/MODEL switches, /model MODEL keeps the provider)";

/// The entries, aligned in columns.
pub(crate) fn entries(providers: &[ProviderInfo]) -> Vec<Entry> {
    let w_name = providers.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let w_kind = providers.iter().map(|p| p.kind.len()).max().unwrap_or(0);
    let w_model = providers.iter().map(|p| p.model.len()).max().unwrap_or(0);
    providers
        .iter()
        .map(|p| {
            let mark = if p.current { '*' } else { ' ' };
            let head = format!(
                "{mark} {:<w_name$}  {:<w_kind$}  {:<w_model$}",
                p.name, p.kind, p.model
            );
            let key = match (p.key, p.key_env.is_empty()) {
                (KeyState::Set, true) => "key set".to_string(),
                (KeyState::Set, false) => format!("key ${}", p.key_env),
                (KeyState::Missing, _) => format!("no key: set ${}", p.key_env),
                (KeyState::NotNeeded, _) => "no key needed".to_string(),
            };
            let detail = match (&p.error, p.models.is_empty()) {
                (Some(e), _) => Some(Err(format!("cannot list models: {e}"))),
                (None, false) => Some(Ok(format!("models: {}", p.models.join(", ")))),
                (None, true) => None,
            };
            Entry {
                current: p.current,
                head,
                key,
                key_missing: p.key == KeyState::Missing,
                detail,
            }
        })
        .collect()
}

/// The whole listing as plain text (the scripted front end).
pub(crate) fn text(providers: &[ProviderInfo]) -> String {
    let mut out = format!("{TITLE}\n");
    for e in entries(providers) {
        out.push_str(&format!("{}  {}\n", e.head, e.key));
        if let Some(Ok(d) | Err(d)) = e.detail {
            out.push_str(&format!("    {d}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, key: KeyState, models: &[&str], error: Option<&str>) -> ProviderInfo {
        ProviderInfo {
            name: name.into(),
            kind: "openai-chat".into(),
            model: "m".into(),
            current: name == "openai",
            key,
            key_env: if key == KeyState::NotNeeded {
                String::new()
            } else {
                format!("{}_API_KEY", name.to_uppercase())
            },
            models: models.iter().map(|m| m.to_string()).collect(),
            error: error.map(str::to_string),
        }
    }

    #[test]
    fn the_listing_marks_the_current_provider_and_names_key_variables_only() {
        let t = text(&[
            p("openai", KeyState::Set, &["gpt-5", "gpt-5-mini"], None),
            p("xai", KeyState::Missing, &[], None),
            p("ollama", KeyState::NotNeeded, &[], Some("cannot connect")),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], TITLE);
        assert!(lines[1].starts_with("* openai  ") && lines[1].ends_with("key $OPENAI_API_KEY"));
        assert_eq!(lines[2], "    models: gpt-5, gpt-5-mini");
        assert!(lines[3].starts_with("  xai     ") && lines[3].ends_with("no key: set $XAI_API_KEY"));
        assert!(lines[4].ends_with("no key needed"));
        assert_eq!(lines[5], "    cannot list models: cannot connect");
        assert_eq!(lines.len(), 6);
    }
}
