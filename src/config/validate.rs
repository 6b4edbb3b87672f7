//! The checks a layered config passes before anyone uses it: URL shapes, database URLs,
//! numbers in range, glob patterns. Choices (kinds, protocols) are checked earlier, by
//! their serde enums; which providers exist is checked by `provider::resolve`. Pure.

use super::{Config, ConfigError, redact_url};

/// The config, checked, with `base_url` normalised (no trailing `/`).
pub(super) fn validated(mut c: Config) -> Result<Config, ConfigError> {
    let invalid = |key, message: &str| ConfigError::Invalid {
        key,
        message: message.to_string(),
    };
    if let Some(url) = &c.base_url {
        check_url(url).map_err(|m| invalid("base_url", &m))?;
        c.base_url = Some(url.trim_end_matches('/').to_string());
    }
    for section in c.providers.values() {
        if let Some(url) = &section.base_url {
            check_url(url).map_err(|m| invalid("providers.base_url", &m))?;
        }
        if section.price.is_some_and(|p| !p.is_valid()) {
            return Err(invalid(
                "providers.price",
                "input, cached and output must be prices in USD per million tokens, 0 or more",
            ));
        }
    }
    if c.max_response_bytes < 1024 {
        return Err(invalid("max_response_bytes", "must be at least 1024 bytes"));
    }
    if c.response_timeout_secs == 0 {
        return Err(invalid("response_timeout_secs", "must be at least 1"));
    }
    if c.max_tool_turns == 0 {
        return Err(invalid("max_tool_turns", "must be at least 1"));
    }
    if c.max_output_size < 1024 {
        return Err(invalid("max_output_size", "must be at least 1024 bytes"));
    }
    for (key, v) in [
        ("max_tool_result_share", c.max_tool_result_share),
        ("auto_compact_at", c.auto_compact_at),
    ] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(invalid(
                key,
                "must be a share of the window above 0 and at most 1",
            ));
        }
    }
    if let Some(url) = &c.database_url {
        check_database_url(url.expose()).map_err(|m| invalid("database_url", &m))?;
    }
    for (key, v) in [
        ("tool_timeout_secs", c.tool_timeout_secs),
        ("connect_timeout_secs", c.connect_timeout_secs),
        ("idle_timeout_secs", c.idle_timeout_secs),
    ] {
        if v == 0 {
            return Err(invalid(key, "must be at least 1"));
        }
    }
    if c.tool_schema_timeout_ms == 0 {
        return Err(invalid("tool_schema_timeout_ms", "must be at least 1"));
    }
    for pattern in &c.tool_env_exclude {
        globset::GlobBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .map_err(|e| invalid("tool_env_exclude", &e.to_string()))?;
    }
    Ok(c)
}

/// An http(s) URL, or why not.
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{e}: {url}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("must start with http:// or https://".into());
    }
    Ok(())
}

/// Checks a `database_url` before anything opens it: a known scheme (`postgres://`,
/// `postgresql://`, `sqlite:`, or a plain file path), and for PostgreSQL a host that parses
/// and a valid `sslmode`. The message never shows a password.
fn check_database_url(url: &str) -> Result<(), String> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let shown = redact_url(url);
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("{e}: {shown}"))?;
        let socket = parsed.query_pairs().any(|(k, _)| k == "host");
        if parsed.host_str().is_none_or(str::is_empty) && !socket {
            return Err(format!("no host in {shown}"));
        }
        const SSLMODES: [&str; 6] = [
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "verify-full",
        ];
        for (k, v) in parsed.query_pairs() {
            if k == "sslmode" && !SSLMODES.contains(&v.as_ref()) {
                return Err(format!("sslmode `{v}` is not one of {}", SSLMODES.join(", ")));
            }
        }
        return Ok(());
    }
    if lower.starts_with("sqlite:") || !url.contains("://") {
        return Ok(());
    }
    Err(format!(
        "unknown scheme in {shown}: use postgres://…, sqlite://PATH or a file path"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_database_urls_are_configuration_errors() {
        for (url, says) in [
            ("mysql://u:pw@h/db", "unknown scheme"),
            ("postgres://u@h/db?sslmode=bogus", "sslmode `bogus`"),
            ("postgres://u:pw@[::1/db", "invalid"),
            ("postgres:///db", "no host"),
        ] {
            let e = check_database_url(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains(":pw@"), "{e}");
        }
        for ok in [
            "postgres://u:pw@localhost:5432/db?sslmode=require",
            "postgresql://h/db",
            "postgres:///db?host=/run/postgresql",
            "sqlite:///tmp/x.db",
            "sqlite:x.db",
            "/tmp/x.db",
        ] {
            assert_eq!(check_database_url(ok), Ok(()), "{ok}");
        }
    }
}
