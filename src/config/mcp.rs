//! `[mcp_servers.NAME]` sections: the serde types as written, and their validation into a
//! `ServerSpec` per server. Errors name the file and the key. Reads no environment variable
//! and spawns nothing (the manager does); knows nothing of the rest of the config file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// `startup_timeout_secs` when not set.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// `tool_timeout_secs` when not set.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[mcp_servers.NAME]` section as written; every key optional, unknown keys rejected.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// stdio: the program to start.
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// stdio: a table of values, or a list of variable names passed through from ikigai's
    /// environment.
    pub env: Option<EnvSection>,
    /// stdio: the working directory (relative: to the folder ikigai runs in).
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP: the endpoint.
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    /// Streamable HTTP: the variable holding a bearer token.
    pub bearer_token_env: Option<String>,
    pub enabled: Option<bool>,
    pub startup_timeout_secs: Option<u64>,
    pub tool_timeout_secs: Option<u64>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
}

/// `env = { NAME = "value" }` or `env = ["NAME", …]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum EnvSection {
    Values(BTreeMap<String, String>),
    PassThrough(Vec<String>),
}

/// How ikigai reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set to these values.
        env: BTreeMap<String, String>,
        /// Passed through from ikigai's environment although they may look secret.
        pass: Vec<String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        bearer_token_env: Option<String>,
    },
}

impl Transport {
    /// `stdio` or `http`, for listings.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }

    /// The command line or the URL, for listings (no header or token value).
    pub fn target(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            Transport::Http { url, .. } => crate::redact::urls::scrub_urls(url).into_owned(),
        }
    }
}

/// A validated server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Only these tools are offered (when set).
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    /// The config file that declared it.
    pub file: PathBuf,
}

impl ServerSpec {
    /// Whether the tool named `tool` by the server is offered.
    pub fn offers(&self, tool: &str) -> bool {
        let enabled = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool));
        enabled && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// A section that cannot be used: which file, which key, why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: `{key}`: {message}")]
pub struct SectionError {
    pub file: PathBuf,
    /// The full key, e.g. `mcp_servers.github.url`.
    pub key: String,
    pub message: String,
}

/// True when `name` may name a server: letters, digits, `-` and `_`, without `__` (which
/// separates server and tool in tool names).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Validates the sections of one file, in name order.
pub fn validate(
    sections: &BTreeMap<String, ServerSection>,
    file: &Path,
) -> Result<Vec<ServerSpec>, SectionError> {
    sections
        .iter()
        .map(|(name, s)| validate_one(name, s, file))
        .collect()
}

