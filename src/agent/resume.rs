//! Restoring a stored session into the agent: load its records, rebuild the exact
//! conversation, repair unanswered tool calls, and show it to the front end.

use std::path::Path;

use super::Resume;
use super::state::AgentState;
use crate::message::{Conversation, Message};
use crate::protocol::Event;
use crate::store::{Record, SessionInfo, Sessions, StoreError};

/// A stored session ready to continue.
#[derive(Clone, Debug)]
pub struct Resumed {
    pub id: String,
    pub conversation: Conversation,
    pub model: Option<String>,
    /// Error results added for tool calls that never finished; stored on install.
    pub repairs: Vec<Message>,
    pub usage: (u64, u64),
    /// How many records the session had when loaded (the next record's position).
    pub records: usize,
}

/// Loads the session `which` names.
pub async fn load(store: &dyn Sessions, which: &Resume, cwd: &Path) -> Result<Resumed, StoreError> {
    let (info, records): (SessionInfo, Vec<Record>) = match which {
        Resume::Id(prefix) => store.load(prefix).await?,
        Resume::LatestInCwd => {
            let cwd = cwd.display().to_string();
            let Some(info) = store.latest_in(&cwd).await? else {
                return Err(StoreError::NotFound(format!("any session in {cwd}")));
            };
            store.load(&info.id).await?
        }
    };
    let count = records.len();
    let restored = crate::store::restore::rebuild_owned(records);
    Ok(Resumed {
        id: info.id,
        conversation: restored.conversation,
        model: restored.model.or(Some(info.model)),
        repairs: restored.repairs,
        usage: restored.usage,
        records: count,
    })
}

/// Makes `resumed` the current session and shows its history.
pub fn install(st: &mut AgentState, resumed: Resumed) {
    st.session_id = resumed.id;
    st.session_begun = true;
    st.conversation = resumed.conversation;
    st.partial.clear();
    st.usage = resumed.usage;
    st.budget.reset_sizes();
    st.budget.records = i64::try_from(resumed.records).unwrap_or(i64::MAX);
    if let Some(m) = resumed.model {
        st.model = m;
    }
    for m in resumed.repairs {
        st.record(Record::Message(m));
    }
    st.emit(Event::SessionStarted {
        id: Some(st.session_id.clone()),
        model: st.model.clone(),
        history: st.conversation.messages.clone(),
    });
}
