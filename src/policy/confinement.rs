//! The sandbox one tool process gets, as data: the `Confinement` that
//! `permissions::sandbox` resolves from the settings and the kernel, and the launcher
//! (`tools::launcher`, and the `ikigai-launch` binary, which compiles this file in by
//! path) applies to itself before it executes the tool. Self-contained (std and serde
//! only) so the small launcher binary can carry it; decides and applies nothing.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What the sandbox allows one tool process; `None` in the policy: nothing is confined.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Confinement {
    /// The mode's name, for messages (`workspace-write`, `read-only`).
    pub mode: String,
    /// Folders (and files) beneath which the tool may write; every other write is denied.
    pub writable: Vec<PathBuf>,
    /// Whether IP sockets are allowed (`sandbox_network = true`).
    pub network: bool,
    /// Set as `TMPDIR` for the tool (read-only mode's private temporary folder).
    pub tmpdir: Option<PathBuf>,
    /// The private mount table to join, read-only outside `writable` (see
    /// `tools/launcher/mounts.rs`): set when this system allows one
    /// (`launcher::private_mounts`).
    pub namespace: Option<Namespace>,
    /// Landlock's device-ioctl right (ABI 5) is handled.
    pub ioctl_dev: bool,
    /// Landlock's signal scoping (ABI 6) is on.
    pub scoped_signals: bool,
}

/// The private mount table a tool joins: the holding process and its namespaces' inode
/// numbers (`/proc/PID/ns/…`), checked before joining (a pid can be reused).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Namespace {
    pub pid: u32,
    /// The user namespace to enter first, when the holder needed one (not root).
    pub user: Option<u64>,
    pub mnt: u64,
}
