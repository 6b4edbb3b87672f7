//! The seccomp filters the launcher installs in a tool's process just before it executes
//! the tool (Linux), refusing with `EPERM`:
//!
//! - always in the sandbox, and without it whenever the process may act on any terminal
//!   (`CAP_SYS_ADMIN`, root): `ioctl` `TIOCSTI` (type into a terminal) and `TIOCLINUX`
//!   (paste a console selection), compared on the low 32 bits the kernel reads;
//! - in the sandbox: setting the set-user-ID or set-group-ID bit — `chmod`, `fchmod`,
//!   `fchmodat`, `fchmodat2`, and a file created with one (`open`, `openat`, `creat`,
//!   `mknod`, `mknodat`) — by a masked compare of the mode; `openat2`, whose mode hides
//!   behind a pointer, fails with `ENOSYS` as on an older kernel (callers fall back to
//!   `openat`); io_uring, whose operations bypass system-call filters altogether;
//! - with the network off: every socket that is not a Unix one.
//!
//! The x32 ABI's numbers (bit 30 set) are refused alike; any other architecture's calls
//! kill the process (seccompiler's architecture check). Self-contained (std, seccompiler,
//! nix's libc), like `exec.rs`; decides nothing.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// What a filter refuses beyond the terminal ioctls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Refuse {
    /// Set-user/group-ID bits, `openat2` and io_uring (the sandbox).
    pub(crate) sandbox: bool,
    /// Every socket but a Unix one (`sandbox_network = false`).
    pub(crate) network: bool,
}

/// The x32 ABI reaches the same calls with bit 30 set in the number.
const X32: i64 = 0x4000_0000;
/// x32's own number for `ioctl` (its argument layout differs from x86-64's).
const X32_IOCTL: i64 = X32 + 514;

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// Installs the filters for `refuse`. Any failure refuses (the tool does not run).
pub(crate) fn install(refuse: Refuse) -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("seccomp: {e}"))?;
    let mut eperm = Rules::new();
    terminal(&mut eperm)?;
    if refuse.sandbox {
        set_id_bits(&mut eperm)?;
        for nr in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            eperm.insert(nr, Vec::new());
        }
    }
    if refuse.network {
        for nr in [libc::SYS_socket, libc::SYS_socketpair] {
            eperm.insert(
                nr,
                vec![rule(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?],
            );
        }
    }
    if arch == TargetArch::x86_64 {
        let x32: Vec<(i64, Vec<SeccompRule>)> = eperm
            .iter()
            .filter(|(nr, _)| **nr != libc::SYS_ioctl)
            .map(|(nr, r)| (nr | X32, r.clone()))
            .collect();
        if let Some(ioctl) = eperm.get(&libc::SYS_ioctl).cloned() {
            eperm.insert(X32_IOCTL, ioctl);
        }
        eperm.extend(x32);
    }
    apply(eperm, libc::EPERM, arch)?;
    if refuse.sandbox {
        let mut enosys = Rules::new();
        enosys.insert(libc::SYS_openat2, Vec::new());
        if arch == TargetArch::x86_64 {
            enosys.insert(libc::SYS_openat2 | X32, Vec::new());
        }
        apply(enosys, libc::ENOSYS, arch)?;
    }
    Ok(())
}

/// `ioctl(fd, TIOCSTI | TIOCLINUX, …)`: the request is an `unsigned int` to the kernel, so
/// only its low 32 bits are compared (high bits set do not get past).
fn terminal(rules: &mut Rules) -> Result<(), String> {
    let request = |r: u64| -> Result<SeccompRule, String> {
        rule(vec![
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, r)
                .map_err(|e| format!("seccomp: {e}"))?,
        ])
    };
    // An unsigned long on glibc, an int on musl.
    #[allow(clippy::unnecessary_cast)]
    let (sti, linux) = (libc::TIOCSTI as u64, libc::TIOCLINUX as u64);
    rules.insert(libc::SYS_ioctl, vec![request(sti)?, request(linux)?]);
    Ok(())
}

/// A mode argument holding `S_ISUID` or `S_ISGID`, for every call that sets a mode.
fn set_id_bits(rules: &mut Rules) -> Result<(), String> {
    for (nr, mode_arg) in [
        (libc::SYS_chmod, 1),
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (libc::SYS_fchmodat2, 2),
        (libc::SYS_creat, 1),
        (libc::SYS_open, 2),
        (libc::SYS_openat, 3),
        (libc::SYS_mknod, 1),
        (libc::SYS_mknodat, 2),
    ] {
        let mut either = Vec::new();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            either.push(rule(vec![
                SeccompCondition::new(
                    mode_arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(u64::from(bit)),
                    u64::from(bit),
                )
                .map_err(|e| format!("seccomp: {e}"))?,
            ])?);
        }
        rules.insert(nr, either);
    }
    Ok(())
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| format!("seccomp: {e}"))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| format!("seccomp: {e}"))
}

/// Compiles and installs one filter answering `errno` to the calls in `rules`.
fn apply(rules: Rules, errno: i32, arch: TargetArch) -> Result<(), String> {
    let refuse = |e: &dyn std::fmt::Display| format!("seccomp: {e}");
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| refuse(&e))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| refuse(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| refuse(&e))
}
