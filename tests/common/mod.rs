//! Shared test support: the loopback fake model vendor and helpers to run the binary.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

pub mod agent;
pub mod fake_provider;
pub mod pg;

use std::path::Path;
use std::process::Command;

#[allow(unused_imports)]
pub use fake_provider::{fixture, fixture_path};

/// The real binary with an isolated environment: HOME, config and data under `home`,
/// no inherited provider settings.
pub fn ikigai(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ikigai"));
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "IKIGAI_CONFIG",
        "IKIGAI_MODEL",
        "IKIGAI_DATABASE_URL",
        "NO_COLOR",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .current_dir(home);
    cmd
}
