//! The typed commands the agent answers between turns: `SetModel`, `NewSession`,
//! `ListSessions`, `ListModels`, `Resume`, `RefreshTools`, `Compact`. Answers are
//! structured events (`ModelChanged`, `Providers`, `SessionStarted`, `Sessions`,
//! `Compacted`) or notices; front ends render them and answer /help, /tools, /config
//! themselves.

use serde_json::json;

use super::state::{AgentState, new_session_id};
use crate::message::Conversation;
use crate::protocol::{Event, NoticeLevel, Op};
use crate::store::MarkerKind;

/// The slash command an op stands for (for messages about it).
pub(crate) fn name(op: &Op) -> &'static str {
    match op {
        Op::Submit(_) => "a message",
        Op::Cancel => "cancel",
        Op::SetModel(_) | Op::ListModels => "/model",
        Op::NewSession => "/new",
        Op::Resume(_) => "/resume",
        Op::ListSessions => "/sessions",
        Op::RefreshTools => "/refresh",
        Op::RestartMcp(_) => "/mcp restart",
        Op::Compact(_) => "/compact",
        Op::Shutdown => "exit",
        Op::Approve { .. } | Op::SetApprovalMode(_) => "approval",
        Op::ListPermissions | Op::ForgetPermission(_) => "/permissions",
        Op::Undo { .. } => "/undo",
        Op::ListCheckpoints => "/checkpoints",
        Op::ListInstructions => "/memory",
        Op::ListHooks => "/hooks",
        Op::ListSkills => "/skills",
        Op::Spend => "/cost",
    }
}

/// Answers one command op (between turns).
pub(crate) async fn handle(st: &mut AgentState, op: Op) {
    match op {
        Op::SetModel(name) => set_model(st, &name),
        Op::ListModels => super::switch::list(st).await,
        Op::NewSession => new_session(st),
        Op::ListSessions => sessions(st).await,
        Op::Resume(prefix) => resume(st, &prefix).await,
        Op::RefreshTools => refresh_tools(st).await,
        Op::RestartMcp(name) => restart_mcp(st, &name).await,
        Op::Compact(instructions) => compact(st, instructions.as_deref()).await,
        Op::ListPermissions => super::rules_cmd::list(st),
        Op::Spend => st.emit(Event::Spend {
            models: st.spend().models.clone(),
            cost: st.spend().cost(),
        }),
        Op::ForgetPermission(which) => super::rules_cmd::forget(st, &which),
        Op::Undo { turns, force } => super::undo::run_undo(st, turns, force),
        Op::ListCheckpoints => super::undo::list(st),
        Op::ListInstructions => instructions(st),
        Op::ListHooks => super::hooks::list(st),
        Op::ListSkills => skills(st),
        Op::Submit(_) | Op::Cancel | Op::Shutdown | Op::Approve { .. } | Op::SetApprovalMode(_) => {}
    }
}

/// Answers `Op::ListSkills` (`/skills`).
fn skills(st: &mut AgentState) {
    let skills = st.skills();
    let text = if skills.is_empty() {
        "No skills are loaded (folders with a SKILL.md in ~/.config/ikigai/skills/, or in a \
         trusted project's .ikigai/skills/, .claude/skills/ or .agents/skills/)."
            .to_string()
    } else {
        let mut t = format!(
            "Skills ({}; the model reads one with the `skill` tool, `$NAME` in a prompt sends it along):",
            skills.len()
        );
        for s in skills.iter() {
            t.push_str(&format!(
                "\n{}: {} ({}, {})",
                s.name,
                s.description,
                s.source.label(),
                s.dir.display()
            ));
        }
        t
    };
    st.notice(NoticeLevel::Info, text);
}

/// Answers `Op::ListInstructions` (`/memory`).
fn instructions(st: &mut AgentState) {
    let text = if st.instructions().is_empty() {
        "No instruction files were read (no AGENTS.md or CLAUDE.md from the global config \
         folder or the project's root down to the working directory)."
            .to_string()
    } else {
        let mut t = String::from("Instruction files in the system prompt, in order:");
        for (i, line) in st.instructions().iter().enumerate() {
            t.push_str(&format!("\n{}. {line}", i + 1));
        }
        t
    };
    st.notice(NoticeLevel::Info, text);
}

pub(crate) async fn refresh_tools(st: &mut AgentState) {
    let n = st.registry().refresh().await;
    for text in st.registry().take_notices() {
        st.notice(NoticeLevel::Warning, text);
    }
    st.notice(
        NoticeLevel::Info,
        format!("Tools refreshed. {n} tools available."),
    );
}

/// `/mcp restart NAME`: starts the server again; says whether it came up (a failure is
/// told by the server's own notice, with its reason and stderr).
pub(crate) async fn restart_mcp(st: &mut AgentState, name: &str) {
    let Some(mcp) = st.registry().mcp() else {
        st.notice(NoticeLevel::Warning, "no MCP server is configured");
        return;
    };
    match mcp.restart(name).await {
        Ok(crate::tools::mcp::Status::Ready) => {
            let n = mcp
                .list(&st.registry().base_names())
                .into_iter()
                .find(|s| s.name == name)
                .map_or(0, |s| s.tools.len());
            st.notice(
                NoticeLevel::Info,
                format!("MCP server `{name}` restarted: ready, {n} tools."),
            );
        }
        Ok(_) => {}
        Err(e) => st.notice(NoticeLevel::Warning, e),
    }
}

/// Switches the model (or provider) for the following requests and records it.
pub(crate) fn set_model(st: &mut AgentState, name: &str) {
    super::switch::set_model(st, name);
}

fn new_session(st: &mut AgentState) {
    let previous = st.switch_session(new_session_id(), false, 0, Conversation::new(), (0, 0));
    if st.store().is_some() {
        st.marker(MarkerKind::New, json!({"previous": previous}));
    }
    st.checkpoints.set_list(Vec::new());
    st.announce_session(Vec::new());
}

async fn sessions(st: &mut AgentState) {
    let Some(store) = st.store().cloned() else {
        st.notice(NoticeLevel::Warning, "sessions are not stored in this run");
        return;
    };
    match store.list().await {
        Ok(sessions) => st.emit(Event::Sessions { sessions }),
        Err(e) => st.notice(NoticeLevel::Error, e.to_string()),
    }
}

async fn resume(st: &mut AgentState, prefix: &str) {
    let Some(store) = st.store().cloned() else {
        st.notice(NoticeLevel::Warning, "sessions are not stored in this run");
        return;
    };
    match super::resume::load(store.as_ref(), &super::Resume::Id(prefix.to_string()), st.cwd()).await {
        Ok(resumed) => super::resume::install(st, resumed),
        Err(e) => st.notice(NoticeLevel::Error, e.to_string()),
    }
}

/// `/compact [instructions]`: summarise the conversation now.
pub(crate) async fn compact(st: &mut AgentState, instructions: Option<&str>) {
    // The summary is sized to the window.
    super::window::settle(st).await;
    if let Err(e) = super::compact::run(st, instructions).await {
        st.notice(NoticeLevel::Warning, format!("/compact: {e}"));
    }
}
