//! Front ends: `plain` (piped stdin, -p, --json) and `tui` (interactive). Both consume
//! agent `Event`s and send `Op`s; they never reach into the agent.

pub mod diff;
pub mod plain;
pub mod tui;