fn validate_one(name: &str, s: &ServerSection, file: &Path) -> Result<ServerSpec, SectionError> {
    let err = |key: &str, message: String| SectionError {
        file: file.to_path_buf(),
        key: if key.is_empty() {
            format!("mcp_servers.{name}")
        } else {
            format!("mcp_servers.{name}.{key}")
        },
        message,
    };
    if !valid_server_name(name) {
        return Err(err(
            "",
            "a server name is letters, digits, `-` and `_`, without `__`".into(),
        ));
    }
    let stdio_keys = [
        ("args", s.args.is_some()),
        ("env", s.env.is_some()),
        ("cwd", s.cwd.is_some()),
    ];
    let http_keys = [
        ("headers", s.headers.is_some()),
        ("bearer_token_env", s.bearer_token_env.is_some()),
    ];
    let transport = match (&s.command, &s.url) {
        (Some(_), Some(_)) => {
            return Err(err(
                "url",
                "set either `command` (stdio) or `url` (HTTP), not both".into(),
            ));
        }
        (None, None) => {
            return Err(err(
                "",
                "needs `command` (a stdio server) or `url` (a Streamable HTTP server)".into(),
            ));
        }
        (Some(command), None) => {
            if let Some((key, _)) = http_keys.iter().find(|(_, set)| *set) {
                return Err(err(key, "only applies to an HTTP server (`url`)".into()));
            }
            if command.trim().is_empty() {
                return Err(err("command", "is empty".into()));
            }
            let (env, pass) = match &s.env {
                None => (BTreeMap::new(), Vec::new()),
                Some(EnvSection::Values(v)) => (v.clone(), Vec::new()),
                Some(EnvSection::PassThrough(names)) => (BTreeMap::new(), names.clone()),
            };
            for var in env.keys().chain(pass.iter()) {
                if var.is_empty() || var.contains('=') || var.contains('\0') {
                    return Err(err("env", format!("`{var}` is not a variable name")));
                }
            }
            Transport::Stdio {
                command: command.clone(),
                args: s.args.clone().unwrap_or_default(),
                env,
                pass,
                cwd: s.cwd.clone(),
            }
        }
        (None, Some(url)) => {
            if let Some((key, _)) = stdio_keys.iter().find(|(_, set)| *set) {
                return Err(err(key, "only applies to a stdio server (`command`)".into()));
            }
            let parsed = reqwest::Url::parse(url).map_err(|e| err("url", format!("{e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(err("url", "must start with http:// or https://".into()));
            }
            let headers = s.headers.clone().unwrap_or_default();
            for (k, v) in &headers {
                if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
                    return Err(err("headers", format!("`{k}` is not a valid header name")));
                }
                if http::HeaderValue::from_str(v).is_err() {
                    return Err(err(
                        "headers",
                        format!("the value of `{k}` is not a valid header value"),
                    ));
                }
            }
            if let Some(v) = &s.bearer_token_env
                && (v.is_empty() || v.contains('='))
            {
                return Err(err("bearer_token_env", format!("`{v}` is not a variable name")));
            }
            Transport::Http {
                url: url.clone(),
                headers,
                bearer_token_env: s.bearer_token_env.clone(),
            }
        }
    };
    let secs = |key: &str, v: Option<u64>, default: Duration| match v {
        None => Ok(default),
        Some(0) => Err(err(key, "must be at least 1".into())),
        Some(n) => Ok(Duration::from_secs(n)),
    };
    Ok(ServerSpec {
        name: name.to_string(),
        transport,
        enabled: s.enabled.unwrap_or(true),
        startup_timeout: secs(
            "startup_timeout_secs",
            s.startup_timeout_secs,
            DEFAULT_STARTUP_TIMEOUT,
        )?,
        tool_timeout: secs("tool_timeout_secs", s.tool_timeout_secs, DEFAULT_TOOL_TIMEOUT)?,
        enabled_tools: s.enabled_tools.clone(),
        disabled_tools: s.disabled_tools.clone().unwrap_or_default(),
        file: file.to_path_buf(),
    })
}

/// The values in these servers' sections that must never be shown or sent: bearer tokens
/// (read from their variables), and header and `env` values whose names look secret.
pub fn secrets(specs: &[ServerSpec], env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let secret_name = |n: &str| {
        let up = n.to_ascii_uppercase();
        // `Authorization`, `Proxy-Authorization`, `X-Auth-…`, `Cookie`, `X-Api-Key`…
        up.contains("AUTH") || up.contains("COOKIE") || super::SECRET_WORDS.iter().any(|w| up.contains(w))
    };
    let mut out = Vec::new();
    for s in specs {
        match &s.transport {
            Transport::Http {
                headers,
                bearer_token_env,
                ..
            } => {
                if let Some(t) = bearer_token_env.as_deref().and_then(env) {
                    out.push(t.trim().to_string());
                }
                for (k, v) in headers {
                    if secret_name(k) {
                        // `Bearer xyz`: the token alone too.
                        out.push(v.clone());
                        if let Some((_, tok)) = v.split_once(' ') {
                            out.push(tok.trim().to_string());
                        }
                    }
                }
            }
            Transport::Stdio {
                env: values, pass, ..
            } => {
                out.extend(
                    values
                        .iter()
                        .filter(|(k, _)| secret_name(k))
                        .map(|(_, v)| v.clone()),
                );
                out.extend(pass.iter().filter(|k| secret_name(k)).filter_map(|k| env(k)));
            }
        }
    }
    out.retain(|v| v.len() >= 4);
    out
}

/// The `[mcp_servers]` of a project's `.ikigai/config.toml` (only its `mcp_servers` table;
/// the rest of the file is not this module's). `Ok(empty)` when the file does not exist.
/// The caller reads it only in a trusted folder.
pub fn load_project(cwd: &Path) -> Result<Vec<ServerSpec>, SectionError> {
    let file = cwd.join(".ikigai/config.toml");
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(SectionError {
                file,
                key: "mcp_servers".into(),
                message: format!("cannot read the file: {e}"),
            });
        }
    };
    #[derive(Deserialize)]
    struct Project {
        #[serde(default)]
        mcp_servers: BTreeMap<String, ServerSection>,
    }
    let project: Project = toml::from_str(&text).map_err(|e| SectionError {
        file: file.clone(),
        key: "mcp_servers".into(),
        message: e.to_string().trim_end().to_string(),
    })?;
    validate(&project.mcp_servers, &file)
}

