//! `ikigai mcp serve --tools`: ikigai's built-in tools (`glob`, `grep`, `file_read`,
//! `list_dir`, `file_write`, `file_edit`, `bash`, `web_fetch`) offered to the client, so
//! another agent can use ikigai's tool runner. Each call is decided by the permission
//! engine as a model's call would be (the server's approval mode; the user's rules, a
//! trusted folder's and the remembered answers; deny rules first), runs in the server's
//! folder under the installed sandbox, and its file tools act on the place the decision
//! judged. What would ask is asked of the client's user when the server can elicit (the
//! approver, `--mode ask`), else refused, with why, nobody being there to answer.
//! Uses the permission engine and the tool registry directly (lower floors); no agent.

use std::path::Path;

use crate::config::Config;
use crate::permissions::{Policy, Verdict};
use crate::policy::Mode;
use crate::tool_vocab::ToolSchema;
use crate::tools::{Registry, ToolContext};

/// Tools that make sense only inside ikigai's own turn.
const NOT_OFFERED: &[&str] = &["update_plan"];

/// The built-in tools and what a call of one is decided and run with.
pub(super) struct Builtins {
    registry: Registry,
    policy: Policy,
    mode: Mode,
    ctx: ToolContext,
}

/// What a call answered: the envelope the model would get, and whether it succeeded.
pub(super) struct Answer {
    pub text: String,
    pub success: bool,
}

impl Builtins {
    /// The tools for `cwd` under `config`'s rules (with the remembered answers of `cwd`)
    /// and approval mode `mode`.
    pub(super) fn new(config: &Config, cwd: &Path, mode: Mode) -> (Self, Vec<String>) {
        let mut notices = Vec::new();
        let mut rules = config.permissions.clone();
        match crate::permissions::remembered::Remembered::default_location(cwd).map(|r| r.rules()) {
            Ok(Ok(r)) => rules.allow.extend(r),
            Ok(Err(e)) | Err(e) => notices.push(format!("remembered answers not used: {e}")),
        }
        let policy = Policy::new(rules, cwd);
        let ctx = ToolContext::from_config(cwd.to_path_buf(), config, crate::provider::key_vars(config))
            .with_sandbox(crate::permissions::sandbox_in_force::sandbox())
            .with_unreadable(crate::permissions::unreadable::Unreadable::of(&policy));
        let b = Builtins {
            registry: Registry::builtin(),
            policy,
            mode,
            ctx,
        };
        (b, notices)
    }

    /// The schemas offered.
    pub(super) fn schemas(&self) -> Vec<ToolSchema> {
        self.registry
            .schemas()
            .into_iter()
            .filter(|s| !NOT_OFFERED.contains(&s.name.as_str()))
            .collect()
    }

    /// Whether `name` is one of the tools offered.
    pub(super) fn offers(&self, name: &str) -> bool {
        !NOT_OFFERED.contains(&name) && self.registry.get(name).is_some()
    }

    /// Decides and (when allowed, or asked and approved by `approve`) runs one call.
    pub(super) async fn call(&self, name: &str, arguments: &str, approve: Option<super::Approver>) -> Answer {
        let d = self.policy.decide(self.mode, name, arguments);
        let refused = match d.verdict {
            Verdict::Allow => None,
            Verdict::Deny => Some(match &d.by {
                crate::permissions::By::Rule { list, rule, .. } => {
                    format!("the {} rule `{rule}` forbids it ({})", list.as_str(), d.reason)
                }
                _ => format!("{} (approval mode {})", d.reason, self.mode),
            }),
            Verdict::Ask => match approve {
                Some(ask) => {
                    let yes = ask(super::turn::asking(name, arguments, &d.reason, false)).await;
                    (!yes).then(|| format!("the user did not approve it ({})", d.reason))
                }
                None => Some(format!(
                    "it would need the user's approval ({}), and nobody answers questions for \
                     `ikigai mcp serve` (approval mode {}); the user may allow it with a rule or \
                     start the server with another --mode",
                    d.reason, self.mode
                )),
            },
        };
        if let Some(why) = refused {
            let text = serde_json::json!({
                "tool_success": false,
                "error": format!("Not run: {why}."),
                "error_code": "NOT_APPROVED",
            });
            return Answer {
                text: text.to_string(),
                success: false,
            };
        }
        let mut ctx = self.ctx.clone();
        ctx.pinned = d.pinned;
        let done = self.registry.execute(name, arguments, &ctx).await;
        Answer {
            text: done.envelope.to_value().to_string(),
            success: done.success,
        }
    }
}
