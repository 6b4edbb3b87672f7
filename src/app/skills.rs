//! The session's skills, loaded once at start for every run (the TUI, scripted runs, the
//! ACP session): the user's, and the project's when its folder is trusted. What was
//! skipped goes to the front end as notices; the registry offers the `skill` tool when
//! there are any. Decides nothing about trust itself: the caller read it.

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
