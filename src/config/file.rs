//! The config file as written (every key optional, unknown keys rejected, choices as
//! enums) and how it, the environment and the flags are laid over the defaults, in that
//! order. Reads only the files and variables it is given; checks nothing but shapes
//! (`validate` does the rest).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Config, ConfigError, Continuation, Overrides, Protocol, Secret, WireKind, ranges};

/// A `[providers.NAME]` section: adds a provider or overrides a preset's values.
/// Which presets exist is the provider's business (`provider::presets`), not the config's.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// Wire protocol: `openai-chat`, `openai-responses`, `anthropic`, `google` or `local`.
    pub kind: Option<WireKind>,
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
    #[serde(default, deserialize_with = "ranges::window")]
    pub context_window: Option<u64>,
    #[serde(default, deserialize_with = "ranges::temperature")]
    pub temperature: Option<f64>,
    pub reasoning_effort: Option<String>,
    #[serde(default, deserialize_with = "ranges::output_tokens")]
    pub max_output_tokens: Option<u64>,
    /// `native` (default) or `text` (the SYSTEM.EXEC protocol).
    pub tool_protocol: Option<Protocol>,
    /// Text protocol: `prefill` (continue the assistant message) or `user`.
    pub text_protocol_continue: Option<Continuation>,
    /// Native mode: turn a whole-response JSON tool call written as text into a call.
    pub recover_text_tool_calls: Option<bool>,
    /// Whether the model takes images (`@shot.png`); default: yes for the vendors' wire
    /// formats, no for local servers and the in-process engine.
    pub images: Option<bool>,
    /// `[providers.local]` (the in-process engine): the GGUF file (else `model`).
    pub model_path: Option<PathBuf>,
    /// Context window in tokens (default 8192).
    #[serde(default, deserialize_with = "ranges::ctx")]
    pub ctx: Option<u32>,
    /// CPU threads (default: physical cores).
    #[serde(default, deserialize_with = "ranges::threads")]
    pub threads: Option<u32>,
    /// Layers offloaded to a GPU (default 0).
    #[serde(default, deserialize_with = "ranges::gpu_layers")]
    pub gpu_layers: Option<u32>,
    #[serde(default, deserialize_with = "ranges::top_p")]
    pub top_p: Option<f64>,
    pub seed: Option<u32>,
    /// The text protocol and the in-process engine: one example exchange (a command and
    /// its output) before the conversation, which small models imitate (default true).
    pub primer: Option<bool>,
    /// What this provider's tokens cost (USD per million), for every model of it; the
    /// built-in table prices the vendors' own models, and local ones have none.
    pub price: Option<super::Price>,
}

