//! Effective settings: defaults < config file < environment < flags, validated once.
//! Reads the file and the environment it is given; never prints, never stores the API key.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL: &str = "gpt-5-mini";
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// A configuration problem; always the user's to fix (exit code 2), never retryable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid setting `{key}`: {message}")]
    Invalid { key: &'static str, message: String },
    #[error("cannot read system_prompt_file {path}: {source}")]
    SystemPromptFile { path: PathBuf, source: std::io::Error },
}

/// An API key. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The only way to read the key: when building a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The config file as written; every key optional, unknown keys rejected.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub max_tool_turns: Option<u32>,
    pub max_output_size: Option<usize>,
    pub tool_timeout_secs: Option<u64>,
    pub connect_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
    pub retry_base_delay_ms: Option<u64>,
    pub system_prompt: Option<String>,
    pub system_prompt_file: Option<PathBuf>,
    pub database_url: Option<String>,
    pub tool_result_lines: Option<usize>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub max_tool_result_share: Option<f64>,
    pub auto_compact_at: Option<f64>,
}

/// Values given on the command line; they win over everything.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub config_path: Option<PathBuf>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub max_tool_turns: Option<u32>,
}

/// The effective, validated settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The config file that was read, if any.
    pub file: Option<PathBuf>,
    pub provider: String,
    pub base_url: String,
    pub model: String,
    /// The environment variable that holds the key (named in auth errors).
    pub api_key_env: String,
    pub api_key: Option<Secret>,
    pub max_tool_turns: u32,
    pub max_output_size: usize,
    pub tool_timeout_secs: u64,
    pub connect_timeout_secs: u64,
    pub idle_timeout_secs: u64,
    pub max_retries: u32,
    /// First backoff delay; it doubles per attempt (Retry-After wins when given).
    pub retry_base_delay_ms: u64,
    /// Replaces the default system prompt when set (from `system_prompt` or the file).
    pub system_prompt: Option<String>,
    /// Never printed: it may carry a password.
    pub database_url: Option<Secret>,
    /// Lines of a tool result the TUI shows; 0 = all.
    pub tool_result_lines: usize,
    /// The model's context window in tokens; `None`: from the preset table or the server.
    pub context_window: Option<u64>,
    /// Tokens kept free for the answer; `None`: an eighth of the window, at most 16k.
    pub max_output_tokens: Option<u64>,
    /// Largest share of the context window one tool result may take (0–1].
    pub max_tool_result_share: f64,
    /// Share of the window at which the conversation is compacted (0–1].
    pub auto_compact_at: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            file: None,
            provider: "openai".to_string(),
            base_url: DEFAULT_BASE_URL.to_string(),
            model: DEFAULT_MODEL.to_string(),
            api_key_env: DEFAULT_API_KEY_ENV.to_string(),
            api_key: None,
            max_tool_turns: 50,
            max_output_size: 1_048_576,
            tool_timeout_secs: 30,
            connect_timeout_secs: 10,
            idle_timeout_secs: 120,
            max_retries: 4,
            retry_base_delay_ms: 1000,
            system_prompt: None,
            database_url: None,
            tool_result_lines: 0,
            context_window: None,
            max_output_tokens: None,
            max_tool_result_share: 0.25,
            auto_compact_at: 0.85,
        }
    }
}

/// Where the config file is looked for: `$IKIGAI_CONFIG`, else
/// `$XDG_CONFIG_HOME/ikigai/config.toml`, else `~/.config/ikigai/config.toml`.
pub fn default_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(p) = env("IKIGAI_CONFIG").filter(|s| !s.is_empty()) {
        return Some(PathBuf::from(p));
    }
    xdg_dir(env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("ikigai").join("config.toml"))
}

/// `$VAR` when set and absolute, else `$HOME/fallback`.
pub fn xdg_dir(env: &dyn Fn(&str) -> Option<String>, var: &str, fallback: &str) -> Option<PathBuf> {
    if let Some(v) = env(var).filter(|s| Path::new(s).is_absolute()) {
        return Some(PathBuf::from(v));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(fallback))
}

