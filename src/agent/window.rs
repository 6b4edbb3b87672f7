//! The context window a server reports (`Provider::context_window`), asked without delaying
//! a request that fits any plausible window: such a request goes first and the question
//! follows in the background, while the answer streams; what comes after (tools, whose
//! results are sized to the window, the next request, a refusal as too long) waits for the
//! answer, and so does a first request past `FLOOR`. Until it comes the
//! budget keeps the window the settings, the family table or the fallback gave. Owns the
//! background question only: the numbers are the budget's.

use futures_util::FutureExt;

use super::budget::WindowSource;
use super::probe::Answer;
use super::state::AgentState;
use crate::protocol::NoticeLevel;

/// Estimated tokens of a request that every plausible window holds with room for the
/// answer: sent without waiting for the server to say its window.
pub(crate) const FLOOR: u64 = 4096;

/// Whether the window is still to be learned from the server (asked or not yet).
pub(crate) fn unknown(st: &AgentState) -> bool {
    st.budget().needs_probe() || st.probe.task.is_some()
}

/// Whether a question is in flight.
pub(crate) fn asked(st: &AgentState) -> bool {
    st.probe.task.is_some()
}

/// Asks the server in the background, when the budget wants it asked and nobody has.
pub(crate) fn start(st: &mut AgentState) {
    if !st.budget().needs_probe() {
        return;
    }
    st.budget_mut().probed();
    let provider = st.provider().clone();
    let model = st.model().to_string();
    st.probe.task = Some(tokio::spawn(async move { provider.context_window(&model).await }));
}

/// Takes the answer when it has come, without waiting.
pub(crate) fn poll(st: &mut AgentState) {
    let Some(task) = st.probe.task.as_mut() else {
        return;
    };
    if !task.is_finished() {
        return;
    }
    let answer = task.now_or_never().and_then(Result::ok).unwrap_or(Ok(None));
    st.probe.task = None;
    apply(st, answer);
}

/// Waits for the answer, asking now when nobody has (each try is bounded by the
/// provider's own timeout).
pub(crate) async fn settle(st: &mut AgentState) {
    start(st);
    if let Some(task) = st.probe.task.take() {
        let answer = task.await.unwrap_or(Ok(None));
        apply(st, answer);
    }
}

/// A refusal as too long taught the window already: that word is the server's last. An
/// answer that could not be read is said once, as a warning.
fn apply(st: &mut AgentState, answer: Answer) {
    match answer {
        Ok(Some(w)) if st.budget().source() != WindowSource::Server => {
            st.budget_mut().set_window(w, WindowSource::Server);
        }
        Ok(_) => {}
        Err(e) => st.notice(
            NoticeLevel::Warning,
            format!("{e}; the context window was not learnt from the server (set context_window to say it)"),
        ),
    }
}

/// `percent` of the window, or `None` while the window is still to be learned or only
/// the fallback's guess (a share of a guessed window is a wrong number on the status line).
pub(crate) fn share(st: &AgentState, percent: Option<u32>) -> Option<u32> {
    if unknown(st) || st.budget().source() == WindowSource::Fallback {
        None
    } else {
        percent
    }
}
