//! Effective settings: defaults < config file < environment < flags, validated once.
//! Reads the file and the environment it is given; never prints, never stores the API key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Key variables of the well-known vendors: never passed to a tool process, whatever
/// `tool_env_pass` says (see `Config::provider_key_vars`).
pub const VENDOR_KEY_VARS: [&str; 9] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
];

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

/// A `[providers.NAME]` section: adds a provider or overrides a preset's values.
/// Which kinds and presets exist is the provider factory's business, not the config's.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// Wire protocol: `openai-chat`, `openai-responses`, `anthropic` or `google`.
    pub kind: Option<String>,
    pub base_url: Option<String>,
    /// The environment variable that holds the key (`""` for none).
    pub api_key_env: Option<String>,
    /// The default model of this provider.
    pub model: Option<String>,
    /// Extra HTTP headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Extra query parameters (Azure's `api-version`).
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    pub context_window: Option<u64>,
    pub temperature: Option<f64>,
    pub reasoning_effort: Option<String>,
    pub max_output_tokens: Option<u64>,
    /// `native` (default) or `text` (the SYSTEM.EXEC protocol).
    pub tool_protocol: Option<String>,
    /// Text protocol: `prefill` (continue the assistant message) or `user`.
    pub text_protocol_continue: Option<String>,
    /// Native mode: turn a whole-response JSON tool call written as text into a call.
    pub recover_text_tool_calls: Option<bool>,
    /// `[providers.local]` (the in-process engine): the GGUF file (else `model`).
    pub model_path: Option<PathBuf>,
    /// Context window in tokens (default 8192).
    pub ctx: Option<u32>,
    /// CPU threads (default: physical cores).
    pub threads: Option<u32>,
    /// Layers offloaded to a GPU (default 0).
    pub gpu_layers: Option<u32>,
    pub top_p: Option<f64>,
    pub seed: Option<u32>,
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
    pub max_retry_wait_secs: Option<u64>,
    pub system_prompt: Option<String>,
    pub system_prompt_file: Option<PathBuf>,
    pub database_url: Option<String>,
    pub tool_result_lines: Option<usize>,
    pub tool_protocol: Option<String>,
    pub max_identical_calls: Option<u32>,
    pub max_response_bytes: Option<usize>,
    pub response_timeout_secs: Option<u64>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSection>,
    pub tool_env_pass: Option<Vec<String>>,
    pub tool_env_exclude: Option<Vec<String>>,
    pub tool_schema_timeout_ms: Option<u64>,
    pub tool_dirs: Option<ToolDirs>,
    pub max_tool_result_share: Option<f64>,
    pub auto_compact_at: Option<f64>,
    /// `[mcp_servers.NAME]` sections (validated by `tools::mcp::config`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, crate::tools::mcp::config::ServerSection>,
    /// `auto`, `ask` or `read-only` (default: ask in the TUI, auto when scripted).
    pub approval: Option<String>,
    /// `[permissions]`: allow / ask / deny rules.
    pub permissions: Option<PermissionsSection>,
}

/// `[permissions]`: rule lists as written (`tool` or `tool(pattern)`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PermissionsSection {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

impl PermissionsSection {
    /// The compiled rules, tagged with where they came from; the first bad one is the error.
    pub fn compile(
        &self,
        source: crate::permissions::rule::Source,
        home: Option<&Path>,
    ) -> Result<crate::permissions::Rules, crate::permissions::rule::RuleError> {
        use crate::permissions::rule::Rule;
        let compile = |list: &[String]| -> Result<Vec<Rule>, _> {
            list.iter()
                .map(|t| Rule::parse(t, source.clone(), home))
                .collect()
        };
        Ok(crate::permissions::Rules {
            allow: compile(&self.allow)?,
            ask: compile(&self.ask)?,
            deny: compile(&self.deny)?,
        })
    }
}

/// Overrides of the external-tool folders (`[tool_dirs]`); unset keys keep the defaults.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ToolDirs {
    /// Default: `<binary dir>/../libexec/ikigai`, then `PREFIX/libexec/ikigai`.
    pub system: Option<PathBuf>,
    /// Default: `~/.ikigai/tools`.
    pub user: Option<PathBuf>,
    /// Default: `.ikigai/tools` in the working directory (a relative path is relative to it).
    pub project: Option<PathBuf>,
}

