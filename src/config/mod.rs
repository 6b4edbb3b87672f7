//! Settings: defaults < config file < environment < flags, validated once into typed
//! values (choices are enums) and never changed after loading. What the provider
//! settings resolve to (preset, URL, key, window) is `provider::resolve`'s answer, a value
//! of its own. Reads the file and the environment it is given; never prints, never reads
//! a key.
//!
//! Files: `file` (the file's shape and the layering), `choices` (the enums), `validate`
//! (checks), `describe` (`/config` rows and the redactor).

mod choices;
mod describe;
mod file;
pub mod hooks;
pub mod mcp;
mod price;
mod ranges;

/// Name fragments that mark a variable as secret by default (matched case-insensitively):
/// kept from tools and MCP servers unless passed by name.
pub(crate) const SECRET_WORDS: [&str; 4] = ["KEY", "SECRET", "TOKEN", "PASSWORD"];
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

pub use choices::{Continuation, Protocol, WireKind};
pub use describe::redact_url;
pub use file::{FileConfig, PermissionsSection, ProviderSection, ToolDirs, default_config_path};
pub use price::Price;

/// A configuration problem; always the user's to fix (exit code 2), never retryable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A value the file gives at `line` is wrong (type, range, unknown key).
    #[error("{}:{line}: {message}", path.display())]
    At {
        path: PathBuf,
        line: usize,
        message: String,
    },
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

/// Values given on the command line; they win over everything.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub config_path: Option<PathBuf>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub max_tool_turns: Option<u32>,
    pub tool_protocol: Option<Protocol>,
    /// `--sandbox MODE`.
    pub sandbox: Option<crate::policy::sandbox::SandboxMode>,
    /// `--approval MODE`.
    pub approval: Option<crate::policy::Mode>,
}

/// The effective, validated settings: what the user asked for, nothing resolved. Loaded
/// once and then only read (the provider in use is the agent's state, not a setting).
#[derive(Clone, Debug)]
pub struct Config {
    /// The config file that was read, if any.
    pub file: Option<PathBuf>,
    /// `provider`: a preset or a `[providers.NAME]` section; `None` picks the `NAME/` of
    /// the model when NAME is a provider, else the default preset.
    pub provider: Option<String>,
    /// `base_url` for the selected provider (over its section and preset).
    pub base_url: Option<String>,
    /// True when `base_url` came from `OPENAI_BASE_URL` (it applies to OpenAI kinds only).
    pub base_url_from_env: bool,
    /// `model`, or `PROVIDER/MODEL`, or a `.gguf` file for the in-process engine.
    pub model: Option<String>,
    /// `api_key_env`: the variable that holds the selected provider's key.
    pub api_key_env: Option<String>,
    /// A key handed over directly for the selected provider (by an embedder or a test);
    /// never read from a file.
    pub api_key: Option<Secret>,
    /// `[providers.NAME]` sections as written.
    pub providers: BTreeMap<String, ProviderSection>,
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
    /// Lines of a tool result the TUI shows (50, as plain mode without --verbose); 0 = all.
    pub tool_result_lines: usize,
    /// `native` or `text` for the selected provider (over its section); `None` = its default.
    pub tool_protocol: Option<Protocol>,
    /// How often one turn may run an identical call (same tool and arguments); 0 = no limit.
    pub max_identical_calls: u32,
    /// Above this many MB of files that are not ignored, `bash` changes are not covered
    /// by `/undo` (no snapshot is taken).
    pub checkpoint_limit_mb: u64,
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
    pub mcp_servers: Vec<mcp::ServerSpec>,
    /// `[hooks]` of the user's config (a trusted project's are added by the app).
    pub hooks: Vec<hooks::Hook>,
    /// The OS sandbox of tool processes (`sandbox`, `sandbox_network`, `writable_roots`),
    /// checked against the kernel by `permissions::sandbox::install`.
    pub sandbox: crate::policy::sandbox::Settings,
    /// The approval mode asked for; `None` lets the front end choose (the TUI asks,
    /// scripted runs are auto).
    pub approval: Option<crate::policy::Mode>,
    /// `[permissions]` rules: the user's, then (by the app) a trusted project's.
    pub permissions: crate::policy::Rules,
}

/// The built-in defaults. Nothing about the provider is filled in: with no provider
/// setting, `provider::resolve` picks the default preset (`provider::presets`).
impl Default for Config {
    fn default() -> Self {
        Config {
            file: None,
            provider: None,
            base_url: None,
            base_url_from_env: false,
            model: None,
            api_key_env: None,
            api_key: None,
            providers: BTreeMap::new(),
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
            tool_result_lines: 50,
            tool_protocol: None,
            max_identical_calls: 2,
            checkpoint_limit_mb: 200,
            tool_env_pass: Vec::new(),
            tool_env_exclude: Vec::new(),
            tool_schema_timeout_ms: 1000,
            tool_dirs: ToolDirs::default(),
            max_tool_result_share: 0.25,
            auto_compact_at: 0.85,
            mcp_servers: Vec::new(),
            hooks: Vec::new(),
            sandbox: crate::policy::sandbox::Settings::default(),
            approval: None,
            permissions: crate::policy::Rules::default(),
        }
    }
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
        validate::validated(file::layered(overrides, env)?)
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
        assert_eq!(cfg.base_url, None, "the provider preset decides");
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
        assert_eq!(cfg.model.as_deref(), Some("from-file"));
        assert_eq!(cfg.base_url.as_deref(), Some("http://env/v1"));
        assert!(cfg.base_url_from_env);
        assert_eq!(cfg.max_tool_turns, 7);
        let o = Overrides {
            model: Some("flag".into()),
            max_tool_turns: Some(3),
            ..Default::default()
        };
        let cfg = Config::load_with(&o, &env).unwrap();
        assert_eq!(cfg.model.as_deref(), Some("flag"));
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
        assert!(err.contains(&format!("{}:2: ", p.display())), "{err}");
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
        assert!(err.contains(":1: `max_tool_turns = \"many\"`"), "{err}");
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
        assert_eq!(
            cfg.provider.as_deref(),
            Some("ignored-by-flag"),
            "env wins over the file"
        );
        let s = &cfg.providers["azure"];
        assert_eq!(s.kind, Some(WireKind::OpenAiChat));
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
    fn a_mistyped_choice_names_the_file_line_and_valid_values() {
        let dir = tempfile::tempdir().unwrap();
        for (text, bad, valid) in [
            ("[providers.x]\nkind = \"soap\"\n", "soap", "openai-responses"),
            ("tool_protocol = \"txt\"\n", "txt", "`native`"),
            (
                "[providers.y]\ntext_protocol_continue = \"pre\"\n",
                "pre",
                "`prefill`",
            ),
        ] {
            let p = write(&dir, text);
            let o = Overrides {
                config_path: Some(p.clone()),
                ..Default::default()
            };
            let err = Config::load_with(&o, &env_of(&[])).unwrap_err().to_string();
            assert!(err.contains(&format!("{}:", p.display())), "{err}");
            assert!(err.contains(bad) && err.contains(valid), "{err}");
        }
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
