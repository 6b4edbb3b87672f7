//! `ikigai sessions`: the stored sessions, newest first.

use crate::app::AppError;
use crate::config::Config;

/// Prints the session list; returns the exit code.
pub async fn list(_config: &Config) -> Result<u8, AppError> {
    Err(AppError::Runtime("ikigai sessions: not built yet".into()))
}
