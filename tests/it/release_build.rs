//! What keeps a release build's start small stays (issue 23): the release profile's
//! settings, and the startup ordering script `build.rs` hands to release links
//! (`link/startup-text.ld`) is well formed, still names what a `-p` turn runs and was made
//! for today's dependencies. The memory itself is measured by `scripts/bench-process.sh`,
//! not here (no timing or size assertions on a shared machine).

use std::path::Path;

fn repo_file(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

#[test]
fn the_release_profile_keeps_its_settings() {
    let cargo: toml::Table = toml::from_str(&repo_file("Cargo.toml")).unwrap();
    let release = &cargo["profile"]["release"];
    assert_eq!(release["lto"].as_str(), Some("fat"));
    assert_eq!(release["codegen-units"].as_integer(), Some(1));
    assert_eq!(release["strip"].as_str(), Some("symbols"));
    // Tools and tests rely on unwinding (a panicking tool thread is caught).
    assert_eq!(release["panic"].as_str(), Some("unwind"));
    let build = repo_file("build.rs");
    assert!(
        build.contains("link/startup-text.ld"),
        "build.rs no longer passes the ordering script"
    );
    assert!(
        build.contains("pack-relative-relocs"),
        "build.rs no longer packs relocations"
    );
}

#[test]
fn the_startup_ordering_script_is_well_formed_and_names_a_turn() {
    let script = repo_file("link/startup-text.ld");
    let body = script.split_once("*/").map(|(_, b)| b).unwrap_or(&script);
    let mut lines = body.lines().map(str::trim).filter(|l| !l.is_empty());
    assert_eq!(lines.next(), Some("SECTIONS {"));
    assert_eq!(lines.next(), Some(".text.startup_order : {"));
    let rest: Vec<&str> = lines.collect();
    let n = rest.len();
    assert!(
        n > 1000,
        "only {n} lines: the script lost the run it was made from"
    );
    assert_eq!(&rest[n - 2..], ["}", "} INSERT BEFORE .text;"]);
    let mut names = Vec::new();
    for line in &rest[..n - 2] {
        let inner = line
            .strip_prefix("*(")
            .and_then(|l| l.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{line}"));
        for pattern in inner.split(' ') {
            assert!(pattern.starts_with(".text."), "{line}");
            assert!(!pattern.contains(['(', ')', '"', '{', '}', ';']), "{line}");
        }
        names.push(inner);
    }
    // What every run executes: main, the start of the app, the chat turn, a wire format's
    // request body and stream decoding, the session store, the glob tool.
    for needle in [
        "_ZN6ikigai4main17h",
        "6ikigai3app3run",
        "6ikigai5agent4turn",
        "8provider4body6Source5small",
        "Accumulator$u20$as$u20$ikigai..provider..decode..Decoder",
        "6ikigai5store6sqlite",
        "sqlite3VdbeExec",
        "5tools4glob",
    ] {
        assert!(
            names.iter().any(|n| n.contains(needle)),
            "no pattern names {needle}"
        );
    }
}

/// The startup order names generic instances by their symbol hashes, and those change
/// with the dependencies (cargo mixes every dependency's metadata into each crate's): a
/// list made for another Cargo.lock leaves hundreds of a turn's functions scattered
/// through the code again (measured on 2026-11-27: 465 of 2,744 functions, a one-tool
/// `-p` turn 15.4 MiB peak RSS instead of 10.7). A dependency change must come with the
/// regenerated list.
#[test]
fn the_startup_order_was_made_for_these_dependencies() {
    use sha2::{Digest, Sha256};
    let script = repo_file("link/startup-text.ld");
    let made_for = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("Made for Cargo.lock sha256 "))
        .expect("link/startup-text.ld does not say which Cargo.lock it was made for");
    let (recorded, rustc) = made_for.split_once(" and ").unwrap();
    assert!(rustc.starts_with("rustc "), "{made_for}");
    let lock = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let today: String = Sha256::digest(&lock).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        recorded, today,
        "Cargo.lock changed since link/startup-text.ld was made: run scripts/gen-startup-order.sh \
         and commit the list (README > Performance > Memory at start)"
    );
}
