//! `ikigai acp`: sets up one agent for the folder ikigai was started in, as the scripted
//! run does, and hands it to the ACP front end (`ui::acp`). Nothing here prints: what the
//! user should know (an untrusted folder's settings left unused, a missing key) goes to
//! the front end as notices, and from there to the editor as a message.

use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;

use super::{AppError, close_mcp, settings_changed, start_mcp, untrusted_settings};
use crate::agent::AgentSetup;
use crate::config::Config;
use crate::protocol::{Event, NoticeLevel};
use crate::provider::Resolved;
use crate::store::Sessions;
use crate::tools::Registry;

/// Runs the ACP front end until the editor closes stdin. Exit code 0 then.
pub(super) async fn run(mut config: Config, resolved: Resolved) -> Result<u8, AppError> {
    let cwd = std::env::current_dir()?;
    let Resolved { spec, key_vars } = resolved;
    let discovery = crate::tools::discovery::DiscoverySpec::from_config(&config, &cwd, key_vars.clone());
    let (events_tx, events_rx) = unbounded_channel();
    use crate::permissions::trust::State;
    // The folder whose `.ikigai/` applies here (the repository's root, run from a
    // subfolder), under its trust, as in any run.
    let root = crate::paths::settings_root(&cwd, &|k| crate::environ::var(k));
    let trust = crate::permissions::trust::state(&root);
    match trust {
        State::Trusted => {}
        State::Changed => {
            let _ = events_tx.send(Event::notice(NoticeLevel::Warning, settings_changed(&root)));
        }
        _ => {
            // Nobody is asked here: the editor is told once why the folder's own
            // settings and tools are left out.
            let mut what = untrusted_settings(&root);
            what.extend(
                discovery
                    .untrusted_tools()
                    .iter()
                    .map(|p| format!("project tool {}", p.display())),
            );
            if !what.is_empty() {
                let text = format!(
                    "{} is not a trusted folder, so its own ikigai settings are not used ({}). \
                     Run `ikigai trust` in it to use them.",
                    root.display(),
                    what.join("; ")
                );
                let _ = events_tx.send(Event::notice(NoticeLevel::Warning, text));
            }
        }
    }
    // Somebody is there to answer (the editor asks its user), as in the TUI.
    if config.approval.is_none() {
        config.approval = Some(crate::policy::Mode::Ask);
    }
    let provider = crate::provider::build(spec.clone())?;
    for line in provider.setup_hint() {
        let _ = events_tx.send(Event::notice(NoticeLevel::Warning, line));
    }
    let sessions: Arc<dyn Sessions> = crate::store::open(&config, events_tx.clone());
    let registry = Registry::builtin();
    registry.start_discovery(discovery);
    let mcp = start_mcp(&config, &key_vars, &cwd, &registry, &events_tx);
    if let Some(mut notices) = provider.notices() {
        let tx = events_tx.clone();
        tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some((level, text)) = notices.next().await {
                let _ = tx.send(Event::notice(level, text));
            }
        });
    }
    let today = crate::agent::prompt::today();
    let skills = super::skills::load(&root, trust == State::Trusted, &registry, &events_tx);
    let agent_types = super::skills::agent_types(&root, trust == State::Trusted, &events_tx);
    let shared = super::skills::offer_task(agent_types, &config, &provider, &cwd, &registry);
    let super::Prompt {
        text: system_prompt,
        environment,
        instructions,
    } = super::system_prompt(&config, &cwd, &today, &skills, &events_tx);
    let mode = config.approval.unwrap_or(crate::policy::Mode::Ask);
    let setup = AgentSetup {
        config,
        provider,
        registry,
        sessions: Some(sessions.clone()),
        cwd: cwd.clone(),
        system_prompt,
        environment,
        instructions,
        skills,
        mode: Some(shared),
        resumed: None,
        // An editor's session has turns after turns: the tree is followed between them.
        follow_tree: true,
    };
    let agent = crate::agent::spawn(setup, events_tx);
    let ctx = crate::ui::acp::AcpContext {
        cwd,
        sessions: Some(sessions),
        mode,
    };
    let result = crate::ui::acp::run(agent, events_rx, ctx).await;
    close_mcp(mcp).await;
    Ok(result?)
}
