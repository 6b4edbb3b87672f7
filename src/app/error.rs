//! Why a run failed: `AppError` carries each front end's and subcommand's own error with
//! its type, and says which exit code it gets; `main.rs` prints it. Decides nothing else.

use crate::config::ConfigError;
use crate::permissions::trust::TrustError;
use crate::provider::SetupError;
use crate::store::StoreError;
use crate::ui::mcp::McpCmdError;
use crate::ui::plain::PlainError;
use crate::ui::sessions::SessionsError;
use crate::ui::tool_cmd::ToolCmdError;
use crate::ui::trust_cmd::TrustCmdError;
use crate::ui::tui::TuiError;

/// Why a run failed, each failure with its own type until `main.rs` prints it.
/// `exit_code` maps it: 2 for usage and configuration, 1 otherwise.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The provider the settings name cannot be set up.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The command line or the input was wrong.
    #[error("{0}")]
    Usage(String),
    /// `--resume ID` or `-c` found no session to continue.
    #[error("{0}")]
    NoSession(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Plain(#[from] PlainError),
    #[error(transparent)]
    Tui(#[from] TuiError),
    #[error(transparent)]
    Acp(#[from] crate::ui::acp::AcpError),
    #[error(transparent)]
    ToolCmd(#[from] ToolCmdError),
    #[error(transparent)]
    Sessions(#[from] SessionsError),
    /// `ikigai undo` did not undo (nothing to undo, a file changed since).
    #[error(transparent)]
    Undo(#[from] crate::ui::undo_cmd::UndoCmdError),
    #[error(transparent)]
    Mcp(#[from] McpCmdError),
    /// `ikigai mcp serve` could not serve.
    #[error(transparent)]
    McpServe(#[from] crate::ui::mcp_serve::ServeError),
    #[error(transparent)]
    TrustCmd(#[from] TrustCmdError),
    /// The trust list could not be read or written when the user answered the question.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The configured sandbox cannot be set up (or enforced by this kernel).
    #[error(transparent)]
    Sandbox(#[from] crate::permissions::sandbox::SandboxError),
}

impl AppError {
    pub fn exit_code(&self) -> u8 {
        match self {
            AppError::Config(_)
            | AppError::Setup(_)
            | AppError::Usage(_)
            | AppError::NoSession(_)
            // An id that names no session (`sessions rm`, `export`) is the user's to fix.
            | AppError::Sessions(SessionsError::Store(StoreError::NotFound(_) | StoreError::Ambiguous { .. }))
            | AppError::ToolCmd(ToolCmdError::Usage(_))
            | AppError::Mcp(McpCmdError::Usage(_))
            // A folder that is not one is the command line's fault.
            | AppError::TrustCmd(TrustCmdError::Trust(
                TrustError::Folder { .. } | TrustError::NotUtf8(_),
            ))
            | AppError::McpServe(crate::ui::mcp_serve::ServeError::Address(_))
            | AppError::Sandbox(_) => 2,
            _ => 1,
        }
    }

    /// Whoever read our output stopped reading (`ikigai -p … | head`).
    pub fn is_broken_pipe(&self) -> bool {
        let io = match self {
            AppError::Io(e)
            | AppError::Plain(PlainError::Io(e))
            | AppError::Tui(TuiError::Io(e))
            | AppError::ToolCmd(ToolCmdError::Io(e))
            | AppError::Sessions(SessionsError::Io(e))
            | AppError::Mcp(McpCmdError::Io(e))
            | AppError::TrustCmd(TrustCmdError::Io(e)) => e,
            _ => return false,
        };
        io.kind() == std::io::ErrorKind::BrokenPipe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_type_and_their_exit_code() {
        let setup = AppError::from(SetupError::NoModel { name: "x".into() });
        assert!(matches!(setup, AppError::Setup(SetupError::NoModel { .. })));
        assert_eq!(setup.exit_code(), 2);
        assert!(setup.to_string().starts_with("provider `x`: no model"), "{setup}");
        let gone = AppError::from(PlainError::AgentGone);
        assert!(matches!(gone, AppError::Plain(PlainError::AgentGone)));
        assert_eq!(
            (gone.exit_code(), gone.to_string().as_str()),
            (1, "the agent stopped unexpectedly")
        );
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(AppError::from(PlainError::Io(pipe)).is_broken_pipe());
        let usage = AppError::from(ToolCmdError::Usage("bad".into()));
        assert_eq!(usage.exit_code(), 2);
        let store = AppError::from(SessionsError::Store(StoreError::NotFound("ab".into())));
        assert_eq!(
            (store.exit_code(), store.to_string().as_str()),
            (2, "no session matches `ab`")
        );
    }
}
