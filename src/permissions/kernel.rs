//! What the running kernel can enforce for the sandbox: the Landlock ABI (probed by
//! creating rule sets, which asks the kernel and restricts nothing) and whether seccomp is
//! there. `sandbox::resolve` refuses a mode the kernel cannot enforce from this; the
//! launcher only applies what was resolved. Reads; confines nothing.

/// The Landlock ABI the filesystem rules need: ABI 3 (Linux 6.2) is the first that
/// restricts `truncate(2)`; an older kernel would let a tool truncate any file it may open.
pub const MIN_ABI: u8 = 3;

/// What the running kernel offers.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    pub landlock_abi: u8,
    pub seccomp: bool,
}

/// What this kernel can enforce: the Landlock ABI (lowered to `pretend`, a test setting)
/// and whether seccomp is there.
pub(crate) fn probe(pretend: Option<u8>) -> Kernel {
    let abi = landlock_abi();
    let seccomp = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
    Kernel {
        landlock_abi: pretend.map_or(abi, |p| p.min(abi)),
        seccomp,
    }
}

/// The highest Landlock ABI (up to 6, the last one the sandbox uses) this kernel can
/// enforce, 0 for none. Creating a rule set restricts nothing; it only asks the kernel.
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> u8 {
    use landlock::{ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
    let strict = || Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    let fs = |abi| {
        strict()
            .handle_access(AccessFs::from_write(abi))
            .and_then(|r| r.create())
            .is_ok()
    };
    let mut best = 0;
    for (n, abi) in [(1, ABI::V1), (2, ABI::V2), (3, ABI::V3)] {
        if !fs(abi) {
            return best;
        }
        best = n;
    }
    let checks: [(u8, bool); 3] = [
        (
            4,
            strict()
                .handle_access(AccessNet::from_all(ABI::V4))
                .and_then(|r| r.create())
                .is_ok(),
        ),
        (
            5,
            strict()
                .handle_access(AccessFs::IoctlDev)
                .and_then(|r| r.create())
                .is_ok(),
        ),
        (
            6,
            strict()
                .handle_access(AccessFs::from_write(ABI::V3))
                .and_then(|r| r.scope(Scope::Signal))
                .and_then(|r| r.create())
                .is_ok(),
        ),
    ];
    for (n, ok) in checks {
        if !ok {
            break;
        }
        best = n;
    }
    best
}

/// Other systems have no Landlock.
#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> u8 {
    0
}
