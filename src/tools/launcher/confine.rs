//! The sandbox as the launcher applies it to itself just before it executes a tool (Linux):
//! Landlock takes every filesystem write right away except beneath the writable roots (and
//! on `/dev/null`), reads stay free; a seccomp filter refuses every socket that is not a
//! Unix one (and io_uring, which could open one without a syscall) when the network is
//! off. Both hold for the tool and everything it starts, root included. Self-contained
//! (std, nix, serde, landlock, seccompiler), like `exec.rs`; decides nothing: what is
//! writable is resolved by ikigai (`permissions::sandbox`) and arrives in the policy.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The Landlock ABI the filesystem rules need: ABI 3 (Linux 6.2) is the first that
/// restricts `truncate(2)`; an older kernel would let a tool truncate any file it may open.
pub const MIN_ABI: u8 = 3;

/// What the sandbox allows one tool process; `None` in the policy: nothing is confined.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Confinement {
    /// The mode's name, for messages (`workspace-write`, `read-only`).
    pub mode: String,
    /// Folders (and files) beneath which the tool may write; every other write is denied.
    pub writable: Vec<PathBuf>,
    /// Whether IP sockets are allowed (`sandbox_network = true`).
    pub network: bool,
    /// Set as `TMPDIR` for the tool (read-only mode's private temporary folder).
    pub tmpdir: Option<PathBuf>,
}

/// Why the launcher cannot confine itself; the tool is then not executed.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;

    use landlock::{
        ABI, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus,
    };
    use nix::libc;
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{Confinement, Refused};

    /// The write rights every rule set handles (ABI 3: writes, renames across folders,
    /// truncation).
    fn writes() -> BitFlags<AccessFs> {
        AccessFs::from_write(ABI::V3)
    }

    /// The highest Landlock ABI (up to the one we need) this kernel can enforce, 0 for none.
    /// Creating a rule set restricts nothing; it only asks the kernel.
    pub fn abi() -> u8 {
        let mut best = 0;
        for (n, abi) in [(1, ABI::V1), (2, ABI::V2), (3, ABI::V3)] {
            let created = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_write(abi))
                .and_then(|r| r.create());
            if created.is_err() {
                break;
            }
            best = n;
        }
        best
    }

    /// Confines this process (and what it executes) to `c`. Any step that fails refuses.
    pub(crate) fn apply(c: &Confinement) -> Result<(), Refused> {
        landlock(c)?;
        if !c.network {
            seccomp()?;
        }
        Ok(())
    }

    fn landlock(c: &Confinement) -> Result<(), Refused> {
        let refuse = |e: &dyn std::fmt::Display| Refused(format!("Landlock: {e}"));
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(writes())
            .map_err(|e| refuse(&e))?
            .create()
            .map_err(|e| refuse(&e))?;
        for root in &c.writable {
            let fd =
                PathFd::new(root).map_err(|e| Refused(format!("writable root {}: {e}", root.display())))?;
            let rights = if root.is_dir() {
                writes()
            } else {
                writes() & AccessFs::from_file(ABI::V3)
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(|e| refuse(&e))?;
        }
        // Output thrown away is not a write anywhere.
        let null = PathFd::new("/dev/null").map_err(|e| refuse(&e))?;
        ruleset = ruleset
            .add_rule(PathBeneath::new(null, writes() & AccessFs::from_file(ABI::V3)))
            .map_err(|e| refuse(&e))?;
        let status = ruleset.restrict_self().map_err(|e| refuse(&e))?;
        if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
            return Err(Refused(format!(
                "Landlock is not fully enforced here ({:?})",
                status.ruleset
            )));
        }
        Ok(())
    }

    /// Refuses `socket`/`socketpair` for every family but `AF_UNIX`, and io_uring (whose
    /// operations could open and connect sockets without those syscalls), with `EPERM`.
    fn seccomp() -> Result<(), Refused> {
        let refuse = |e: &dyn std::fmt::Display| Refused(format!("seccomp: {e}"));
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| refuse(&e))?;
        let not_unix = || {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)
                .and_then(|c| SeccompRule::new(vec![c]))
        };
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        let mut numbers = vec![
            (libc::SYS_socket, true),
            (libc::SYS_socketpair, true),
            (libc::SYS_io_uring_setup, false),
            (libc::SYS_io_uring_enter, false),
            (libc::SYS_io_uring_register, false),
        ];
        // The x32 ABI reaches the same calls with bit 30 set in the number (when the kernel
        // has it): the filter refuses those numbers as well.
        if arch == TargetArch::x86_64 {
            let x32: Vec<_> = numbers.iter().map(|&(n, c)| (n | 0x4000_0000, c)).collect();
            numbers.extend(x32);
        }
        for (nr, only_ip) in numbers {
            let rule = if only_ip {
                vec![not_unix().map_err(|e| refuse(&e))?]
            } else {
                Vec::new()
            };
            rules.insert(nr, rule);
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(|e| refuse(&e))?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| refuse(&e))?;
        seccompiler::apply_filter(&program).map_err(|e| refuse(&e))
    }
}

#[cfg(target_os = "linux")]
pub use linux::abi;
#[cfg(target_os = "linux")]
pub(crate) use linux::apply;

/// Other systems have no sandbox: ikigai refuses any mode but `off` at start.
#[cfg(not(target_os = "linux"))]
pub(crate) fn apply(_: &Confinement) -> Result<(), Refused> {
    Err(Refused("the sandbox needs Linux".into()))
}

#[cfg(not(target_os = "linux"))]
pub fn abi() -> u8 {
    0
}
