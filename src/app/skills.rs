//! The session's skills and sub-agent types, loaded once at start for every run (the
//! TUI, scripted runs, the ACP session): the user's, and the project's when its folder is
//! trusted. What was skipped goes to the front end as notices; the registry offers the
//! `skill` tool when there are skills and `task` when there are agent types.
//! Decides nothing about trust itself: the caller read it.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::protocol::{Event, NoticeLevel};
use crate::skills::Skills;
use crate::tools::Registry;

/// Loads the skills for the project folder `root` (`paths::settings_root`), trusted or
/// not, and offers the `skill` tool on `registry` when there are any.
pub(super) fn load(
    root: &Path,
    trusted: bool,
    registry: &Registry,
    events_tx: &UnboundedSender<Event>,
) -> Arc<Skills> {
    let (skills, notices) = Skills::load(crate::skills::user_dir().as_deref(), root, trusted);
    for text in notices {
        let _ = events_tx.send(Event::notice(NoticeLevel::Warning, text));
    }
    let skills = Arc::new(skills);
    registry.offer_skills(skills.clone());
    skills
}

/// Loads the sub-agent types for the project folder `root`, trusted or not.
pub(super) fn agent_types(
    root: &Path,
    trusted: bool,
    events_tx: &UnboundedSender<Event>,
) -> Arc<crate::agent_types::AgentTypes> {
    let user = crate::agent_types::user_dir();
    let (types, notices) = crate::agent_types::AgentTypes::load(user.as_deref(), root, trusted);
    for text in notices {
        let _ = events_tx.send(Event::notice(NoticeLevel::Warning, text));
    }
    Arc::new(types)
}

/// Offers the `task` tool on `registry` when there are agent types, and returns the
/// approval mode the agent must share with it (the sub-agents run in it as it is then).
pub(super) fn offer_task(
    types: Arc<crate::agent_types::AgentTypes>,
    config: &crate::config::Config,
    provider: &Arc<dyn crate::provider::Provider>,
    cwd: &Path,
    registry: &Registry,
    sessions: &Arc<dyn crate::store::Sessions>,
) -> crate::policy::mode::SharedMode {
    let mode = crate::policy::mode::SharedMode::new(config.approval.unwrap_or(crate::policy::Mode::Auto));
    if !types.is_empty() {
        let task = crate::agent::task::Task::new(
            config.clone(),
            provider.clone(),
            cwd.to_path_buf(),
            mode.clone(),
            registry.clone(),
            types,
            Some(sessions.clone()),
        );
        registry.register(Arc::new(task));
    }
    mode
}
