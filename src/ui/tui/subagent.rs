//! A sub-agent in the TUI: its `task` call's block is the sub-agent's, updated in place
//! while it runs: each call it makes is a line in the block's live window
//! (`● grep(pattern="…")`, then `✓ summary` or `✗ summary`), next to the progress on the
//! call's line; once the call is done the block shows its result as any call's. Reads
//! only the `SubAgent` event; draws nothing itself.

use super::app::App;
use super::wrap;
use crate::protocol::Event;

impl App {
    /// What the sub-agent of call `id` did.
    pub(crate) fn on_sub_agent(&mut self, id: &str, event: Event) {
        let line = match event {
            Event::ToolCallStarted { name, arguments, .. } => {
                let call = crate::ui::plan::call_line(&name, &arguments)
                    .unwrap_or_else(|| crate::message::call_summary(&name, &arguments));
                format!("● {}\n", wrap::sanitize(&call).replace('\n', "⏎"))
            }
            Event::ToolCallFinished { summary, success, .. } => {
                let first = summary.lines().next().unwrap_or_default();
                let mark = if success { "✓" } else { "✗" };
                format!("  {mark} {}\n", wrap::sanitize(first))
            }
            _ => return,
        };
        if let Some(t) = self.tools.iter_mut().find(|t| t.id == id && t.result.is_none()) {
            t.live.push(&line);
            self.dirty = true;
        }
    }
}
