//! How the `ikigai` binary is linked. On glibc 2.36 or newer (which reads them), its
//! relative relocations are packed (`-z pack-relative-relocs`, DT_RELR): the dynamic
//! loader then reads a few KiB of them at every start instead of about half a MiB of
//! plain entries that stay resident for the whole run. Elsewhere nothing changes.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target == host && target.ends_with("-linux-gnu") && glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc (`ldd --version`: "ldd (…) 2.36") is 2.36 or newer.
fn glibc_reads_relr() -> bool {
    let Ok(out) = Command::new("ldd").arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.lines().next().and_then(|l| l.split_whitespace().last()) else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
