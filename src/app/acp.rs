//! `ikigai acp`: sets up one agent for the folder ikigai was started in, as every run does
//! (`setup::start_agent`), and hands it to the ACP front end (`ui::acp`). Nothing here
//! prints: what the user should know (an untrusted folder's settings left unused, a
//! missing key) goes to the front end as notices, and from there to the editor as a
//! message.

use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;

use super::folder::Folder;
use super::setup::{self, Running};
use super::{AppError, close_mcp};
use crate::config::Config;
use crate::protocol::{Event, NoticeLevel};
use crate::provider::Resolved;
use crate::store::Sessions;

/// Runs the ACP front end until the editor closes stdin. Exit code 0 then.
pub(super) async fn run(mut config: Config, resolved: Resolved) -> Result<u8, AppError> {
    let cwd = std::env::current_dir()?;
    let Resolved { spec, key_vars } = resolved;
    let discovery = crate::tools::discovery::DiscoverySpec::from_config(&config, &cwd, key_vars.clone());
    let (events_tx, events_rx) = unbounded_channel();
    // Nobody is asked here: the editor is told once why the folder's own settings and
    // tools are left out.
    Folder::at(&cwd).tell(&discovery, &events_tx);
    // Somebody is there to answer (the editor asks its user), as in the TUI.
    if config.approval.is_none() {
        config.approval = Some(crate::policy::Mode::Ask);
    }
    let missing_key = spec.missing_key().then(|| crate::ui::acp::MissingKey {
        provider: spec.name.clone(),
        var: spec.api_key_env.clone(),
    });
    let provider = crate::provider::build(spec.clone())?;
    for line in provider.setup_hint() {
        let _ = events_tx.send(Event::notice(NoticeLevel::Warning, line));
    }
    let sessions: Arc<dyn Sessions> = crate::store::open(&config, events_tx.clone());
    let mode = config.approval.unwrap_or(crate::policy::Mode::Ask);
    let wiring = setup::Wiring {
        config,
        provider,
        key_vars,
        cwd: cwd.clone(),
        discovery,
        sessions: sessions.clone(),
        resumed: None,
        date: crate::agent::prompt::today(),
        // An editor's session has turns after turns: the tree is followed between them.
        follow_tree: true,
        start_mcp: true,
    };
    let Running { agent, mcp, .. } = setup::start_agent(wiring, events_tx);
    let ctx = crate::ui::acp::AcpContext {
        cwd,
        sessions: Some(sessions),
        mode,
        missing_key,
    };
    let result = crate::ui::acp::run(agent, events_rx, ctx).await;
    close_mcp(mcp).await;
    Ok(result?)
}