impl Config {
    /// Loads from the process environment.
    pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
        Self::load_with(overrides, &|k| std::env::var(k).ok())
    }

    /// Loads with an explicit environment (tests pass their own).
    pub fn load_with(
        overrides: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let explicit = overrides
            .config_path
            .clone()
            .or_else(|| env("IKIGAI_CONFIG").filter(|s| !s.is_empty()).map(PathBuf::from));
        let (path, required) = match explicit {
            Some(p) => (Some(p), true),
            None => (default_config_path(env), false),
        };
        let mut cfg = Config::default();
        if let Some(path) = path {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let file: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
                        path: path.clone(),
                        message: e.to_string().trim_end().to_string(),
                    })?;
                    cfg.apply_file(file, &path)?;
                    cfg.file = Some(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {}
                Err(source) => return Err(ConfigError::Read { path, source }),
            }
        }
        cfg.apply_env(env);
        cfg.apply_overrides(overrides);
        cfg.validate()?;
        Ok(cfg)
    }

    fn apply_file(&mut self, f: FileConfig, path: &Path) -> Result<(), ConfigError> {
        set(&mut self.provider, f.provider);
        set(&mut self.base_url, f.base_url);
        set(&mut self.model, f.model);
        set(&mut self.api_key_env, f.api_key_env);
        set(&mut self.max_tool_turns, f.max_tool_turns);
        set(&mut self.max_output_size, f.max_output_size);
        set(&mut self.tool_timeout_secs, f.tool_timeout_secs);
        set(&mut self.connect_timeout_secs, f.connect_timeout_secs);
        set(&mut self.idle_timeout_secs, f.idle_timeout_secs);
        set(&mut self.max_retries, f.max_retries);
        set(&mut self.retry_base_delay_ms, f.retry_base_delay_ms);
        set(&mut self.tool_result_lines, f.tool_result_lines);
        if f.context_window.is_some() {
            self.context_window = f.context_window;
        }
        if f.max_output_tokens.is_some() {
            self.max_output_tokens = f.max_output_tokens;
        }
        set(&mut self.max_tool_result_share, f.max_tool_result_share);
        set(&mut self.auto_compact_at, f.auto_compact_at);
        if let Some(url) = f.database_url {
            self.database_url = Some(Secret::new(url));
        }
        if f.system_prompt.is_some() && f.system_prompt_file.is_some() {
            return Err(ConfigError::Invalid {
                key: "system_prompt_file",
                message: "set either system_prompt or system_prompt_file, not both".into(),
            });
        }
        if let Some(p) = f.system_prompt_file {
            // A relative prompt file is relative to the config file.
            let p = match path.parent() {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p,
            };
            let text = std::fs::read_to_string(&p)
                .map_err(|source| ConfigError::SystemPromptFile { path: p, source })?;
            self.system_prompt = Some(text);
        } else if f.system_prompt.is_some() {
            self.system_prompt = f.system_prompt;
        }
        Ok(())
    }

    fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        let get = |k: &str| env(k).filter(|v| !v.is_empty());
        if let Some(v) = get("OPENAI_BASE_URL") {
            self.base_url = v;
        }
        if let Some(v) = get("IKIGAI_MODEL") {
            self.model = v;
        }
        if let Some(v) = get("IKIGAI_DATABASE_URL") {
            self.database_url = Some(Secret::new(v));
        }
        self.api_key = get(&self.api_key_env).map(Secret::new);
    }

    fn apply_overrides(&mut self, o: &Overrides) {
        set(&mut self.model, o.model.clone());
        set(&mut self.base_url, o.base_url.clone());
        set(&mut self.max_tool_turns, o.max_tool_turns);
    }

    fn validate(&mut self) -> Result<(), ConfigError> {
        let invalid = |key, message: &str| ConfigError::Invalid {
            key,
            message: message.to_string(),
        };
        if self.provider != "openai" {
            return Err(invalid(
                "provider",
                "supported providers: openai (any OpenAI-compatible server)",
            ));
        }
        let url = reqwest::Url::parse(&self.base_url)
            .map_err(|e| invalid("base_url", &format!("{e}: {}", self.base_url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("base_url", "must start with http:// or https://"));
        }
        self.base_url = self.base_url.trim_end_matches('/').to_string();
        if self.model.trim().is_empty() {
            return Err(invalid("model", "must not be empty"));
        }
        if self.max_tool_turns == 0 {
            return Err(invalid("max_tool_turns", "must be at least 1"));
        }
        if self.max_output_size < 1024 {
            return Err(invalid("max_output_size", "must be at least 1024 bytes"));
        }
        for (key, v) in [
            ("max_tool_result_share", self.max_tool_result_share),
            ("auto_compact_at", self.auto_compact_at),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(invalid(
                    key,
                    "must be a share of the window above 0 and at most 1",
                ));
            }
        }
        if self.context_window.is_some_and(|w| w < 1024) {
            return Err(invalid("context_window", "must be at least 1024 tokens"));
        }
        if let (Some(w), Some(o)) = (self.context_window, self.max_output_tokens)
            && o >= w / 2
        {
            return Err(invalid(
                "max_output_tokens",
                "must be less than half of context_window",
            ));
        }
        for (key, v) in [
            ("tool_timeout_secs", self.tool_timeout_secs),
            ("connect_timeout_secs", self.connect_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
        ] {
            if v == 0 {
                return Err(invalid(key, "must be at least 1"));
            }
        }
        Ok(())
    }

    /// True when requests go to OpenAI itself, which needs a key.
    pub fn is_default_endpoint(&self) -> bool {
        self.base_url == DEFAULT_BASE_URL
    }

    /// True when nothing could be sent: OpenAI's own endpoint and no key.
    pub fn needs_key(&self) -> bool {
        self.api_key.is_none() && self.is_default_endpoint()
    }

    /// A few lines (each under 80 columns) on how to point ikigai at a model.
    pub fn setup_hint(&self) -> Vec<String> {
        let var = &self.api_key_env;
        vec![
            format!("No API key in ${var}. To talk to a model, choose one:"),
            format!("  OpenAI:        export {var}=sk-..."),
            "  Other vendor:  ikigai --base-url https://api.example.com/v1 (key in the same".to_string(),
            "                 variable, or name another with api_key_env in the config)".to_string(),
            "  Local server:  ikigai --base-url http://127.0.0.1:8080/v1 (llama.cpp, vLLM;".to_string(),
            "                 Ollama: http://127.0.0.1:11434/v1) - no key needed".to_string(),
            "  Config file:   ~/.config/ikigai/config.toml (see config.example.toml)".to_string(),
        ]
    }

    /// The effective settings as TOML-ish lines, secrets redacted (for `/config`).
    pub fn describe(&self) -> Vec<(String, String)> {
        let key = match &self.api_key {
            Some(_) => format!("set in ${} (redacted)", self.api_key_env),
            None => format!("not set (${})", self.api_key_env),
        };
        let db = self
            .database_url
            .as_ref()
            .map(|u| redact_url(u.expose()))
            .unwrap_or_else(|| "default SQLite file".into());
        vec![
            (
                "config file".into(),
                self.file
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "none".into()),
            ),
            ("provider".into(), self.provider.clone()),
            ("base_url".into(), self.base_url.clone()),
            ("model".into(), self.model.clone()),
            ("api key".into(), key),
            ("max_tool_turns".into(), self.max_tool_turns.to_string()),
            ("max_output_size".into(), self.max_output_size.to_string()),
            ("tool_timeout_secs".into(), self.tool_timeout_secs.to_string()),
            (
                "connect_timeout_secs".into(),
                self.connect_timeout_secs.to_string(),
            ),
            ("idle_timeout_secs".into(), self.idle_timeout_secs.to_string()),
            ("max_retries".into(), self.max_retries.to_string()),
            ("retry_base_delay_ms".into(), self.retry_base_delay_ms.to_string()),
            (
                "system_prompt".into(),
                if self.system_prompt.is_some() {
                    "custom".into()
                } else {
                    "default".into()
                },
            ),
            ("database".into(), db),
            ("tool_result_lines".into(), self.tool_result_lines.to_string()),
            (
                "context_window".into(),
                self.context_window
                    .map_or_else(|| "from the model".into(), |w| w.to_string()),
            ),
            (
                "max_output_tokens".into(),
                self.max_output_tokens
                    .map_or_else(|| "an eighth of the window".into(), |w| w.to_string()),
            ),
            (
                "max_tool_result_share".into(),
                self.max_tool_result_share.to_string(),
            ),
            ("auto_compact_at".into(), self.auto_compact_at.to_string()),
        ]
    }
}

