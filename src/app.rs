//! Wires config, provider, tools, store and a front end together for one run.
//! Returns typed errors; `main.rs` prints them and picks the exit code.

use crate::config::ConfigError;

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
        Some(Command::Sessions) => crate::store::cli::list(&config).await,
        None => Err(AppError::Runtime("chat mode is not built yet".into())),
    }
}
