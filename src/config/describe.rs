//! How the settings are shown (`/config`, secrets hidden) and the redactor built from
//! them. The provider's own rows (name, kind, URL, key state) come from
//! `provider::describe`, which knows what a setting resolves to. Pure, apart from reading
//! the values of the key variables it is given.

use super::Config;

/// Hides the passwords of a URL: `user:password@` and password-like query parameters.
pub fn redact_url(url: &str) -> String {
    crate::redact::urls::scrub_urls(url).into_owned()
}

impl Config {
    /// The settings as (key, value) rows, secrets redacted: the file first, then every
    /// setting that is not about the provider (`provider::describe` adds those).
    pub fn describe(&self) -> Vec<(String, String)> {
        let db = self
            .database_url
            .as_ref()
            .map(|u| redact_url(u.expose()))
            .unwrap_or_else(|| "default SQLite file".into());
        let file = self
            .file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "none".into());
        let system_prompt = if self.system_prompt.is_some() {
            "custom"
        } else {
            "default"
        };
        let tool_protocol = self.tool_protocol.map_or("provider default", |p| p.as_str());
        [
            ("config file", file),
            ("max_response_bytes", self.max_response_bytes.to_string()),
            ("response_timeout_secs", self.response_timeout_secs.to_string()),
            ("max_tool_turns", self.max_tool_turns.to_string()),
            ("max_output_size", self.max_output_size.to_string()),
            ("tool_timeout_secs", self.tool_timeout_secs.to_string()),
            ("connect_timeout_secs", self.connect_timeout_secs.to_string()),
            ("idle_timeout_secs", self.idle_timeout_secs.to_string()),
            ("max_retries", self.max_retries.to_string()),
            ("retry_base_delay_ms", self.retry_base_delay_ms.to_string()),
            ("max_retry_wait_secs", self.max_retry_wait_secs.to_string()),
            ("system_prompt", system_prompt.to_string()),
            ("database", db),
            ("tool_result_lines", self.tool_result_lines.to_string()),
            ("tool_protocol", tool_protocol.to_string()),
            ("max_identical_calls", self.max_identical_calls.to_string()),
            ("max_tool_result_share", self.max_tool_result_share.to_string()),
            ("auto_compact_at", self.auto_compact_at.to_string()),
            ("sandbox", self.sandbox.mode.to_string()),
            ("sandbox_network", self.sandbox.network.to_string()),
            (
                "approval",
                self.approval
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "front end default (TUI ask, scripted auto)".into()),
            ),
            (
                "permissions",
                format!(
                    "{} allow, {} ask, {} deny rules",
                    self.permissions.allow.len(),
                    self.permissions.ask.len(),
                    self.permissions.deny.len()
                ),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// The redactor for everything this run emits or keeps: the given key, the value of
    /// every variable in `key_vars` (every provider's key, not only the selected one's: a
    /// tool or a model may echo any), and the database URL's password (see `redact`).
    pub fn redactor(&self, key_vars: &[String]) -> crate::redact::Redactor {
        let mut secrets: Vec<String> = self.api_key.iter().map(|k| k.expose().to_string()).collect();
        for var in key_vars {
            if let Some(v) = crate::environ::var(var)
                && !v.trim().is_empty()
            {
                secrets.push(v);
            }
        }
        if let Some(db) = &self.database_url
            && let Ok(u) = reqwest::Url::parse(db.expose())
            && let Some(pw) = u.password()
        {
            secrets.push(pw.to_string());
        }
        secrets.extend(super::mcp::secrets(&self.mcp_servers, &|k| {
            crate::environ::var(k)
        }));
        crate::redact::Redactor::new(secrets)
    }
}
