//! The sandbox as the launcher applies it to itself just before it executes a tool (Linux),
//! in this order, each step refusing the tool when it fails:
//!
//! 1. the private mount table (`mounts.rs`) when the policy names one: every mount
//!    read-only but the writable folders, so no metadata changes outside them, and a
//!    devpts of its own;
//! 2. capabilities down to the few an ordinary root build uses (`caps.rs`);
//! 3. Landlock: every filesystem write right away except beneath the writable roots (and on
//!    `/dev/null`, and the private pseudo-terminals), reads stay free; device ioctls only on
//!    those (ABI 5); signals only to the tool's own processes (ABI 6); other processes'
//!    memory, environment and open files out of reach (Landlock's ptrace scoping);
//! 4. seccomp (`filter.rs`): no typing into a terminal, no set-user/group-ID bit, no
//!    io_uring, and with the network off no socket but a Unix one.
//!
//! All of it holds for the tool and everything it starts, root included. Self-contained
//! (std, nix, rustix, serde, landlock, seccompiler), like `exec.rs`; decides nothing: what
//! is writable and what this kernel can enforce is resolved by ikigai
//! (`permissions::sandbox`, `permissions::kernel`) and arrives in the policy as a
//! `Confinement` (`policy::confinement`).

use super::Confinement;

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
    use landlock::{
        ABI, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope,
    };

    use super::super::{caps, filter, mounts};
    use super::{Confinement, Refused};

    /// The write rights every rule set handles (ABI 3: writes, renames across folders,
    /// truncation), and the device-ioctl right when asked (ABI 5).
    fn handled(c: &Confinement) -> BitFlags<AccessFs> {
        let mut rights = AccessFs::from_write(ABI::V3);
        if c.ioctl_dev {
            rights |= AccessFs::IoctlDev;
        }
        rights
    }

    /// What may be done beneath a writable root: every handled right but making device
    /// nodes and device ioctls.
    fn beneath_roots(c: &Confinement) -> BitFlags<AccessFs> {
        handled(c) & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
    }

    /// The rights a non-directory (a file root, a device) can hold.
    fn file_rights() -> BitFlags<AccessFs> {
        AccessFs::from_file(ABI::V5)
    }

    /// Confines this process (and what it executes) to `c`. Any step that fails refuses.
    pub(crate) fn apply(c: &Confinement) -> Result<(), Refused> {
        if let Some(ns) = &c.namespace {
            // Before Landlock, which forbids joining a mount namespace from then on.
            mounts::join(ns).map_err(|e| Refused(format!("private mounts: {e}")))?;
        }
        caps::restrict().map_err(Refused)?;
        landlock(c)?;
        filter::install(filter::Refuse {
            sandbox: true,
            network: !c.network,
        })
        .map_err(Refused)
    }

    /// Without a sandbox: a process that may act on any terminal (root) may still not type
    /// into one. An ordinary user's process needs nothing here: in a session of its own it
    /// has no terminal, and the kernel lets no one else type into one.
    pub(crate) fn terminal_only() -> Result<(), Refused> {
        if caps::can_type_anywhere() {
            filter::install(filter::Refuse::default()).map_err(Refused)?;
        }
        Ok(())
    }

    fn landlock(c: &Confinement) -> Result<(), Refused> {
        let refuse = |e: &dyn std::fmt::Display| Refused(format!("Landlock: {e}"));
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(handled(c))
            .map_err(|e| refuse(&e))?;
        if c.scoped_signals {
            ruleset = ruleset.scope(Scope::Signal).map_err(|e| refuse(&e))?;
        }
        let mut ruleset = ruleset.create().map_err(|e| refuse(&e))?;
        for root in &c.writable {
            let fd =
                PathFd::new(root).map_err(|e| Refused(format!("writable root {}: {e}", root.display())))?;
            let rights = if root.is_dir() {
                beneath_roots(c)
            } else {
                beneath_roots(c) & file_rights()
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(|e| refuse(&e))?;
        }
        // Output thrown away is not a write anywhere; `isatty` on it asks an ioctl.
        let mut devices = vec![("/dev/null", handled(c) & file_rights())];
        if c.namespace.is_some() {
            // The tool's own pseudo-terminals (`script`, `expect`, a pty in a test): the
            // devpts is private, the terminal ikigai runs in is not there.
            // `/dev/tty` is the tool's own controlling terminal, one of those, if any.
            let pty = handled(c) & (AccessFs::WriteFile | AccessFs::IoctlDev);
            devices.push(("/dev/pts", pty));
            devices.push(("/dev/ptmx", pty));
            devices.push(("/dev/tty", pty));
        }
        for (path, rights) in devices {
            match PathFd::new(path) {
                Ok(fd) => {
                    ruleset = ruleset
                        .add_rule(PathBeneath::new(fd, rights))
                        .map_err(|e| refuse(&e))?;
                }
                Err(e) if path == "/dev/null" => return Err(refuse(&e)),
                Err(_) => {}
            }
        }
        let status = ruleset.restrict_self().map_err(|e| refuse(&e))?;
        if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
            return Err(Refused(format!(
                "Landlock is not fully enforced here ({:?})",
                status.ruleset
            )));
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{apply, terminal_only};

/// Other systems have no sandbox: ikigai refuses any mode but `off` at start.
#[cfg(not(target_os = "linux"))]
pub(crate) fn apply(_: &Confinement) -> Result<(), Refused> {
    Err(Refused("the sandbox needs Linux".into()))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn terminal_only() -> Result<(), Refused> {
    Ok(())
}
