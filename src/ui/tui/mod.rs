//! The interactive terminal UI (ratatui + crossterm): finished items go into the terminal's
//! own scrollback above a small inline viewport (live message, input box, status line).
//! Talks to the agent only through `Op`s and `Event`s.

pub mod app;
pub mod cells;
pub mod commands;
pub mod complete;
pub mod editor;
pub mod event_loop;
pub mod guard;
pub mod highlight;
pub mod history;
pub mod info;
pub mod markdown;
pub mod screen;
pub mod theme;
pub mod view;
pub mod wrap;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_context;
#[cfg(test)]
mod tests_input;

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::agent::AgentHandle;
use crate::config::Config;
use crate::protocol::{Event, Op};
use crate::tools::Registry;

/// What the TUI shows besides agent events.
pub struct TuiContext {
    pub config: Config,
    pub registry: Registry,
    pub cwd: std::path::PathBuf,
    /// Lines to show before anything else (e.g. how to configure a provider).
    pub welcome_notes: Vec<String>,
}

/// A terminal problem while running the UI.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// Reading input or writing the screen failed. Not retryable.
    #[error("terminal: {0}")]
    Io(#[from] std::io::Error),
    /// The rendering backend failed. Not retryable.
    #[error("terminal: {0}")]
    Terminal(String),
    /// The agent task ended without being asked to. Not retryable.
    #[error("the agent stopped unexpectedly")]
    AgentGone,
}

/// `~/x` for paths under `$HOME`.
pub fn display_path(path: &std::path::Path, home: Option<&str>) -> String {
    if let Some(home) = home.filter(|h| !h.is_empty() && *h != "/")
        && let Ok(rest) = path.strip_prefix(home)
    {
        return if rest.as_os_str().is_empty() {
            "~".to_string()
        } else {
            format!("~/{}", rest.display())
        };
    }
    path.display().to_string()
}

/// Resolves on SIGTERM or SIGHUP (or a SIGINT sent with `kill`: in raw mode the Ctrl+C key
/// is a key, not a signal).
fn shutdown_signals() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = hup.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// Runs the REPL until the user exits; always restores the terminal.
pub async fn run(
    agent: AgentHandle,
    mut events: UnboundedReceiver<Event>,
    ctx: TuiContext,
) -> Result<(), TuiError> {
    let env = |k: &str| std::env::var(k).ok();
    let theme = theme::Theme::from_env(&env);
    let hist = history::History::load(history::default_path(&env));
    let cwd_display = display_path(&ctx.cwd, env("HOME").as_deref());
    let mut app = app::App::new(ctx, theme, hist, cwd_display);
    let signals = shutdown_signals()?;

    let guard = guard::TerminalGuard::enter()?;
    let result = async {
        let backend = screen::TrackedBackend::new()?;
        let mut screen = screen::Screen::new(backend, 3)?;
        let input = crossterm::event::EventStream::new();
        let stop = event_loop::run_loop(&mut screen, &mut app, input, &mut events, &agent.ops, signals).await;
        let finished = screen.finish(&mut app);
        let stop = stop?;
        finished?;
        Ok::<_, TuiError>(stop)
    }
    .await;
    drop(guard);

    let _ = agent.ops.send(Op::Shutdown);
    let _ = tokio::time::timeout(Duration::from_secs(2), agent.task).await;
    match result? {
        event_loop::Stop::AgentGone => Err(TuiError::AgentGone),
        event_loop::Stop::User | event_loop::Stop::Signal => Ok(()),
    }
}
