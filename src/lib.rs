//! ikigai: a terminal AI coding agent. The library holds every part; `main.rs` wires them
//! up, prints errors and picks exit codes. Library code never prints to stdout/stderr
//! except the front ends in `ui`, whose job is the terminal.

pub mod agent;
pub mod app;
pub mod backoff;
pub mod cli;
pub mod config;
pub mod environ;
pub mod message;
pub mod permissions;
pub mod protocol;
pub mod provider;
pub mod redact;
pub mod store;
pub mod text;
pub mod tools;
pub mod ui;
