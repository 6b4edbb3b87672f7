//! Shared test support: the loopback fake model vendor and helpers to run the binary.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

// The tmux harness for the TUI e2e tests.
pub mod tmux;

pub mod agent;
pub mod env;
pub mod fake_provider;
pub mod fake_vendor;
pub mod history;
pub mod pg;
pub mod strict;
pub mod strict_history;
pub mod window_vendor;

use std::path::Path;
use std::process::Command;

#[allow(unused_imports)]
pub use fake_provider::{fixture, fixture_path};

/// The real binary with an isolated environment (see `env::isolate`), run in `home`.
pub fn ikigai(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ikigai"));
    env::isolate(&mut cmd, home);
    cmd.current_dir(home);
    cmd
}
