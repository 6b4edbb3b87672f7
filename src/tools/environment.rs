//! The environment a tool process gets: the parent's, minus provider keys (always) and
//! secret-looking variables (unless passed by name). Decides names only; never reads or
//! prints a value, and never spawns anything (process.rs does).

use std::ffi::{OsStr, OsString};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::config::{Config, SECRET_WORDS};

/// Removed by default like a secret (it may carry a database password).
pub(crate) const DATABASE_URL_VAR: &str = "IKIGAI_DATABASE_URL";

/// Which variables of ikigai's environment reach a tool process.
#[derive(Clone, Debug)]
pub struct EnvPolicy {
    /// Never passed, whatever `pass` says: provider key variables (which ones is the
    /// provider's business; the caller hands them over).
    always_removed: Vec<String>,
    /// Passed although the default rules or `exclude` would remove them.
    pass: Vec<String>,
    /// Extra patterns from `tool_env_exclude`.
    exclude: GlobSet,
    /// Variables the config names as holding a secret, whatever they are called (an MCP
    /// server's `bearer_token_env`): removed unless passed, like a secret-looking name.
    named: Vec<String>,
}

impl Default for EnvPolicy {
    /// The default rules alone (every vendor's key variable has a secret word in its
    /// name, so none gets through unless passed).
    fn default() -> Self {
        EnvPolicy {
            always_removed: Vec::new(),
            pass: Vec::new(),
            exclude: GlobSet::empty(),
            named: Vec::new(),
        }
    }
}

impl EnvPolicy {
    /// The policy of a loaded config, keeping `key_vars` (the provider key variables,
    /// `provider::key_vars`) from every tool. Patterns were validated when the config was
    /// loaded; one that still fails to build removes every variable rather than none.
    pub fn from_config(config: &Config, key_vars: Vec<String>) -> Self {
        let mut policy = Self::new(key_vars, config.tool_env_pass.clone(), &config.tool_env_exclude);
        policy.named = config
            .mcp_servers
            .iter()
            .filter_map(|s| match &s.transport {
                crate::config::mcp::Transport::Http { bearer_token_env, .. } => bearer_token_env.clone(),
                crate::config::mcp::Transport::Stdio { .. } => None,
            })
            .collect();
        policy
    }

    pub fn new(always_removed: Vec<String>, pass: Vec<String>, exclude: &[String]) -> Self {
        let mut set = GlobSetBuilder::new();
        for pattern in exclude {
            let glob = GlobBuilder::new(pattern)
                .case_insensitive(true)
                .build()
                .or_else(|_| GlobBuilder::new("*").build());
            if let Ok(g) = glob {
                set.add(g);
            }
        }
        EnvPolicy {
            always_removed,
            pass,
            exclude: set.build().unwrap_or_else(|_| GlobSet::empty()),
            named: Vec::new(),
        }
    }

    /// True when a variable of this name may reach a tool process.
    pub fn allows(&self, name: &OsStr) -> bool {
        let name = name.to_string_lossy();
        if name == super::process::CALL_MARKER || name == crate::environ::HANDOVER_VAR {
            return false;
        }
        if self.always_removed.iter().any(|v| *v == name) {
            return false;
        }
        if self.pass.iter().any(|v| *v == name) {
            return true;
        }
        !self.is_secret(&name)
    }

    /// True when a variable of this name holds a secret, whether or not it is passed to
    /// tools: a provider key, a secret-looking name, an excluded pattern, the database
    /// URL, a variable the config names as a token. ikigai keeps these out of its own
    /// environment block (see `environ`).
    pub fn is_secret(&self, name: &str) -> bool {
        self.always_removed.iter().any(|v| v == name)
            || self.named.iter().any(|v| v == name)
            || looks_secret(name)
            || self.exclude.is_match(name)
    }

    /// True for a provider key variable, which no tool or server ever gets.
    pub fn is_provider_key(&self, name: &str) -> bool {
        self.always_removed.iter().any(|v| v == name)
    }

    /// The variables of `vars` that may reach a tool process.
    pub fn filter(&self, vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(k, _)| self.allows(k)).collect()
    }

    /// The filtered environment of this process (the secrets held outside its environment
    /// block included, so a passed one still reaches tools).
    pub fn current(&self) -> Vec<(OsString, OsString)> {
        self.filter(crate::environ::vars_os())
    }
}

/// The default rule: names containing a secret word, and the database URL.
fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == DATABASE_URL_VAR || SECRET_WORDS.iter().any(|w| upper.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &EnvPolicy, vars: &[&str]) -> Vec<String> {
        p.filter(vars.iter().map(|v| (OsString::from(v), OsString::from("x"))))
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn default_rules_remove_keys_and_secret_looking_names_in_any_case() {
        let p = EnvPolicy::default();
        let kept = names(
            &p,
            &[
                "PATH",
                "HOME",
                "OPENAI_API_KEY",
                "MISTRAL_API_KEY",
                "my_api_key",
                "GITHUB_TOKEN",
                "Db_Password",
                "AWS_SECRET_ACCESS_KEY",
                "IKIGAI_DATABASE_URL",
                "MONKEY_BUSINESS",
                "LANG",
                "IKIGAI_TOOL_CALL",
                "IKIGAI_HANDOVER_FD",
            ],
        );
        assert_eq!(kept, ["PATH", "HOME", "LANG"]);
        assert!(p.is_secret("GITHUB_TOKEN") && p.is_secret("OPENAI_API_KEY"));
        assert!(
            !p.is_secret("IKIGAI_TOOL_CALL") && !p.is_secret("IKIGAI_HANDOVER_FD") && !p.is_secret("PATH")
        );
    }

    #[test]
    fn pass_lets_named_variables_through_but_never_a_provider_key() {
        let cfg = Config {
            api_key_env: Some("MY_VENDOR_CRED".into()),
            tool_env_pass: vec![
                "GITHUB_TOKEN".into(),
                "OPENAI_API_KEY".into(),
                "MY_VENDOR_CRED".into(),
                "IKIGAI_DATABASE_URL".into(),
            ],
            tool_env_exclude: vec!["aws_*".into(), "*_CREDENTIALS".into()],
            ..Config::default()
        };
        // What `provider::key_vars` gives for this config, in part.
        let keys = vec!["MY_VENDOR_CRED".to_string(), "OPENAI_API_KEY".to_string()];
        let p = EnvPolicy::from_config(&cfg, keys);
        let kept = names(
            &p,
            &[
                "GITHUB_TOKEN",
                "OPENAI_API_KEY",
                "MY_VENDOR_CRED",
                "IKIGAI_DATABASE_URL",
                "AWS_REGION",
                "GCP_CREDENTIALS",
                "PATH",
            ],
        );
        assert_eq!(kept, ["GITHUB_TOKEN", "IKIGAI_DATABASE_URL", "PATH"]);
        // Passed or not, they are secrets ikigai keeps out of its own environment block.
        for v in ["GITHUB_TOKEN", "MY_VENDOR_CRED", "GCP_CREDENTIALS", "aws_region"] {
            assert!(p.is_secret(v), "{v}");
        }
    }
}
