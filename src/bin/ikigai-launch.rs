//! `ikigai-launch`: the tool launcher as a small executable of its own — the same code as
//! ikigai's launcher mode (`src/tools/launcher/exec.rs`), without loading the whole ikigai
//! binary (its C++ runtime, its relocations), so that every tool call pays for a small
//! exec. ikigai starts its tools through it when it is installed beside ikigai; it is not
//! run by hand.

// The kernel probe is ikigai's (`permissions::kernel`), at start; the launcher only
// applies the `Confinement` it is given.
#[path = "../tools/launcher/caps.rs"]
mod caps;
#[allow(dead_code, unused_imports)]
#[path = "../tools/launcher/confine.rs"]
mod confine;
#[path = "../policy/confinement.rs"]
mod confinement;
#[path = "../tools/launcher/exec.rs"]
mod exec;
#[path = "../tools/launcher/filter.rs"]
mod filter;
#[allow(dead_code)]
#[path = "../tools/launcher/mounts.rs"]
mod mounts;

use confinement::{Confinement, Namespace};

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if !exec::is_launch(&args) {
        eprintln!("ikigai-launch: ikigai starts its tools through this program; it is not run by hand");
        return ExitCode::from(2);
    }
    ExitCode::from(exec::run(args))
}
