//! The interactive terminal UI (ratatui + crossterm): scrollback above an inline viewport.

use tokio::sync::mpsc::UnboundedReceiver;

use crate::agent::AgentHandle;
use crate::app::AppError;
use crate::config::Config;
use crate::protocol::Event;
use crate::tools::Registry;

/// What the TUI shows besides agent events.
pub struct TuiContext {
    pub config: Config,
    pub registry: Registry,
    pub cwd: std::path::PathBuf,
    /// Lines to show before anything else (e.g. how to configure a provider).
    pub welcome_notes: Vec<String>,
}

/// Runs the REPL until the user exits; always restores the terminal.
pub async fn run(
    agent: AgentHandle,
    events: UnboundedReceiver<Event>,
    ctx: TuiContext,
) -> Result<(), AppError> {
    let _ = (agent, events, ctx);
    Err(AppError::Runtime(
        "the interactive UI is not built yet; use -p or pipe prompts".into(),
    ))
}