/// Values given on the command line; they win over everything.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub config_path: Option<PathBuf>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub max_tool_turns: Option<u32>,
    pub tool_protocol: Option<String>,
    /// `--approval MODE`.
    pub approval: Option<crate::permissions::Mode>,
}

/// The effective, validated settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The config file that was read, if any.
    pub file: Option<PathBuf>,
    /// The selected provider's name (a preset or a `[providers.NAME]` section); empty
    /// means the default. `provider::resolve` fills this and the fields below it that are
    /// empty from the preset and section; until then they hold only explicit settings.
    pub provider: String,
    /// Wire kind of the selected provider (filled by `provider::resolve`).
    pub kind: String,
    pub base_url: String,
    /// True when `base_url` came from `OPENAI_BASE_URL` (it applies to OpenAI kinds only).
    pub base_url_from_env: bool,
    pub model: String,
    /// The environment variable that holds the key (named in auth errors).
    pub api_key_env: String,
    pub api_key: Option<Secret>,
    /// Tokens of the selected model's context window; 0 = unknown.
    pub context_window: u64,
    /// `[providers.NAME]` sections as written.
    pub providers: BTreeMap<String, ProviderSection>,
    /// The key variable of every configured provider (for the tool environment filter);
    /// filled by `provider::resolve`.
    pub provider_key_vars: Vec<String>,
    /// Most bytes of text plus tool arguments one response may stream.
    pub max_response_bytes: usize,
    /// Longest one response may take, from request to end.
    pub response_timeout_secs: u64,
    pub max_tool_turns: u32,
    pub max_output_size: usize,
    pub tool_timeout_secs: u64,
    pub connect_timeout_secs: u64,
    pub idle_timeout_secs: u64,
    pub max_retries: u32,
    /// First backoff delay; it doubles per attempt (Retry-After wins when given).
    pub retry_base_delay_ms: u64,
    /// Longest total wait between attempts of one request (backoff and Retry-After).
    pub max_retry_wait_secs: u64,
    /// Replaces the default system prompt when set (from `system_prompt` or the file).
    pub system_prompt: Option<String>,
    /// Never printed: it may carry a password.
    pub database_url: Option<Secret>,
    /// Lines of a tool result the TUI shows; 0 = all.
    pub tool_result_lines: usize,
    /// `native` or `text` for the selected provider (over its section); `None` = its default.
    pub tool_protocol: Option<String>,
    /// How often one turn may run an identical call (same tool and arguments); 0 = no limit.
    pub max_identical_calls: u32,
    /// Variables passed to tool processes although their names look secret.
    pub tool_env_pass: Vec<String>,
    /// More variables kept from tool processes: case-insensitive globs on the name.
    pub tool_env_exclude: Vec<String>,
    /// How long an external tool may take to answer `--schema` at discovery.
    pub tool_schema_timeout_ms: u64,
    /// Where external tools are looked for.
    pub tool_dirs: ToolDirs,
    /// Largest share of the context window one tool result may take (0–1].
    pub max_tool_result_share: f64,
    /// Share of the window at which the conversation is compacted (0–1].
    pub auto_compact_at: f64,
    /// The MCP servers of the user's config (a trusted project's are merged in by the app).
    pub mcp_servers: Vec<crate::tools::mcp::ServerSpec>,
    /// The approval mode asked for; `None` lets the front end choose (the TUI asks,
    /// scripted runs are auto).
    pub approval: Option<crate::permissions::Mode>,
    /// `[permissions]` rules: the user's, then (by the app) a trusted project's.
    pub permissions: crate::permissions::Rules,
}

/// The default provider's resolved values, so that `Config::default()` is ready to use
/// (a test in `provider::factory` checks they match what `provider::resolve` gives).
impl Default for Config {
    fn default() -> Self {
        Config {
            provider: "openai".to_string(),
            kind: "openai-chat".to_string(),
            base_url: "https://api.openai.com/v1".to_string(),
            model: "gpt-5-mini".to_string(),
            api_key_env: "OPENAI_API_KEY".to_string(),
            context_window: 400_000,
            provider_key_vars: vec!["OPENAI_API_KEY".to_string()],
            ..Config::unresolved()
        }
    }
}

