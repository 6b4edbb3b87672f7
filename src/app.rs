//! Wires config, provider, tools, store and a front end together for one run.
//! Returns typed errors; `main.rs` prints them and picks the exit code.

use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;

use crate::agent::{AgentSetup, Resume};
use crate::config::{Config, ConfigError};
use crate::store::Sessions;
use crate::tools::Registry;
use crate::ui::plain::{Input, PlainOptions};
use crate::ui::tui::TuiContext;

/// Why a run failed. `exit_code` maps it: 2 for usage and configuration, 1 otherwise.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The command line or the input was wrong.
    #[error("{0}")]
    Usage(String),
    /// The provider failed in a way retries could not fix.
    #[error("{0}")]
    Provider(String),
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Runtime(String),
}

impl AppError {
    pub fn exit_code(&self) -> u8 {
        match self {
            AppError::Config(_) | AppError::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Runs what the command line asks for; returns the exit code for success paths.
pub async fn run(cli: crate::cli::Cli) -> Result<u8, AppError> {
    use crate::cli::Command;
    let overrides = crate::config::Overrides {
        config_path: cli.config.clone(),
        provider: cli.provider.clone(),
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        max_tool_turns: cli.max_tool_turns,
    };
    let mut config = crate::config::Config::load(&overrides)?;
    crate::provider::resolve(&mut config, &|k| std::env::var(k).ok())
        .map_err(|e| AppError::Usage(e.to_string()))?;
    match &cli.command {
        Some(Command::Tool(args)) => crate::tools::cli::run(args, &config).await,
        Some(Command::Sessions) => crate::store::cli::list(&config).await,
        None => chat(&cli, config).await,
    }
}

/// Chat mode: the TUI when stdin and stdout are terminals and no -p was given, else the
/// scripted front end.
async fn chat(cli: &crate::cli::Cli, config: Config) -> Result<u8, AppError> {
    use std::io::IsTerminal;
    if cli.prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(AppError::Usage("the prompt given with -p is empty".into()));
    }
    let cwd = std::env::current_dir()?;
    let interactive =
        cli.prompt.is_none() && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let provider = crate::provider::build(&config).map_err(|e| AppError::Usage(e.to_string()))?;
    let setup_hint = provider.setup_hint();
    if !setup_hint.is_empty() && !interactive {
        return Err(AppError::Usage(setup_hint.join("\n")));
    }
    let registry = Registry::builtin();
    let (events_tx, events_rx) = unbounded_channel();
    if let Some(mut notices) = provider.notices() {
        let tx = events_tx.clone();
        tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some((level, text)) = notices.next().await {
                let _ = tx.send(crate::protocol::Event::notice(level, text));
            }
        });
    }
    let sessions: Arc<dyn Sessions> = crate::store::open(&config, events_tx.clone());
    let which = match (&cli.resume, cli.continue_session) {
        (Some(id), _) => Some(Resume::Id(id.clone())),
        (None, true) => Some(Resume::LatestInCwd),
        (None, false) => None,
    };
    let resumed = match which {
        None => None,
        Some(which) => Some(crate::agent::resume::load(sessions.as_ref(), &which, &cwd).await?),
    };
    let system_prompt = config
        .system_prompt
        .clone()
        .unwrap_or_else(|| crate::agent::prompt::default_prompt(&cwd));
    let setup = AgentSetup {
        config: config.clone(),
        provider,
        registry: registry.clone(),
        sessions: Some(sessions),
        cwd: cwd.clone(),
        system_prompt,
        resumed,
    };
    let agent = crate::agent::spawn(setup, events_tx);
    if interactive {
        let welcome_notes = setup_hint;
        let ctx = TuiContext {
            config,
            registry,
            cwd,
            welcome_notes,
        };
        crate::ui::tui::run(agent, events_rx, ctx).await.map(|()| 0)
    } else {
        let input = match &cli.prompt {
            Some(p) => Input::Prompt(p.clone()),
            None => Input::Stdin,
        };
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let opts = PlainOptions {
            json: cli.json,
            verbose: cli.verbose,
            color: !cli.json && !no_color && std::io::stdout().is_terminal(),
        };
        crate::ui::plain::run(agent, events_rx, input, opts).await
    }
}
