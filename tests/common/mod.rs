//! Shared test support: the loopback fake model vendor and helpers to run the binary.
#![allow(dead_code)]

pub mod agent;
pub mod fake_provider;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The recorded streams shared with the other projects (`../shared/fixtures/sse`).
pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/sse")
        .join(name)
}

pub fn fixture(name: &str) -> Vec<u8> {
    let p = fixture_path(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", p.display()))
}

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
