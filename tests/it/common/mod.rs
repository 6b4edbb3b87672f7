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
pub mod site;
pub mod strict;
pub mod strict_history;
pub mod window_vendor;

use std::path::Path;
use std::process::Command;

#[allow(unused_imports)]
pub use fake_provider::{fixture, fixture_path};

/// The binary under test: the one this build made, or `IKIGAI_TEST_BIN` (to check that a
/// test fails on an older build).
pub fn binary() -> std::path::PathBuf {
    std::env::var_os("IKIGAI_TEST_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_ikigai").into())
}

/// The real binary with an isolated environment (see `env::isolate`), run in `home`.
pub fn ikigai(home: &Path) -> Command {
    ikigai_at(&binary(), home)
}

/// `ikigai`, with the binary at `bin`.
pub fn ikigai_at(bin: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(bin);
    env::isolate(&mut cmd, home);
    cmd.current_dir(home);
    cmd
}

/// `ikigai ARGS…` run to its end in `cwd`, with stdin closed and its output kept.
pub fn run_in(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = ikigai(home);
    cmd.current_dir(cwd)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.output().expect("run ikigai")
}

/// Bytes a process printed, as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Waits (30 s at most) until `p` holds a whole line (a process wrote it); its text.
pub fn wait_for_file(p: &Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Ok(t) = std::fs::read_to_string(p)
            && t.ends_with('\n')
        {
            return t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            p.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The provider `config` selects, resolved with the process environment and built as the
/// binary builds it.
pub fn provider(config: &ikigai::config::Config) -> std::sync::Arc<dyn ikigai::provider::Provider> {
    let resolved = ikigai::provider::resolve(config, &ikigai::provider::env_key).unwrap();
    ikigai::provider::build(resolved.spec).unwrap()
}
