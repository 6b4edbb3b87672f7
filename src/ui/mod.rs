//! Front ends: `plain` (piped stdin, -p, --json) and `tui` (interactive). Both consume
//! agent `Event`s and send `Op`s; they never reach into the agent. `sessions` prints the
//! session subcommands (`ikigai sessions`, `sessions rm`, `export`).

pub mod plain;
pub mod sessions;
pub mod tui;
