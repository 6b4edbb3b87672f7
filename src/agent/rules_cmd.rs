//! `/permissions`: the rules in force and this project's remembered answers, and
//! forgetting one. Answers with events; the decision logic lives in `permissions`.

use super::state::AgentState;
use crate::policy::rule::Source;
use crate::protocol::{Event, NoticeLevel};

/// Answers `Op::ListPermissions`.
pub fn list(st: &mut AgentState) {
    let rules = st
        .gate
        .policy
        .rules
        .all()
        .filter(|(_, r)| matches!(r.source, Source::User | Source::Project))
        .map(|(list, r)| format!("{} {} ({})", list.as_str(), r.text, r.source.as_str()))
        .collect();
    let session = st
        .gate
        .policy
        .rules
        .allow
        .iter()
        .filter(|r| r.source == Source::Session)
        .map(|r| r.text.clone())
        .collect();
    let remembered = match &st.gate.remembered {
        Some(store) => match store.list() {
            Ok(l) => l,
            Err(e) => {
                st.notice(NoticeLevel::Warning, e.to_string());
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    st.emit(Event::Permissions {
        mode: st.gate.mode.get(),
        rules,
        remembered,
        session,
    });
}

/// Answers `Op::ForgetPermission`: removes a remembered answer (by number or text) from
/// the store and from the rules in force.
pub fn forget(st: &mut AgentState, which: &str) {
    let Some(store) = st.gate.remembered.clone() else {
        st.notice(NoticeLevel::Warning, "no remembered answers: no data folder");
        return;
    };
    match store.remove(which) {
        Ok(Some(text)) => {
            st.gate
                .policy
                .rules
                .allow
                .retain(|r| !(r.source == Source::Remembered && r.text == text));
            st.notice(NoticeLevel::Info, format!("forgot: allow {text}"));
        }
        Ok(None) => st.notice(
            NoticeLevel::Warning,
            format!("no remembered answer `{which}`; /permissions lists them with their numbers"),
        ),
        Err(e) => st.notice(NoticeLevel::Error, e.to_string()),
    }
}