/// The config file as written; every key optional, unknown keys rejected.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    #[serde(default, deserialize_with = "ranges::count")]
    pub max_tool_turns: Option<u32>,
    #[serde(default, deserialize_with = "ranges::bytes")]
    pub max_output_size: Option<usize>,
    #[serde(default, deserialize_with = "ranges::secs")]
    pub tool_timeout_secs: Option<u64>,
    #[serde(default, deserialize_with = "ranges::secs")]
    pub connect_timeout_secs: Option<u64>,
    #[serde(default, deserialize_with = "ranges::secs")]
    pub idle_timeout_secs: Option<u64>,
    #[serde(default, deserialize_with = "ranges::retries")]
    pub max_retries: Option<u32>,
    #[serde(default, deserialize_with = "ranges::delay_ms")]
    pub retry_base_delay_ms: Option<u64>,
    #[serde(default, deserialize_with = "ranges::wait_secs")]
    pub max_retry_wait_secs: Option<u64>,
    pub system_prompt: Option<String>,
    pub system_prompt_file: Option<PathBuf>,
    pub database_url: Option<String>,
    #[serde(default, deserialize_with = "ranges::lines")]
    pub tool_result_lines: Option<usize>,
    pub tool_protocol: Option<Protocol>,
    #[serde(default, deserialize_with = "ranges::identical")]
    pub max_identical_calls: Option<u32>,
    #[serde(default, deserialize_with = "ranges::checkpoint_mb")]
    pub checkpoint_limit_mb: Option<u64>,
    #[serde(default, deserialize_with = "ranges::bytes")]
    pub max_response_bytes: Option<usize>,
    #[serde(default, deserialize_with = "ranges::secs")]
    pub response_timeout_secs: Option<u64>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSection>,
    pub tool_env_pass: Option<Vec<String>>,
    pub tool_env_exclude: Option<Vec<String>>,
    #[serde(default, deserialize_with = "ranges::timeout_ms")]
    pub tool_schema_timeout_ms: Option<u64>,
    pub tool_dirs: Option<ToolDirs>,
    #[serde(default, deserialize_with = "ranges::share")]
    pub max_tool_result_share: Option<f64>,
    #[serde(default, deserialize_with = "ranges::share")]
    pub auto_compact_at: Option<f64>,
    /// `[mcp_servers.NAME]` sections (validated by `config::mcp`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, super::mcp::ServerSection>,
    /// `[[hooks.EVENT]]` tables (validated by `config::hooks`).
    #[serde(default)]
    pub hooks: super::hooks::HooksSection,
    /// The OS sandbox of tool processes: `off`, `workspace-write`, `read-only`.
    pub sandbox: Option<crate::policy::sandbox::SandboxMode>,
    /// IP sockets inside the sandbox (default: blocked).
    pub sandbox_network: Option<bool>,
    /// More folders the sandbox lets tools write in (`workspace-write`).
    pub writable_roots: Option<Vec<PathBuf>>,
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
        source: crate::policy::rule::Source,
        home: Option<&Path>,
    ) -> Result<crate::policy::Rules, crate::policy::rule::RuleError> {
        use crate::policy::rule::Rule;
        let compile = |list: &[String]| -> Result<Vec<Rule>, _> {
            list.iter()
                .map(|t| Rule::parse(t, source.clone(), home))
                .collect()
        };
        Ok(crate::policy::Rules {
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

/// Where the config file is looked for: `$IKIGAI_CONFIG`, else
/// `$XDG_CONFIG_HOME/ikigai/config.toml`, else `~/.config/ikigai/config.toml`.
pub fn default_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(p) = env("IKIGAI_CONFIG").filter(|s| !s.is_empty()) {
        return Some(PathBuf::from(p));
    }
    crate::paths::config_home(env).map(|d| d.join("ikigai").join("config.toml"))
}

/// Defaults < file < environment < flags, not yet validated.
pub(super) fn layered(
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
                let file: FileConfig = toml::from_str(&text).map_err(|e| parse_error(&path, &text, &e))?;
                apply_file(&mut cfg, file, &path)?;
                cfg.file = Some(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {}
            Err(source) => return Err(ConfigError::Read { path, source }),
        }
    }
    apply_env(&mut cfg, env);
    apply_overrides(&mut cfg, overrides);
    Ok(cfg)
}

/// A file's parse or range error: `FILE:LINE: `the line`: what is wrong`, or toml's own
/// text when it points nowhere.
fn parse_error(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let Some(span) = e.span() else {
        return ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        };
    };
    let start = span.start.min(text.len());
    let before = text.get(..start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let from = before.rfind('\n').map_or(0, |i| i + 1);
    let shown = text
        .get(from..)
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default()
        .trim();
    ConfigError::At {
        path: path.to_path_buf(),
        line,
        message: format!(
            "`{}`: {}",
            crate::text::shorten(shown, 80),
            e.message().trim_end()
        ),
    }
}

fn apply_file(c: &mut Config, f: FileConfig, path: &Path) -> Result<(), ConfigError> {
    let given = |v: Option<String>| v.filter(|s| !s.is_empty());
    c.provider = given(f.provider).or(c.provider.take());
    c.base_url = given(f.base_url).or(c.base_url.take());
    c.model = given(f.model).or(c.model.take());
    c.api_key_env = given(f.api_key_env).or(c.api_key_env.take());
    set(&mut c.max_tool_turns, f.max_tool_turns);
    set(&mut c.max_output_size, f.max_output_size);
    set(&mut c.tool_timeout_secs, f.tool_timeout_secs);
    set(&mut c.connect_timeout_secs, f.connect_timeout_secs);
    set(&mut c.idle_timeout_secs, f.idle_timeout_secs);
    set(&mut c.max_retries, f.max_retries);
    set(&mut c.retry_base_delay_ms, f.retry_base_delay_ms);
    set(&mut c.max_retry_wait_secs, f.max_retry_wait_secs);
    set(&mut c.tool_result_lines, f.tool_result_lines);
    set(&mut c.max_identical_calls, f.max_identical_calls);
    set(&mut c.checkpoint_limit_mb, f.checkpoint_limit_mb);
    if f.tool_protocol.is_some() {
        c.tool_protocol = f.tool_protocol;
    }
    set(&mut c.max_tool_result_share, f.max_tool_result_share);
    set(&mut c.auto_compact_at, f.auto_compact_at);
    set(&mut c.max_response_bytes, f.max_response_bytes);
    set(&mut c.response_timeout_secs, f.response_timeout_secs);
    c.providers = f.providers;
    c.mcp_servers = super::mcp::validate(&f.mcp_servers, path).map_err(|e| ConfigError::Parse {
        path: e.file,
        message: format!("`{}`: {}", e.key, e.message),
    })?;
    let source = super::hooks::HookSource::User(path.to_path_buf());
    c.hooks = super::hooks::validate(&f.hooks, path, &source).map_err(|e| ConfigError::Parse {
        path: e.file,
        message: format!("`hooks`: {}", e.message),
    })?;
    set(&mut c.sandbox.mode, f.sandbox);
    set(&mut c.sandbox.network, f.sandbox_network);
    set(&mut c.sandbox.writable_roots, f.writable_roots);
    if let Some(a) = f.approval {
        c.approval = Some(
            crate::policy::Mode::parse(&a).map_err(|message| ConfigError::Parse {
                path: path.to_path_buf(),
                message: format!("`approval`: {message}"),
            })?,
        );
    }
    if let Some(section) = f.permissions {
        let home = crate::environ::var("HOME").map(PathBuf::from);
        c.permissions = section
            .compile(crate::policy::rule::Source::User, home.as_deref())
            .map_err(|e| ConfigError::Parse {
                path: path.to_path_buf(),
                message: format!("`permissions`: {e}"),
            })?;
    }
    set(&mut c.tool_env_pass, f.tool_env_pass);
    set(&mut c.tool_env_exclude, f.tool_env_exclude);
    set(&mut c.tool_schema_timeout_ms, f.tool_schema_timeout_ms);
    if let Some(mut dirs) = f.tool_dirs {
        // Relative system and user folders are relative to the config file (`~/…`
        // is the home folder, expanded by discovery).
        for d in [&mut dirs.system, &mut dirs.user].into_iter().flatten() {
            if let (true, false, Some(parent)) = (d.is_relative(), d.starts_with("~"), path.parent()) {
                *d = parent.join(&*d);
            }
        }
        c.tool_dirs = dirs;
    }
    if let Some(url) = f.database_url {
        c.database_url = Some(Secret::new(url));
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
        c.system_prompt = Some(text);
    } else if f.system_prompt.is_some() {
        c.system_prompt = f.system_prompt;
    }
    Ok(())
}

fn apply_env(c: &mut Config, env: &dyn Fn(&str) -> Option<String>) {
    let get = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(v) = get("OPENAI_BASE_URL") {
        c.base_url = Some(v);
        c.base_url_from_env = true;
    }
    if let Some(v) = get("IKIGAI_PROVIDER") {
        c.provider = Some(v);
    }
    if let Some(v) = get("IKIGAI_MODEL") {
        c.model = Some(v);
    }
    if let Some(v) = get("IKIGAI_DATABASE_URL") {
        c.database_url = Some(Secret::new(v));
    }
}

fn apply_overrides(c: &mut Config, o: &Overrides) {
    let given = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    if let Some(p) = given(&o.provider) {
        c.provider = Some(p);
    }
    if let Some(m) = given(&o.model) {
        c.model = Some(m);
    }
    if let Some(url) = given(&o.base_url) {
        c.base_url = Some(url);
        c.base_url_from_env = false;
    }
    set(&mut c.max_tool_turns, o.max_tool_turns);
    set(&mut c.sandbox.mode, o.sandbox);
    if o.approval.is_some() {
        c.approval = o.approval;
    }
    if o.tool_protocol.is_some() {
        c.tool_protocol = o.tool_protocol;
    }
}

fn set<T>(slot: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *slot = v;
    }
}
