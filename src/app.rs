//! Wires config, provider, tools, store and a front end together for one run.
//! Returns typed errors; `main.rs` prints them and picks the exit code.

use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;

use crate::agent::{AgentSetup, Resume};
use crate::config::{Config, ConfigError};
use crate::provider::openai::OpenAiChat;
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
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        max_tool_turns: cli.max_tool_turns,
    };
    let config = crate::config::Config::load(&overrides)?;
    match &cli.command {
        Some(Command::Tool(args)) => crate::tools::cli::run(args, &config).await,
        Some(Command::Sessions(args)) => sessions(args, &config).await,
        Some(Command::Export(args)) => {
            let format = match args.format {
                crate::cli::ExportFormatArg::Md => crate::ui::sessions::ExportFormat::Markdown,
                crate::cli::ExportFormatArg::Jsonl => crate::ui::sessions::ExportFormat::Jsonl,
            };
            let r = crate::ui::sessions::export(&config, &args.id, format).await;
            r.map_err(AppError::from)
        }
        None => chat(&cli, config).await,
    }
}

async fn sessions(args: &crate::cli::SessionsArgs, config: &Config) -> Result<u8, AppError> {
    use crate::cli::SessionsAction;
    let r = match &args.action {
        None => crate::ui::sessions::list(config, args.json).await,
        Some(SessionsAction::Rm { id }) => crate::ui::sessions::remove(config, id).await,
    };
    r.map_err(AppError::from)
}

impl From<crate::ui::sessions::SessionsError> for AppError {
    fn from(e: crate::ui::sessions::SessionsError) -> Self {
        match e {
            crate::ui::sessions::SessionsError::Store(e) => AppError::Store(e),
            crate::ui::sessions::SessionsError::Io(e) => AppError::Io(e),
        }
    }
}

/// A `--resume`/`--continue` that names no session (or too many) is a usage error.
fn resume_error(e: crate::store::StoreError) -> AppError {
    use crate::store::StoreError;
    match e {
        e @ (StoreError::NotFound(_) | StoreError::Ambiguous { .. }) => AppError::Usage(e.to_string()),
        e => AppError::Store(e),
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
    let no_key = config.needs_key();
    if no_key && !interactive {
        return Err(AppError::Usage(config.setup_hint().join("\n")));
    }
    let provider = OpenAiChat::new(&config).map_err(|e| AppError::Provider(e.to_string()))?;
    let registry = Registry::builtin();
    let (events_tx, events_rx) = unbounded_channel();
    let sessions: Arc<dyn Sessions> = crate::store::open(&config, events_tx.clone());
    let which = match (&cli.resume, cli.continue_session) {
        (Some(id), _) => Some(Resume::Id(id.clone())),
        (None, true) => Some(Resume::LatestInCwd),
        (None, false) => None,
    };
    let resumed = match which {
        None => None,
        Some(which) => Some(
            crate::agent::resume::load(sessions.as_ref(), &which, &cwd)
                .await
                .map_err(resume_error)?,
        ),
    };
    let system_prompt = config
        .system_prompt
        .clone()
        .unwrap_or_else(|| crate::agent::prompt::default_prompt(&cwd));
    let setup = AgentSetup {
        config: config.clone(),
        provider: Arc::new(provider),
        registry: registry.clone(),
        sessions: Some(sessions),
        cwd: cwd.clone(),
        system_prompt,
        resumed,
    };
    let agent = crate::agent::spawn(setup, events_tx);
    if interactive {
        let welcome_notes = if no_key { config.setup_hint() } else { Vec::new() };
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
