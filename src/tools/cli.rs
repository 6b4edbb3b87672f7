//! `ikigai tool …`: list, describe or run a tool through the external-tool protocol.

use crate::app::AppError;
use crate::cli::ToolArgs;
use crate::config::Config;

/// Runs the `tool` subcommand; returns the exit code.
pub async fn run(_args: &ToolArgs, _config: &Config) -> Result<u8, AppError> {
    Err(AppError::Runtime("ikigai tool: not built yet".into()))
}
