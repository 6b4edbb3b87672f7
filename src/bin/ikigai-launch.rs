//! `ikigai-launch`: the tool launcher as a small executable of its own — the same code as
//! ikigai's launcher mode (`src/tools/launcher/exec.rs`), without loading the whole ikigai
//! binary (its C++ runtime, its relocations), so that every tool call pays for a small
//! exec. ikigai starts its tools through it when it is installed beside ikigai; it is not
//! run by hand.

// The kernel probe (`abi`) is ikigai's, at start; the launcher only applies.
#[path = "../tools/launcher/caps.rs"]
mod caps;
#[allow(dead_code, unused_imports)]
#[path = "../tools/launcher/confine.rs"]
mod confine;
#[path = "../tools/launcher/exec.rs"]
mod exec;
#[path = "../tools/launcher/filter.rs"]
mod filter;
#[allow(dead_code)]
#[path = "../tools/launcher/mounts.rs"]
mod mounts;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if !exec::is_launch(&args) {
        eprintln!("ikigai-launch: ikigai starts its tools through this program; it is not run by hand");
        return ExitCode::from(2);
    }
    ExitCode::from(exec::run(args))
}
