//! ikigai: a terminal AI coding agent. The library holds every part; `main.rs` wires them
//! up, prints errors and picks exit codes. Library code never prints to stdout/stderr
//! except the front ends in `ui`, whose job is the terminal.
//!
//! Items are `pub(crate)` unless the binary or the tests use them: a module the outside
//! does not reach is `pub(crate) mod`, and `unreachable_pub` keeps a `pub` inside it from
//! pretending otherwise (the provider module narrows its own face separately).

#![warn(unreachable_pub)]

pub mod agent;
pub mod agent_types;
pub mod app;
pub(crate) mod backoff;
pub(crate) mod beneath;
pub mod checkpoints;
pub mod cli;
pub mod config;
pub mod environ;
pub(crate) mod front_matter;
pub(crate) mod hooks;
#[cfg(test)]
pub(crate) mod hostile;
pub(crate) mod images;
pub mod message;
pub(crate) mod paths;
pub mod permissions;
pub mod policy;
pub mod protocol;
#[allow(unreachable_pub)] // its own face is the provider work's to narrow
pub mod provider;
pub mod redact;
pub mod skills;
pub mod spend;
pub mod store;
pub mod text;
pub mod tool_vocab;
pub mod tools;
pub mod trusted_path;
pub mod ui;
