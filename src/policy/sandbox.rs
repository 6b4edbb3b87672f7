//! The sandbox as the user sets it (`sandbox`, `sandbox_network`, `writable_roots`): the
//! mode and the settings, as config reads them and `permissions::sandbox` checks and
//! resolves them. Data only: probes, decides and applies nothing.

use std::path::PathBuf;

use serde::Deserialize;

/// `sandbox = …`: what tool processes may write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox: tools run with the user's rights (the default).
    #[default]
    Off,
    /// Writes only in the working directory, the temporary directory and `writable_roots`;
    /// reads anywhere.
    WorkspaceWrite,
    /// No writes except `/dev/null` and a private temporary directory; reads anywhere.
    ReadOnly,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sandbox settings as configured (validated by `resolve`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub mode: SandboxMode,
    /// `sandbox_network`: IP sockets allowed inside the sandbox (default: no).
    pub network: bool,
    /// `writable_roots`: more folders the tools may write in (`workspace-write`).
    pub writable_roots: Vec<PathBuf>,
}
