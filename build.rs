//! How the `ikigai` binary is linked.
//! - On glibc 2.36 or newer (which reads them), its relative relocations are packed
//!   (`-z pack-relative-relocs`, DT_RELR): the dynamic loader then reads a few KiB of them
//!   at every start instead of about half a MiB of plain entries that stay resident for
//!   the whole run.
//! - Release builds linked by rustc's own lld (x86_64 Linux, Rust 1.90+, no linker of the
//!   user's choosing) place the functions a short run executes first in the code
//!   (`link/startup-text.ld`, made by `scripts/gen-startup-order.sh`): the kernel maps code
//!   in whole page-cache folios, so hot functions spread over the whole binary made a
//!   one-turn `-p` run map most of its 19 MiB of code; together they fit in under 4 MiB.
//!   A function the script names that no longer exists matches nothing; the link never
//!   fails for it.
//!
//! Elsewhere nothing changes.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/startup-text.ld");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target == host && target.ends_with("-linux-gnu") && glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if release && target == host && target == "x86_64-unknown-linux-gnu" && links_with_rust_lld() {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let script = std::path::Path::new(&dir).join("link/startup-text.ld");
        let path = script.to_string_lossy();
        if script.is_file() && !path.contains(',') {
            println!("cargo:rustc-link-arg-bin=ikigai=-Wl,-T,{path}");
        }
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
    at_least(version, (2, 36))
}

/// Whether the final link is rustc's default for x86_64 Linux since Rust 1.90, its own
/// lld (which takes the ordering script): no linker configured for the target
/// (`RUSTC_LINKER`) and no linker flags among the rustflags (mold, bfd, gold, …).
fn links_with_rust_lld() -> bool {
    if std::env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("link") {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .nth(1)
        .is_some_and(|v| at_least(v, (1, 90)))
}

/// Whether a dotted version ("2.36", "1.95.0-nightly") is at least `(major, minor)`.
fn at_least(version: &str, want: (u32, u32)) -> bool {
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= want
}