/// The user's servers with the project's laid over them (a project server of the same name
/// replaces the user's); in name order.
pub fn merge(user: &[ServerSpec], project: Vec<ServerSpec>) -> Vec<ServerSpec> {
    let mut all: BTreeMap<String, ServerSpec> = user.iter().map(|s| (s.name.clone(), s.clone())).collect();
    for s in project {
        all.insert(s.name.clone(), s);
    }
    all.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<ServerSpec>, SectionError> {
        #[derive(Deserialize)]
        struct F {
            mcp_servers: BTreeMap<String, ServerSection>,
        }
        let f: F = toml::from_str(text).unwrap();
        validate(&f.mcp_servers, Path::new("/cfg.toml"))
    }

    #[test]
    fn stdio_and_http_sections_are_read_with_defaults() {
        let specs = parse(
            r#"
[mcp_servers.files]
command = "npx"
args = ["-y", "server"]
env = { ROOT = "/tmp" }
cwd = "sub"
[mcp_servers.gh]
url = "https://api.example.com/mcp"
headers = { X-Team = "a" }
bearer_token_env = "GH_TOKEN"
tool_timeout_secs = 5
startup_timeout_secs = 3
enabled_tools = ["a", "b"]
disabled_tools = ["b"]
[mcp_servers.pass]
command = "x"
env = ["GITHUB_TOKEN"]
enabled = false
"#,
        )
        .unwrap();
        assert_eq!(specs.len(), 3);
        let files = &specs[0];
        assert_eq!(files.name, "files");
        assert_eq!(files.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(files.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert!(files.enabled);
        assert_eq!(files.transport.target(), "npx -y server");
        let Transport::Stdio { env, cwd, .. } = &files.transport else {
            panic!()
        };
        assert_eq!(env["ROOT"], "/tmp");
        assert_eq!(cwd.as_deref(), Some(Path::new("sub")));
        let gh = &specs[1];
        assert_eq!(gh.transport.kind(), "http");
        assert_eq!(gh.tool_timeout, Duration::from_secs(5));
        assert!(gh.offers("a") && !gh.offers("b") && !gh.offers("c"));
        let pass = &specs[2];
        assert!(!pass.enabled);
        let Transport::Stdio { pass, .. } = &pass.transport else {
            panic!()
        };
        assert_eq!(pass, &["GITHUB_TOKEN"]);
    }

    #[test]
    fn bad_sections_name_the_file_and_the_key() {
        for (text, key, says) in [
            ("[mcp_servers.a]\nargs = []\n", "mcp_servers.a", "needs `command`"),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
                "mcp_servers.a.url",
                "not both",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nheaders = { a = \"b\" }\n",
                "mcp_servers.a.headers",
                "HTTP server",
            ),
            (
                "[mcp_servers.a]\nurl = \"http://h\"\nargs = [\"x\"]\n",
                "mcp_servers.a.args",
                "stdio server",
            ),
            (
                "[mcp_servers.a]\nurl = \"ftp://h\"\n",
                "mcp_servers.a.url",
                "http://",
            ),
            (
                "[mcp_servers.a]\nurl = \"not a url\"\n",
                "mcp_servers.a.url",
                "relative URL",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_secs = 0\n",
                "mcp_servers.a.tool_timeout_secs",
                "at least 1",
            ),
            (
                "[mcp_servers.a__b]\ncommand = \"x\"\n",
                "mcp_servers.a__b",
                "without `__`",
            ),
            (
                "[mcp_servers.a]\nurl = \"http://h\"\nheaders = { \"bad name\" = \"v\" }\n",
                "mcp_servers.a.headers",
                "header name",
            ),
            (
                "[mcp_servers.a]\ncommand = \" \"\n",
                "mcp_servers.a.command",
                "empty",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.key, key, "{text}");
            assert!(e.message.contains(says), "{text}: {e}");
            assert!(e.to_string().starts_with("/cfg.toml: "), "{e}");
        }
    }

    #[test]
    fn header_values_that_carry_credentials_are_secrets_others_are_not() {
        let specs = parse(
            "[mcp_servers.w]\nurl = \"https://x/mcp\"\nbearer_token_env = \"PAT\"\n\
             headers = { Cookie = \"sid=c00kie\", Proxy-Authorization = \"Basic cHJveHk=\", \
             X-Auth-User = \"auth-user-1\", X-Api-Key = \"k-123\", X-Team = \"platform\" }\n",
        )
        .unwrap();
        let got = secrets(&specs, &|k| (k == "PAT").then(|| "pat-value".to_string()));
        for s in [
            "pat-value",
            "sid=c00kie",
            "Basic cHJveHk=",
            "auth-user-1",
            "k-123",
        ] {
            assert!(got.iter().any(|g| g == s), "{s} in {got:?}");
        }
        assert!(!got.iter().any(|g| g.contains("platform")), "{got:?}");
    }

    #[test]
    fn unknown_keys_are_rejected_by_serde() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct F {
            mcp_servers: BTreeMap<String, ServerSection>,
        }
        let e = toml::from_str::<F>("[mcp_servers.a]\ncommand = \"x\"\ncomand = \"y\"\n").unwrap_err();
        assert!(e.to_string().contains("comand"), "{e}");
    }

    #[test]
    fn project_servers_replace_user_servers_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load_project(dir.path()).unwrap().is_empty(), "no file: none");
        std::fs::create_dir_all(dir.path().join(".ikigai")).unwrap();
        std::fs::write(
            dir.path().join(".ikigai/config.toml"),
            "model = \"ignored here\"\n[mcp_servers.a]\ncommand = \"project\"\n",
        )
        .unwrap();
        let project = load_project(dir.path()).unwrap();
        let user = parse("[mcp_servers.a]\ncommand = \"user\"\n[mcp_servers.b]\ncommand = \"u\"\n").unwrap();
        let all = merge(&user, project);
        let targets: Vec<String> = all.iter().map(|s| s.transport.target()).collect();
        assert_eq!(targets, ["project", "u"]);
        std::fs::write(
            dir.path().join(".ikigai/config.toml"),
            "[mcp_servers.a]\nurl = 3\n",
        )
        .unwrap();
        let e = load_project(dir.path()).unwrap_err();
        assert!(
            e.file.ends_with(".ikigai/config.toml") && e.message.contains("url"),
            "{e}"
        );
    }
}
