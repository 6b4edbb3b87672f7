//! Front ends: `plain` (piped stdin, -p, --json), `tui` (interactive) and the printing
//! subcommands (`tool_cmd`, `trust_cmd`, `sessions`: `ikigai sessions`, `sessions rm`,
//! `export`; and `shell`: completion scripts and the manual page).
//! They consume agent `Event`s and send `Op`s (parsed from slash commands by `slash`);
//! they never reach into the agent. Only front ends print.

pub mod diff;
pub mod mcp;
pub mod models;
pub mod permissions_cmd;
pub mod plain;
pub mod sessions;
pub mod shell;
pub mod slash;
pub mod tool_cmd;
pub mod trust_cmd;
pub mod tui;
