//! Restoring a stored session into the agent: load its records, rebuild the exact
//! conversation, repair unanswered tool calls, and show it to the front end.

use std::path::Path;

use super::Resume;
use super::state::AgentState;
use crate::message::{Conversation, Message};
use crate::store::{Record, Sessions, StoreError, Target};

/// A stored session ready to continue.
#[derive(Clone, Debug)]
pub struct Resumed {
    pub id: String,
    pub conversation: Conversation,
    pub model: Option<String>,
    /// The provider the session used last (its last `/model` switch, else the one it
    /// began with); the agent switches to it when it is not the current one.
    pub provider: Option<String>,
    /// Error results added for tool calls that never finished; stored on install.
    pub repairs: Vec<Message>,
    pub usage: (u64, u64),
    pub spend: crate::spend::Spend,
    /// Set when the session asked for was held by another live process: `id` is a new
    /// session forked from this one.
    pub forked_from: Option<String>,
    /// How many records the session had when loaded (the next record's position).
    pub records: usize,
    /// Where its turns were interrupted (see `Restored::interrupted`).
    pub interrupted: Vec<usize>,
    /// What its turns changed that was not undone, for `/undo`.
    pub checkpoints: Vec<crate::checkpoints::Checkpoint>,
    /// When the session began (RFC 3339): the date its system prompt gives.
    pub began: String,
}

/// Loads the session `which` names, taking it for this process (or a fork of it, when
/// another process holds it: repairs then go to the fork, never to the held session).
pub async fn load(store: &dyn Sessions, which: &Resume, cwd: &Path) -> Result<Resumed, StoreError> {
    let cwd = cwd.display().to_string();
    let target = match which {
        Resume::Id(prefix) => Target::Id(prefix),
        Resume::LatestInCwd => Target::LatestIn(&cwd),
    };
    let claimed = store.claim(target).await?;
    let records = claimed.records;
    let began = claimed.info.created_at.clone();
    let restored = claimed.restored;
    Ok(Resumed {
        id: claimed.info.id,
        conversation: restored.conversation,
        provider: restored
            .provider
            .or(Some(claimed.info.provider))
            .filter(|p| !p.is_empty()),
        model: restored.model.or(Some(claimed.info.model)),
        repairs: restored.repairs,
        usage: restored.usage,
        spend: restored.spend,
        forked_from: claimed.forked_from,
        records,
        interrupted: restored.interrupted,
        checkpoints: super::undo::parse(restored.checkpoints),
        began,
    })
}

/// Makes `resumed` the current session and shows its history.
pub fn install(st: &mut AgentState, resumed: Resumed) {
    let records = i64::try_from(resumed.records).unwrap_or(i64::MAX);
    st.switch_session(resumed.id, true, records, resumed.conversation, resumed.usage);
    st.set_spend(resumed.spend);
    match (resumed.provider, resumed.model) {
        (Some(p), Some(m)) if p != st.provider().name() => {
            // The session continues on the provider it used last, when it can be set up.
            if let Err(e) = super::switch::switch_provider(st, &p, &m) {
                st.notice(
                    crate::protocol::NoticeLevel::Warning,
                    format!(
                        "the session used {p}/{m}, which cannot be used now ({e}); continuing with {}/{}",
                        st.provider().name(),
                        st.model()
                    ),
                );
                st.emit(crate::protocol::Event::ModelChanged {
                    model: st.model().to_string(),
                    provider: st.provider().name().to_string(),
                });
            }
        }
        (_, Some(m)) => {
            let window = st.provider().spec().context_window;
            st.set_model(m, window);
        }
        (_, None) => {}
    }
    let forked_from = resumed.forked_from;
    st.checkpoints.set_list(resumed.checkpoints);
    for m in resumed.repairs {
        st.record(Record::Message(m));
    }
    st.announce_conversation(resumed.interrupted);
    if let Some(from) = &forked_from {
        st.notice(
            crate::protocol::NoticeLevel::Info,
            format!(
                "session {from} is in use by another ikigai process; continuing in a new session \
                 {} forked from it (its history is a copy)",
                st.session_id()
            ),
        );
    }
}