impl Config {
    /// Only the built-in defaults that do not depend on the provider; the provider fields
    /// empty until `provider::resolve` fills them from the selected preset and section.
    pub fn unresolved() -> Self {
        Config {
            file: None,
            provider: String::new(),
            kind: String::new(),
            base_url: String::new(),
            base_url_from_env: false,
            model: String::new(),
            api_key_env: String::new(),
            api_key: None,
            context_window: 0,
            providers: BTreeMap::new(),
            provider_key_vars: Vec::new(),
            max_response_bytes: 16 * 1024 * 1024,
            response_timeout_secs: 600,
            max_tool_turns: 50,
            max_output_size: 1_048_576,
            tool_timeout_secs: 30,
            connect_timeout_secs: 10,
            idle_timeout_secs: 120,
            max_retries: 4,
            retry_base_delay_ms: 1000,
            max_retry_wait_secs: 60,
            system_prompt: None,
            database_url: None,
            tool_result_lines: 0,
            tool_protocol: None,
            max_identical_calls: 2,
            tool_env_pass: Vec::new(),
            tool_env_exclude: Vec::new(),
            tool_schema_timeout_ms: 1000,
            tool_dirs: ToolDirs::default(),
            max_tool_result_share: 0.25,
            auto_compact_at: 0.85,
            mcp_servers: Vec::new(),
            approval: None,
            permissions: crate::permissions::Rules::default(),
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
        Self::load_with(overrides, &|k| crate::environ::var(k))
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
        let mut cfg = Config::unresolved();
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
        set(&mut self.max_retry_wait_secs, f.max_retry_wait_secs);
        set(&mut self.tool_result_lines, f.tool_result_lines);
        set(&mut self.max_identical_calls, f.max_identical_calls);
        if f.tool_protocol.is_some() {
            self.tool_protocol = f.tool_protocol;
        }
        set(&mut self.max_tool_result_share, f.max_tool_result_share);
        set(&mut self.auto_compact_at, f.auto_compact_at);
        set(&mut self.max_response_bytes, f.max_response_bytes);
        set(&mut self.response_timeout_secs, f.response_timeout_secs);
        self.providers = f.providers;
        self.mcp_servers =
            crate::tools::mcp::config::validate(&f.mcp_servers, path).map_err(|e| ConfigError::Parse {
                path: e.file,
                message: format!("`{}`: {}", e.key, e.message),
            })?;
        if let Some(a) = f.approval {
            self.approval =
                Some(
                    crate::permissions::Mode::parse(&a).map_err(|message| ConfigError::Parse {
                        path: path.to_path_buf(),
                        message: format!("`approval`: {message}"),
                    })?,
                );
        }
        if let Some(section) = f.permissions {
            let home = crate::environ::var("HOME").map(PathBuf::from);
            self.permissions = section
                .compile(crate::permissions::rule::Source::User, home.as_deref())
                .map_err(|e| ConfigError::Parse {
                    path: path.to_path_buf(),
                    message: format!("`permissions`: {e}"),
                })?;
        }
        set(&mut self.tool_env_pass, f.tool_env_pass);
        set(&mut self.tool_env_exclude, f.tool_env_exclude);
        set(&mut self.tool_schema_timeout_ms, f.tool_schema_timeout_ms);
        if let Some(mut dirs) = f.tool_dirs {
            // Relative system and user folders are relative to the config file (`~/…`
            // is the home folder, expanded by discovery).
            for d in [&mut dirs.system, &mut dirs.user].into_iter().flatten() {
                if let (true, false, Some(parent)) = (d.is_relative(), d.starts_with("~"), path.parent()) {
                    *d = parent.join(&*d);
                }
            }
            self.tool_dirs = dirs;
        }
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
            self.base_url_from_env = true;
        }
        if let Some(v) = get("IKIGAI_PROVIDER") {
            self.provider = v;
        }
        if let Some(v) = get("IKIGAI_MODEL") {
            self.model = v;
        }
        if let Some(v) = get("IKIGAI_DATABASE_URL") {
            self.database_url = Some(Secret::new(v));
        }
    }

