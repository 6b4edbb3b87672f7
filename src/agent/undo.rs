//! The agent's side of checkpoints: saving what a tool call is about to change (before it
//! runs), making the turn's checkpoint when the turn ends (stored as a `checkpoint`
//! marker), and the `/undo` and `/checkpoints` commands. An undo is stored as an `undo`
//! marker and told to the model by a note in the conversation, so the next request
//! carries it. The files themselves are the `checkpoints` module's business.

use serde_json::json;

use super::state::AgentState;
use crate::checkpoints::{Checkpoint, undo};
use crate::message::{Kind, Message};
use crate::policy::Pinned;
use crate::protocol::{Event, NoticeLevel};
use crate::store::MarkerKind;

/// Before tool `name` runs (approved): saves what it is about to change — for a file tool,
/// at `pinned`, the place its decision judged and the tool acts on.
pub(crate) async fn before_call(st: &mut AgentState, name: &str, arguments: &str, pinned: Option<&Pinned>) {
    if !st.checkpoints.watches(name) {
        return;
    }
    let ctx = st.tool_ctx().clone();
    // The turn's number and prompt, asked only for its first change.
    let turn = if st.checkpoints.in_turn() {
        (0, String::new())
    } else {
        turn_of(st)
    };
    let snapshot = st.checkpoints.before_call(
        name,
        arguments,
        |given| match pinned {
            Some(Pinned {
                given: g,
                real: Some(real),
            }) if g == given => real.clone(),
            _ => crate::tools::fsutil::resolve(&ctx, given),
        },
        || turn,
    );
    let Some(snapshot) = snapshot else { return };
    let taken = tokio::task::spawn_blocking(move || snapshot.take())
        .await
        .unwrap_or_else(|e| {
            Err(crate::checkpoints::shadow::ShadowError::Git(format!(
                "snapshot failed: {e}"
            )))
        });
    if let Some(text) = st.checkpoints.snapshot_taken(taken) {
        st.notice(NoticeLevel::Warning, text);
    }
}

/// The number of the turn in progress (user messages so far, notes left out) and the
/// start of its message.
fn turn_of(st: &AgentState) -> (usize, String) {
    let users = st
        .messages()
        .iter()
        .filter(|m| m.kind == Kind::User && !m.content.starts_with(undo::NOTE_PREFIX));
    let mut n = 0;
    let mut last = "";
    for m in users {
        n += 1;
        last = &m.content;
    }
    (n, last.chars().take(80).collect())
}

/// When a turn ended (done, failed or cancelled): stores its checkpoint, if it changed
/// any file, and from the first turn's end follows the tree in the background (while the
/// user reads and types), so later turns' commands wait only for what changed since; a
/// run of one `-p` prompt has no later turn and starts nothing.
pub(crate) async fn finish_turn(st: &mut AgentState) {
    let finishing = st.checkpoints.finish();
    if st.follow_tree {
        st.checkpoints.track();
    }
    let Some(finishing) = finishing else {
        return;
    };
    let Ok(checkpoint) = tokio::task::spawn_blocking(move || finishing.run()).await else {
        return;
    };
    if checkpoint.files.is_empty() {
        return;
    }
    st.marker(MarkerKind::Checkpoint, json!(checkpoint));
    st.checkpoints.push(checkpoint);
}

/// `/undo [N] [--force]`: puts back what the newest `n` turns changed, shows what it
/// restored, and tells the model in the next request.
pub(crate) fn run_undo(st: &mut AgentState, n: usize, force: bool) {
    let Some(blobs) = st.checkpoints.blobs() else {
        st.notice(
            NoticeLevel::Warning,
            "/undo: no checkpoints are kept in this run (no session is stored, or no data folder: set HOME or XDG_DATA_HOME)",
        );
        return;
    };
    let cwd = st.cwd().to_path_buf();
    match undo::undo(st.checkpoints.list(), n, &blobs, &cwd, force) {
        Ok(out) => {
            st.checkpoints.pop(n);
            st.marker(
                MarkerKind::Undo,
                json!({"checkpoints": out.ids, "files": out.files}),
            );
            st.append(Message::user(undo::note(&out)));
            st.notice(NoticeLevel::Info, undo::summary(&out));
        }
        Err(undo::UndoError::ChangedSince(files)) => st.emit(Event::UndoRefused { turns: n, files }),
        Err(e) => st.notice(NoticeLevel::Warning, format!("/undo: {e}")),
    }
}

/// `/checkpoints`: the turns that can be undone.
pub(crate) fn list(st: &AgentState) {
    st.notice(NoticeLevel::Info, undo::listing(st.checkpoints.list(), st.cwd()));
}

/// Reads stored `checkpoint` markers back (one that does not parse is left out).
pub fn parse(stored: Vec<serde_json::Value>) -> Vec<Checkpoint> {
    stored
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}
