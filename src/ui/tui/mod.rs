//! The interactive terminal UI (ratatui + crossterm): finished items go into the terminal's
//! own scrollback above a small inline viewport (the unfinished tail of the answer, running
//! tools, input box, status line); a streaming answer's finished lines go up as they finish.
//! Talks to the agent only through `Op`s and `Event`s.

pub(crate) mod answer;
pub mod app;
pub mod approval;
pub(crate) mod backend;
pub(crate) mod cells;
pub(crate) mod commands;
pub(crate) mod complete;
pub(crate) mod editor;
pub(crate) mod event_loop;
pub(crate) mod guard;
pub(crate) mod highlight;
pub mod history;
pub(crate) mod info;
pub mod live;
pub(crate) mod markdown;
pub(crate) mod paste;
pub mod question;
pub mod screen;
mod subagent;
pub mod theme;
pub(crate) mod trust_ask;
pub(crate) mod view;
pub(crate) mod wrap;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_context;
#[cfg(test)]
pub(crate) mod tests_hostile;
#[cfg(test)]
mod tests_input;
#[cfg(test)]
mod tests_live;
#[cfg(test)]
mod tests_models;
#[cfg(test)]
mod tests_question;
#[cfg(test)]
mod tests_screens;

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::agent::AgentHandle;
use crate::config::Config;
use crate::protocol::{Event, Op};
use crate::tools::Registry;

/// What the TUI shows besides agent events.
pub struct TuiContext {
    /// The settings, as loaded (never changed).
    pub config: Config,
    /// The provider the session starts on, with its model (the app keeps the current one
    /// as its own state: `/model` changes it).
    pub provider: crate::provider::Spec,
    pub registry: Registry,
    pub cwd: std::path::PathBuf,
    /// Lines to show before anything else (e.g. how to configure a provider).
    pub welcome_notes: Vec<String>,
    /// Stored sessions (id, title), newest first, once the store has listed them: what
    /// `/resume <Tab>` completes.
    pub sessions: Option<SessionList>,
}

/// The stored sessions, delivered once when the store has answered.
pub type SessionList = tokio::sync::oneshot::Receiver<Vec<(String, Option<String>)>>;

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

/// Resolves on SIGTERM, SIGHUP or a SIGINT sent with `kill` (in raw mode the Ctrl+C key is
/// a key, not a signal), to the exit code the shell convention gives it: 128 + its number.
fn shutdown_signals() -> std::io::Result<impl std::future::Future<Output = u8>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => 128 + 15,
            _ = hup.recv() => 128 + 1,
            _ = int.recv() => 128 + 2,
        }
    })
}

/// Runs the REPL until the user exits; always restores the terminal. Returns the exit
/// code: 0, or 128 + the signal that ended it (the turn in flight, and so its tool, is
/// cancelled first).
pub async fn run(
    agent: AgentHandle,
    mut events: UnboundedReceiver<Event>,
    ctx: TuiContext,
) -> Result<u8, TuiError> {
    let env = |k: &str| crate::environ::var(k);
    let theme = theme::Theme::from_env(&env);
    let hist = history::History::load(history::default_path(&env));
    let cwd_display = display_path(&ctx.cwd, env("HOME").as_deref());
    let (custom, notices) = crate::ui::custom_commands::CustomCommands::load(&ctx.cwd);
    let mut app = app::App::new(ctx, theme, hist, cwd_display);
    app.set_custom_commands(custom, notices);
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
    if let Some(hint) = app.resume_hint() {
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), "{hint}");
    }

    // Shutdown ends a turn in flight as interrupted (its tool's process group is killed)
    // and flushes the store.
    let _ = agent.ops.send(Op::Shutdown);
    let _ = tokio::time::timeout(Duration::from_secs(2), agent.task).await;
    match result? {
        event_loop::Stop::AgentGone => Err(TuiError::AgentGone),
        event_loop::Stop::User | event_loop::Stop::InputClosed => Ok(0),
        event_loop::Stop::Signal(code) => Ok(code),
    }
}
