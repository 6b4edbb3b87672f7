//! Slash commands the agent answers: /model, /new, /sessions, /resume, /compact. Front ends handle
//! the rest (/help, /exit, /tools, /config) themselves.

use serde_json::json;

use super::state::{AgentState, new_session_id};
use crate::message::Conversation;
use crate::protocol::{Event, NoticeLevel};

/// Handles one command line such as `/model gpt-5`.
pub async fn handle(st: &mut AgentState, line: &str) {
    let line = line.trim();
    let (cmd, arg) = match line.split_once(char::is_whitespace) {
        Some((c, a)) => (c, a.trim()),
        None => (line, ""),
    };
    match cmd {
        "/model" => model(st, arg),
        "/new" => new_session(st),
        "/sessions" => sessions(st).await,
        "/resume" => resume(st, arg).await,
        "/compact" => compact(st, Some(arg)).await,
        _ => st.notice(NoticeLevel::Error, format!("Unknown command: {cmd}")),
    }
}

fn model(st: &mut AgentState, name: &str) {
    if name.is_empty() {
        st.notice(NoticeLevel::Info, format!("model: {}", st.model));
        return;
    }
    st.model = name.to_string();
    let fresh = super::budget::Budget::from_config(&st.config, name);
    st.budget.set_window(fresh.window, fresh.source);
    st.budget.probed = false;
    st.marker("model", json!({"model": name}));
    st.emit(Event::ModelChanged {
        model: name.to_string(),
    });
    st.notice(NoticeLevel::Info, format!("model set to {name}"));
}

fn new_session(st: &mut AgentState) {
    let previous = std::mem::replace(&mut st.session_id, new_session_id());
    st.session_begun = false;
    st.conversation = Conversation::new();
    st.partial.clear();
    st.usage = (0, 0);
    st.budget.reset_sizes();
    st.budget.records = 0;
    if st.sessions.is_some() {
        st.marker("new", json!({"previous": previous}));
    }
    st.emit(Event::SessionStarted {
        id: Some(st.session_id.clone()),
        model: st.model.clone(),
        history: Vec::new(),
    });
}

async fn sessions(st: &mut AgentState) {
    let Some(store) = st.sessions.clone() else {
        st.notice(NoticeLevel::Warning, "sessions are not stored in this run");
        return;
    };
    match store.list().await {
        Ok(list) => {
            let home = std::env::var("HOME").ok();
            let table = crate::store::cli::format_sessions(&list, home.as_deref(), &chrono::Local);
            st.notice(NoticeLevel::Info, table.trim_end());
        }
        Err(e) => st.notice(NoticeLevel::Error, e.to_string()),
    }
}

async fn resume(st: &mut AgentState, prefix: &str) {
    if prefix.is_empty() {
        st.notice(NoticeLevel::Error, "usage: /resume ID (see /sessions)");
        return;
    }
    let Some(store) = st.sessions.clone() else {
        st.notice(NoticeLevel::Warning, "sessions are not stored in this run");
        return;
    };
    match super::resume::load(store.as_ref(), &super::Resume::Id(prefix.to_string()), &st.cwd).await {
        Ok(resumed) => super::resume::install(st, resumed),
        Err(e) => st.notice(NoticeLevel::Error, e.to_string()),
    }
}

/// `/compact [instructions]`: summarise the conversation now.
pub async fn compact(st: &mut AgentState, instructions: Option<&str>) {
    match super::compact::run(st, instructions).await {
        Ok(_) => {}
        Err(e) => st.notice(NoticeLevel::Warning, format!("/compact: {e}")),
    }
}
