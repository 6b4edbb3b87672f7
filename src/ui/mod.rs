//! Front ends: `plain` (piped stdin, -p, --json), `tui` (interactive), `acp` (editors, over
//! the Agent Client Protocol) and the printing
//! subcommands (`tool_cmd`, `trust_cmd`, `sessions`: `ikigai sessions`, `sessions rm`,
//! `export`; and `shell`: completion scripts and the manual page).
//! They consume agent `Event`s and send `Op`s (parsed from slash commands by `slash`);
//! they never reach into the agent. Only front ends print. `custom_commands` loads the
//! user's and the trusted project's Markdown commands, which both front ends expand.

pub mod acp;
pub(crate) mod cost;
pub(crate) mod custom_commands;
pub(crate) mod diff;
pub mod mcp;
pub mod mcp_serve;
pub(crate) mod models;
pub mod permissions_cmd;
pub mod plain;
pub(crate) mod plan;
pub(crate) mod result;
pub mod sandbox_cmd;
pub mod sessions;
pub(crate) mod shell;
pub(crate) mod slash;
pub mod tool_cmd;
pub mod trust_cmd;
pub mod tui;
pub mod undo_cmd;

/// What every front end says when the conversation was compacted.
pub fn compacted_text(before: u64, after: u64) -> String {
    format!("Context compacted: {before} → {after} tokens (full history kept in the session)")
}
