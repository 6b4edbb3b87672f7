//! Slash commands the agent answers: /model, /new, /sessions, /resume. Front ends handle
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
        "/refresh" => refresh_tools(st).await,
        "/tools" => list_tools(st),
        _ => st.notice(NoticeLevel::Error, format!("Unknown command: {cmd}")),
    }
}

/// Rescans the tool folders; the new set goes with the next request.
pub async fn refresh_tools(st: &mut AgentState) {
    let n = st.registry.refresh().await;
    for text in st.registry.take_notices() {
        st.notice(NoticeLevel::Warning, text);
    }
    st.notice(
        NoticeLevel::Info,
        format!("Tools refreshed. {n} tools available."),
    );
}

/// Every tool with its origin, and the files skipped (for front ends without their own).
fn list_tools(st: &mut AgentState) {
    let mut lines = Vec::new();
    for tool in st.registry.tools() {
        let from = match tool.source() {
            crate::tools::ToolSource::Builtin => "built-in".to_string(),
            crate::tools::ToolSource::External(p) => p.display().to_string(),
        };
        lines.push(format!("{}  [{from}]", tool.schema().name));
    }
    for s in st.registry.skipped() {
        lines.push(format!("skipped {}: {}", s.path.display(), s.reason));
    }
    st.notice(NoticeLevel::Info, lines.join("\n"));
}

fn model(st: &mut AgentState, name: &str) {
    if name.is_empty() {
        st.notice(NoticeLevel::Info, format!("model: {}", st.model));
        return;
    }
    st.model = name.to_string();
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