/// Hides the password of a `scheme://user:password@host/db` URL.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("redacted"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

fn set<T>(slot: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *slot = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn write(dir: &tempfile::TempDir, text: &str) -> PathBuf {
        let p = dir.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn defaults_without_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap().to_string();
        let cfg = Config::load_with(&Overrides::default(), &env_of(&[("HOME", &home)])).unwrap();
        assert_eq!(cfg.max_tool_turns, 50);
        assert_eq!(cfg.max_output_size, 1_048_576);
        assert_eq!(cfg.tool_timeout_secs, 30);
        assert_eq!(cfg.base_url, DEFAULT_BASE_URL);
        assert!(cfg.api_key.is_none());
        assert!(cfg.file.is_none());
    }

    #[test]
    fn precedence_file_then_env_then_flags() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "model = \"from-file\"\nbase_url = \"http://file/v1\"\nmax_tool_turns = 7\n",
        );
        let env = env_of(&[
            ("IKIGAI_CONFIG", p.to_str().unwrap()),
            ("OPENAI_BASE_URL", "http://env/v1/"),
            ("OPENAI_API_KEY", "sk-1"),
        ]);
        let cfg = Config::load_with(&Overrides::default(), &env).unwrap();
        assert_eq!(cfg.model, "from-file");
        assert_eq!(cfg.base_url, "http://env/v1");
        assert_eq!(cfg.max_tool_turns, 7);
        assert_eq!(cfg.api_key.as_ref().unwrap().expose(), "sk-1");
        let o = Overrides {
            model: Some("flag".into()),
            max_tool_turns: Some(3),
            ..Default::default()
        };
        let cfg = Config::load_with(&o, &env).unwrap();
        assert_eq!(cfg.model, "flag");
        assert_eq!(cfg.max_tool_turns, 3);
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "model = \"x\"\nmax_tool_turn = 3\n");
        let o = Overrides {
            config_path: Some(p.clone()),
            ..Default::default()
        };
        let err = Config::load_with(&o, &env_of(&[])).unwrap_err().to_string();
        assert!(err.contains(p.to_str().unwrap()), "{err}");
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("max_tool_turn"), "{err}");
    }

    #[test]
    fn wrong_type_and_bad_values_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "max_tool_turns = \"many\"\n");
        let o = Overrides {
            config_path: Some(p),
            ..Default::default()
        };
        let err = Config::load_with(&o, &env_of(&[])).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("max_tool_turns"), "{err}");
        let o = Overrides {
            base_url: Some("ftp://x".into()),
            ..Default::default()
        };
        assert!(
            Config::load_with(&o, &env_of(&[]))
                .unwrap_err()
                .to_string()
                .contains("base_url")
        );
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        let o = Overrides {
            config_path: Some("/nonexistent/ikigai.toml".into()),
            ..Default::default()
        };
        let err = Config::load_with(&o, &env_of(&[])).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/ikigai.toml"), "{err}");
    }

    #[test]
    fn system_prompt_file_is_read_relative_to_config() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("prompt.md"), "be terse").unwrap();
        let p = write(&dir, "system_prompt_file = \"prompt.md\"\n");
        let o = Overrides {
            config_path: Some(p),
            ..Default::default()
        };
        let cfg = Config::load_with(&o, &env_of(&[])).unwrap();
        assert_eq!(cfg.system_prompt.as_deref(), Some("be terse"));
    }

    #[test]
    fn secrets_never_show() {
        let cfg = Config {
            api_key: Some(Secret::new("sk-very-secret")),
            database_url: Some(Secret::new("postgres://u:pw@host/db")),
            ..Default::default()
        };
        let shown = format!("{cfg:?} {:?}", cfg.describe());
        assert!(!shown.contains("sk-very-secret"));
        assert!(!shown.contains(":pw@"));
    }
}

#[cfg(test)]
mod example_file {
    use super::*;

    #[test]
    fn config_example_toml_parses_and_validates() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
        let o = Overrides {
            config_path: Some(path),
            ..Default::default()
        };
        let cfg = Config::load_with(&o, &|_| None).unwrap();
        assert_eq!(cfg.max_tool_turns, 50);
    }
}
