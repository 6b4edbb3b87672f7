//! `ikigai permissions check CALL` (the decision for one call and what made it) and
//! `ikigai permissions list` (the rules in force here, the remembered answers). Prints;
//! the decision itself is `permissions::Policy`'s.

use std::io::Write;
use std::path::Path;

use crate::config::Config;
use crate::permissions::remembered::Remembered;
use crate::permissions::{Mode, Policy, Verdict};

#[derive(Debug, thiserror::Error)]
pub enum PermissionsCmdError {
    /// The call is not written `TOOL(…)`.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Runs the subcommand; the exit code is 0 (the answer is printed, not signalled).
pub fn run(
    action: &crate::cli::PermissionsAction,
    config: &Config,
    cwd: &Path,
) -> Result<u8, PermissionsCmdError> {
    let mut rules = config.permissions.clone();
    let remembered = Remembered::default_location(cwd).ok();
    let mut notes = Vec::new();
    let kept = match &remembered {
        Some(store) => store.list().unwrap_or_else(|e| {
            notes.push(format!("remembered answers not used: {e}"));
            Vec::new()
        }),
        None => Vec::new(),
    };
    if let Some(store) = &remembered {
        rules.allow.extend(store.rules().unwrap_or_default());
    }
    let mode = config.approval.unwrap_or(Mode::Ask);
    let mode_note = if config.approval.is_some() {
        format!("mode {mode}")
    } else {
        "mode ask (the TUI's default; scripted runs default to auto)".to_string()
    };
    let policy = Policy::new(rules, cwd);
    for n in notes {
        eprintln!("ikigai: warning: {}", crate::text::visible(&n));
    }
    // Built whole, then shown: the folder, the rules and the remembered answers are text
    // from files, made visible (`crate::text::visible`) before they reach the terminal.
    let mut out = String::new();
    write_action(&mut out, action, &policy, mode, &mode_note, &kept)?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(crate::text::visible(&out).as_bytes())?;
    stdout.flush()?;
    Ok(0)
}

/// The subcommand's text.
fn write_action(
    out: &mut String,
    action: &crate::cli::PermissionsAction,
    policy: &Policy,
    mode: Mode,
    mode_note: &str,
    kept: &[String],
) -> Result<(), PermissionsCmdError> {
    use std::fmt::Write as _;
    let fmt = |e: std::fmt::Error| PermissionsCmdError::Io(std::io::Error::other(e));
    match action {
        crate::cli::PermissionsAction::Check { call } => {
            let (name, arguments) = parse_call(call)?;
            let d = policy.decide(mode, &name, &arguments);
            let verdict = match d.verdict {
                Verdict::Allow => "allow",
                Verdict::Ask => "ask",
                Verdict::Deny => "deny",
            };
            writeln!(out, "{verdict}").map_err(fmt)?;
            writeln!(out, "  by: {}", d.by.describe(mode)).map_err(fmt)?;
            if !d.reason.is_empty() {
                writeln!(out, "  why: {}", d.reason).map_err(fmt)?;
            }
            writeln!(out, "  in: {mode_note}").map_err(fmt)?;
        }
        crate::cli::PermissionsAction::List => {
            writeln!(out, "{mode_note}").map_err(fmt)?;
            let mut any = false;
            for (list, r) in policy.rules.all() {
                if r.source == crate::policy::rule::Source::Remembered {
                    continue;
                }
                any = true;
                writeln!(out, "{} {} ({})", list.as_str(), r.text, r.source.as_str()).map_err(fmt)?;
            }
            if !any {
                writeln!(out, "no rules in the config ([permissions] allow / ask / deny)").map_err(fmt)?;
            }
            if kept.is_empty() {
                writeln!(out, "no remembered answers for {}", policy.root().display()).map_err(fmt)?;
            } else {
                writeln!(out, "remembered answers for {}:", policy.root().display()).map_err(fmt)?;
                for (i, r) in kept.iter().enumerate() {
                    writeln!(out, "  {}. allow {r}", i + 1).map_err(fmt)?;
                }
            }
        }
    }
    Ok(())
}

/// What `/permissions` shows: the mode, the config rules, this project's remembered
/// answers numbered for `/permissions rm N`, and this session's.
pub fn format_list(mode: Mode, rules: &[String], remembered: &[String], session: &[String]) -> String {
    let mut out = format!("Approval mode: {mode} (Shift+Tab changes it)\n");
    if rules.is_empty() {
        out.push_str("No rules in the config ([permissions] allow / ask / deny).\n");
    } else {
        out.push_str("Rules:\n");
        for r in rules {
            out.push_str(&format!("  {r}\n"));
        }
    }
    if remembered.is_empty() {
        out.push_str("No remembered answers for this project.\n");
    } else {
        out.push_str("Remembered for this project (/permissions rm N forgets one):\n");
        for (i, r) in remembered.iter().enumerate() {
            out.push_str(&format!("  {}. allow {r}\n", i + 1));
        }
    }
    if !session.is_empty() {
        out.push_str("For this session:\n");
        for r in session {
            out.push_str(&format!("  allow {r}\n"));
        }
    }
    out
}

/// `bash(rm -rf build)` → (`bash`, `{"command":"rm -rf build"}`); `file_edit(src/a.rs)` →
/// a `path`; `web_fetch(https://…)` a `url`; any other tool's parentheses hold its
/// arguments JSON.
pub fn parse_call(call: &str) -> Result<(String, String), PermissionsCmdError> {
    let usage = |why: &str| {
        PermissionsCmdError::Usage(format!(
            "{why}: write the call as TOOL(…), e.g. 'bash(rm -rf build)', 'file_edit(src/main.rs)' or 'NAME({{\"key\":\"value\"}})'"
        ))
    };
    let call = call.trim();
    let (name, inner) = match call.find('(') {
        Some(open) => {
            let inner = call[open + 1..]
                .strip_suffix(')')
                .ok_or_else(|| usage("no `)` at the end"))?;
            (call[..open].trim(), Some(inner))
        }
        None => (call, None),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(usage(&format!("`{name}` is not a tool name")));
    }
    // The argument the tool declares for a command line, a path or a URL takes the text.
    let declared = crate::tool_vocab::meta::of(name);
    let one = |arg: &str, value: &str| serde_json::json!({ arg: value });
    let args = match inner {
        _ if let Some(arg) = declared.and_then(|m| m.command) => one(arg, inner.unwrap_or_default()),
        _ if let Some(arg) = declared.and_then(|m| m.path) => one(arg, inner.unwrap_or(".")),
        Some(url)
            if let Some(arg) = declared.and_then(|m| m.url)
                && !url.trim_start().starts_with('{') =>
        {
            one(arg, url)
        }
        None => serde_json::json!({}),
        Some(json) => {
            serde_json::from_str(json).map_err(|e| usage(&format!("the arguments are not JSON ({e})")))?
        }
    };
    Ok((name.to_string(), args.to_string()))
}