    fn apply_overrides(&mut self, o: &Overrides) {
        set(&mut self.provider, o.provider.clone());
        set(&mut self.model, o.model.clone());
        if let Some(url) = &o.base_url {
            self.base_url = url.clone();
            self.base_url_from_env = false;
        }
        set(&mut self.max_tool_turns, o.max_tool_turns);
        if o.tool_protocol.is_some() {
            self.tool_protocol = o.tool_protocol.clone();
        }
        if o.approval.is_some() {
            self.approval = o.approval;
        }
    }

    fn validate(&mut self) -> Result<(), ConfigError> {
        let invalid = |key, message: &str| ConfigError::Invalid {
            key,
            message: message.to_string(),
        };
        // Which providers exist is checked by `provider::resolve`; the URL shape here.
        if !self.base_url.is_empty() {
            check_url(&self.base_url).map_err(|m| invalid("base_url", &m))?;
            self.base_url = self.base_url.trim_end_matches('/').to_string();
        }
        for section in self.providers.values() {
            if let Some(url) = &section.base_url {
                check_url(url).map_err(|m| invalid("providers.base_url", &m))?;
            }
        }
        if self.max_response_bytes < 1024 {
            return Err(invalid("max_response_bytes", "must be at least 1024 bytes"));
        }
        if self.response_timeout_secs == 0 {
            return Err(invalid("response_timeout_secs", "must be at least 1"));
        }
        let protocols = self
            .tool_protocol
            .iter()
            .chain(self.providers.values().filter_map(|p| p.tool_protocol.as_ref()));
        for p in protocols {
            if !matches!(p.as_str(), "native" | "text") {
                return Err(invalid(
                    "tool_protocol",
                    &format!("`{p}` is not `native` or `text`"),
                ));
            }
        }
        for c in self
            .providers
            .values()
            .filter_map(|p| p.text_protocol_continue.as_ref())
        {
            if !matches!(c.as_str(), "prefill" | "user") {
                return Err(invalid(
                    "text_protocol_continue",
                    &format!("`{c}` is not `prefill` or `user`"),
                ));
            }
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
        if let Some(url) = &self.database_url {
            check_database_url(url.expose()).map_err(|m| invalid("database_url", &m))?;
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
        if self.tool_schema_timeout_ms == 0 {
            return Err(invalid("tool_schema_timeout_ms", "must be at least 1"));
        }
        for pattern in &self.tool_env_exclude {
            globset::GlobBuilder::new(pattern)
                .case_insensitive(true)
                .build()
                .map_err(|e| invalid("tool_env_exclude", &e.to_string()))?;
        }
        Ok(())
    }

    /// Environment variables that hold provider keys: the configured `api_key_env`, every
    /// `[providers.NAME]` section's and every well-known vendor's. Tool processes never get
    /// them, even when named in `tool_env_pass`, and their values are scrubbed everywhere.
    pub fn provider_key_vars(&self) -> Vec<String> {
        let mut vars = Vec::new();
        let sections = self.providers.values().filter_map(|p| p.api_key_env.as_deref());
        for v in std::iter::once(self.api_key_env.as_str())
            .chain(sections)
            .chain(VENDOR_KEY_VARS)
        {
            if !v.is_empty() && !vars.iter().any(|x| x == v) {
                vars.push(v.to_string());
            }
        }
        vars
    }

    /// The effective settings as TOML-ish lines, secrets redacted (for `/config`).
    pub fn describe(&self) -> Vec<(String, String)> {
        let key = match (&self.api_key, self.api_key_env.as_str()) {
            (Some(_), var) => format!("set in ${var} (redacted)"),
            (None, "") => "none needed".to_string(),
            (None, var) => format!("not set (${var})"),
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
            ("kind".into(), self.kind.clone()),
            ("base_url".into(), redact_url(&self.base_url)),
            ("model".into(), self.model.clone()),
            ("api key".into(), key),
            ("context_window".into(), self.context_window.to_string()),
            ("max_response_bytes".into(), self.max_response_bytes.to_string()),
            (
                "response_timeout_secs".into(),
                self.response_timeout_secs.to_string(),
            ),
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
            ("max_retry_wait_secs".into(), self.max_retry_wait_secs.to_string()),
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
                "tool_protocol".into(),
                self.tool_protocol
                    .clone()
                    .unwrap_or_else(|| "provider default".into()),
            ),
            ("max_identical_calls".into(), self.max_identical_calls.to_string()),
            (
                "max_tool_result_share".into(),
                self.max_tool_result_share.to_string(),
            ),
            ("auto_compact_at".into(), self.auto_compact_at.to_string()),
            (
                "approval".into(),
                self.approval
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "front end default (TUI ask, scripted auto)".into()),
            ),
            (
                "permissions".into(),
                format!(
                    "{} allow, {} ask, {} deny rules",
                    self.permissions.allow.len(),
                    self.permissions.ask.len(),
                    self.permissions.deny.len()
                ),
            ),
        ]
    }
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

/// Hides the passwords of a URL: `user:password@` and password-like query parameters.
pub fn redact_url(url: &str) -> String {
    crate::redact::scrub_urls(url).into_owned()
}

impl Config {
    /// The redactor for everything this run emits or keeps: every configured key and the
    /// database URL's password (see `redact`).
    pub fn redactor(&self) -> crate::redact::Redactor {
        let mut secrets: Vec<String> = self.api_key.iter().map(|k| k.expose().to_string()).collect();
        // Every provider's key, not only the selected one's: a tool or a model may echo any.
        for var in self.provider_key_vars() {
            if let Some(v) = crate::environ::var(&var)
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
        secrets.extend(crate::tools::mcp::config::secrets(&self.mcp_servers, &|k| {
            crate::environ::var(k)
        }));
        crate::redact::Redactor::new(secrets)
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

    #[test]
    fn defaults_without_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap().to_string();
        let cfg = Config::load_with(&Overrides::default(), &env_of(&[("HOME", &home)])).unwrap();
        assert_eq!(cfg.max_tool_turns, 50);
        assert_eq!(cfg.max_output_size, 1_048_576);
        assert_eq!(cfg.tool_timeout_secs, 30);
        assert_eq!(cfg.base_url, "", "the provider preset decides");
        assert_eq!(cfg.max_response_bytes, 16 * 1024 * 1024);
        assert_eq!(cfg.response_timeout_secs, 600);
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
        assert!(cfg.base_url_from_env);
        assert_eq!(cfg.max_tool_turns, 7);
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
    fn provider_sections_are_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "provider = \"azure\"\n[providers.azure]\nkind = \"openai-chat\"\nbase_url = \"https://x.openai.azure.com/openai/v1\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\nquery = { api-version = \"preview\" }\nheaders = { x-team = \"a\" }\ncontext_window = 128000\ntemperature = 0.2\nreasoning_effort = \"low\"\nmax_output_tokens = 4096\n",
        );
        let o = Overrides {
            config_path: Some(p),
            ..Default::default()
        };
        let cfg = Config::load_with(&o, &env_of(&[("IKIGAI_PROVIDER", "ignored-by-flag")])).unwrap();
        assert_eq!(cfg.provider, "ignored-by-flag", "env wins over the file");
        let s = &cfg.providers["azure"];
        assert_eq!(s.kind.as_deref(), Some("openai-chat"));
        assert_eq!(s.query["api-version"], "preview");
        assert_eq!(s.headers["x-team"], "a");
        assert_eq!(s.context_window, Some(128_000));
        assert_eq!(s.temperature, Some(0.2));
        assert_eq!(s.max_output_tokens, Some(4096));
        let p = write(&dir, "[providers.x]\nbase_url = \"ftp://nope\"\n");
        let o = Overrides {
            config_path: Some(p.clone()),
            ..Default::default()
        };
        assert!(
            Config::load_with(&o, &env_of(&[]))
                .unwrap_err()
                .to_string()
                .contains("base_url")
        );
        let p = write(&dir, "[providers.x]\nkindd = \"openai-chat\"\n");
        let o = Overrides {
            config_path: Some(p),
            ..Default::default()
        };
        assert!(
            Config::load_with(&o, &env_of(&[]))
                .unwrap_err()
                .to_string()
                .contains("kindd")
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
