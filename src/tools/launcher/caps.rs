//! The capabilities a sandboxed tool keeps (Linux): those an ordinary build, test or
//! package install run as root uses — owning and reading files, `chown`, `setuid` to
//! another user, binding low ports, raw sockets for `ping`, `kill`, `chroot` — and no
//! other. Everything else is dropped from the launcher's bounding, permitted, effective
//! and inheritable sets before the tool runs, so neither the tool nor anything it executes
//! has it: loading kernel modules, raw disk and port I/O (`SG_IO`), making device nodes,
//! setting file capabilities, `chattr +i`, typing into terminals (`TIOCSTI` for root),
//! reading other processes' memory maps and environment (`CAP_PERFMON`, `CAP_SYS_ADMIN`),
//! opening files by handle, mounting. An allowlist: a capability a newer kernel adds is
//! dropped too. Without capabilities (an ordinary user) there is nothing to drop.
//! Self-contained (std, rustix), like `exec.rs`.

use rustix::thread::{CapabilitySet, CapabilitySets};

/// What a sandboxed tool keeps.
pub(crate) fn kept() -> CapabilitySet {
    CapabilitySet::CHOWN
        | CapabilitySet::DAC_OVERRIDE
        | CapabilitySet::FOWNER
        | CapabilitySet::FSETID
        | CapabilitySet::KILL
        | CapabilitySet::SETGID
        | CapabilitySet::SETUID
        | CapabilitySet::NET_BIND_SERVICE
        | CapabilitySet::NET_RAW
        | CapabilitySet::SYS_CHROOT
        | CapabilitySet::AUDIT_WRITE
}

/// Drops every capability but `kept()` from this process, for good.
pub(crate) fn restrict() -> Result<(), String> {
    let keep = kept();
    let now = rustix::thread::capabilities(None).map_err(|e| format!("cannot read the capabilities: {e}"))?;
    // The bounding set limits what any later execve can grant (a set-user-ID root program,
    // file capabilities); dropping from it needs CAP_SETPCAP, which only a process that has
    // capabilities to drop holds.
    if now.effective.contains(CapabilitySet::SETPCAP) {
        for n in 0..64 {
            let cap = CapabilitySet::from_bits_retain(1 << n);
            if keep.contains(cap) {
                continue;
            }
            match rustix::thread::remove_capability_from_bounding_set(cap) {
                Ok(()) => {}
                // Past the last capability this kernel knows.
                Err(rustix::io::Errno::INVAL) => break,
                Err(e) => return Err(format!("cannot drop capability {n}: {e}")),
            }
        }
    }
    match rustix::thread::clear_ambient_capability_set() {
        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(format!("cannot clear the ambient capabilities: {e}")),
    }
    let sets = CapabilitySets {
        effective: now.effective & keep,
        permitted: now.permitted & keep,
        inheritable: now.inheritable & keep,
    };
    if sets != now {
        rustix::thread::set_capabilities(None, sets).map_err(|e| format!("cannot drop capabilities: {e}"))?;
    }
    Ok(())
}

/// Whether this process may act on any terminal (`CAP_SYS_ADMIN`): then it could type into
/// one it is not attached to, and the launcher refuses that ioctl even without a sandbox.
pub(crate) fn can_type_anywhere() -> bool {
    rustix::thread::capabilities(None).is_ok_and(|c| c.effective.contains(CapabilitySet::SYS_ADMIN))
}
