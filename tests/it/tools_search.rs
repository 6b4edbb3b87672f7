//! glob and grep on real trees: result shapes, ordering, ignore files, binary files,
//! non-UTF-8 names, symlink loops, caps and every error they report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;

use crate::tools_util::*;
use serde_json::json;

fn tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(p, "Cargo.toml", "[package]\nname = \"x\"\n");
    write(p, "src/main.rs", "fn main() {\n    helper();\n}\n");
    write(p, "src/lib.rs", "pub fn helper() {}\n// TODO tidy\n");
    write(p, "src/deep/er/mod.rs", "// todo: lower case\n");
    write(p, "README.md", "# x\nTODO docs\n");
    d
}

#[tokio::test]
async fn glob_finds_sorted_relative_paths() {
    let d = tree();
    let c = ctx(d.path());
    let e = run("glob", json!({"pattern": "**/*.rs"}), &c).await;
    assert!(e.success);
    assert_eq!(
        result(&e),
        &json!({"output": "src/deep/er/mod.rs\nsrc/lib.rs\nsrc/main.rs", "count": 3})
    );
    assert_eq!(e.summary, "3 files");

    // `*` does not cross directories; a base path is shown as given.
    let e = run("glob", json!({"pattern": "*.rs", "path": "src"}), &c).await;
    assert_eq!(
        result(&e),
        &json!({"output": "src/lib.rs\nsrc/main.rs", "count": 2})
    );
    let e = run("glob", json!({"pattern": "src/*.{rs,toml}"}), &c).await;
    assert_eq!(result(&e)["count"], 2);
    let e = run("glob", json!({"pattern": "*.toml"}), &c).await;
    assert_eq!(e.summary, "1 file");

    // Absolute base path.
    let abs = d.path().join("src/deep").to_string_lossy().into_owned();
    let e = run("glob", json!({"pattern": "**/*.rs", "path": abs}), &c).await;
    assert_eq!(output(&e), format!("{abs}/er/mod.rs"));
}

#[tokio::test]
async fn glob_no_match_is_zero_not_an_error() {
    let d = tree();
    let e = run("glob", json!({"pattern": "**/*.py"}), &ctx(d.path())).await;
    assert!(e.success);
    assert_eq!(result(&e), &json!({"output": "", "count": 0}));
    assert_eq!(e.summary, "0 files");
    let e = run("glob", json!({"pattern": "nodir/**/*.rs"}), &ctx(d.path())).await;
    assert_eq!(result(&e)["count"], 0);
}

#[tokio::test]
async fn glob_errors() {
    let d = tree();
    let c = ctx(d.path());
    let e = run("glob", json!({"pattern": "src/[a"}), &c).await;
    assert!(
        op_error(&e).starts_with("Invalid glob pattern \"src/[a\""),
        "{}",
        op_error(&e)
    );
    let e = run("glob", json!({"pattern": "*.rs", "path": "missing"}), &c).await;
    assert_eq!(op_error(&e), "Path not found: missing");
    let e = run("glob", json!({"pattern": "*.rs", "path": "Cargo.toml"}), &c).await;
    assert_eq!(op_error(&e), "Not a directory: Cargo.toml");
    let e = run("glob", json!({"pattern": "/etc/*"}), &c).await;
    assert!(op_error(&e).contains("must be relative"));
    let e = run("glob", json!({"pattern": "../*.rs"}), &c).await;
    assert!(op_error(&e).contains("must not contain `..`"));
    let e = run("glob", json!({}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("missing required parameter `pattern`"));
    let e = run("glob", json!({"pattern": 3}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`pattern` must be a string"));
    // An unknown parameter is ignored and named in the result (issue 22).
    let e = run("glob", json!({"pattern": "*", "base": "x"}), &c).await;
    assert!(e.success, "{}", e.envelope);
    assert_eq!(
        e.envelope.note.as_deref(),
        Some("ignored unknown parameter \"base\"")
    );
}

#[tokio::test]
async fn gitignored_files_and_dot_git_are_skipped_without_a_repo() {
    let d = tree();
    let p = d.path();
    write(p, ".gitignore", "target/\n*.log\n");
    write(p, "src/.ignore", "generated.rs\n");
    write(p, "target/debug/build.rs", "// TODO built\n");
    write(p, "debug.log", "TODO log\n");
    write(p, "src/generated.rs", "// TODO generated\n");
    write(p, ".git/config", "TODO git\n");
    write(p, ".github/ci.yml", "TODO ci\n");
    let c = ctx(p);
    let e = run("glob", json!({"pattern": "**/*"}), &c).await;
    let out = output(&e);
    assert_eq!(
        out,
        ".github/ci.yml\n.gitignore\nCargo.toml\nREADME.md\nsrc/.ignore\nsrc/deep/er/mod.rs\nsrc/lib.rs\nsrc/main.rs"
    );
    let e = run("grep", json!({"pattern": "TODO"}), &c).await;
    assert_eq!(
        output(&e),
        ".github/ci.yml:1: TODO ci\nREADME.md:2: TODO docs\nsrc/lib.rs:2: // TODO tidy"
    );
    assert_eq!(result(&e)["count"], 3);
}

#[tokio::test]
async fn grep_shapes_and_options() {
    let d = tree();
    let c = ctx(d.path());
    let e = run("grep", json!({"pattern": "fn \\w+\\(\\)"}), &c).await;
    assert_eq!(
        result(&e),
        &json!({"output": "src/lib.rs:1: pub fn helper() {}\nsrc/main.rs:1: fn main() {", "count": 2})
    );
    assert_eq!(e.summary, "2 matches in 2 files");

    let e = run("grep", json!({"pattern": "todo", "case_insensitive": true}), &c).await;
    assert_eq!(result(&e)["count"], 3);
    let e = run("grep", json!({"pattern": "todo"}), &c).await;
    assert_eq!(output(&e), "src/deep/er/mod.rs:1: // todo: lower case");

    let e = run("grep", json!({"pattern": "TODO", "glob": "*.md"}), &c).await;
    assert_eq!(output(&e), "README.md:2: TODO docs");
    let e = run(
        "grep",
        json!({"pattern": "todo", "glob": "src/*.rs", "case_insensitive": true}),
        &c,
    )
    .await;
    assert_eq!(output(&e), "src/lib.rs:2: // TODO tidy");

    let e = run("grep", json!({"pattern": "helper", "path": "src/main.rs"}), &c).await;
    assert_eq!(output(&e), "src/main.rs:2:     helper();");
    let e = run("grep", json!({"pattern": "helper", "path": "src"}), &c).await;
    assert_eq!(result(&e)["count"], 2);

    let e = run("grep", json!({"pattern": "nothing-matches-this"}), &c).await;
    assert_eq!(result(&e), &json!({"output": "", "count": 0}));
    assert_eq!(e.summary, "no matches");
}

#[tokio::test]
async fn grep_errors() {
    let d = tree();
    let c = ctx(d.path());
    let e = run("grep", json!({"pattern": "fn ("}), &c).await;
    let msg = op_error(&e);
    assert!(msg.starts_with("Invalid regex \"fn (\": "), "{msg}");
    assert!(
        msg.contains("unclosed group"),
        "the regex engine's message is quoted: {msg}"
    );
    let e = run("grep", json!({"pattern": "x", "path": "nope"}), &c).await;
    assert_eq!(op_error(&e), "Path not found: nope");
    let e = run("grep", json!({"pattern": "x", "glob": "{a"}), &c).await;
    assert!(op_error(&e).starts_with("Invalid glob \"{a\""));
    let e = run("grep", json!({"pattern": ""}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`pattern` must not be empty"));
    let e = run("grep", json!({"pattern": "x", "case_insensitive": "maybe"}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`case_insensitive` must be a boolean"));
}

#[tokio::test]
async fn grep_skips_binary_files() {
    let d = tree();
    let mut bin = b"TODO in binary\n".to_vec();
    bin.extend_from_slice(&[0u8, 1, 2, 3]);
    bin.extend_from_slice(b"\nTODO again\n");
    write(d.path(), "blob.bin", &bin);
    let c = ctx(d.path());
    let e = run("grep", json!({"pattern": "TODO"}), &c).await;
    assert!(!output(&e).contains("blob.bin"));
    let e = run("grep", json!({"pattern": "TODO", "path": "blob.bin"}), &c).await;
    assert_eq!(
        op_error(&e),
        "Binary file: blob.bin (grep searches text files only)"
    );
}

#[tokio::test]
async fn non_utf8_names_are_shown_lossily() {
    let d = tree();
    let name = OsStr::from_bytes(b"bad\xffname.rs");
    std::fs::write(d.path().join("src").join(name), "fn odd() {}\n").unwrap();
    let c = ctx(d.path());
    let e = run("glob", json!({"pattern": "src/*.rs"}), &c).await;
    assert!(
        output(&e).lines().any(|l| l == "src/bad\u{FFFD}name.rs"),
        "{}",
        output(&e)
    );
    assert_eq!(result(&e)["count"], 3);
    let e = run("grep", json!({"pattern": "odd"}), &c).await;
    assert_eq!(output(&e), "src/bad\u{FFFD}name.rs:1: fn odd() {}");
}

#[tokio::test]
async fn symlink_loops_do_not_hang_or_crash() {
    let d = tree();
    let p = d.path();
    symlink("self", p.join("self")).unwrap();
    symlink("b", p.join("a")).unwrap();
    symlink("a", p.join("b")).unwrap();
    symlink("..", p.join("src/up")).unwrap();
    let c = ctx(p);
    let e = run("glob", json!({"pattern": "**/*.rs"}), &c).await;
    assert_eq!(result(&e)["count"], 3);
    let e = run("glob", json!({"pattern": "*"}), &c).await;
    assert!(output(&e).lines().any(|l| l == "self"));
    let e = run("grep", json!({"pattern": "helper"}), &c).await;
    assert_eq!(result(&e)["count"], 2);
    let e = run("grep", json!({"pattern": "x", "path": "self"}), &c).await;
    assert!(op_error(&e).contains("symbolic links"), "{}", op_error(&e));
}

#[tokio::test]
async fn long_results_are_capped_as_a_sorted_prefix() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..2000 {
        write(d.path(), &format!("f{i:05}.txt"), "needle here\n");
    }
    let mut c = ctx(d.path());
    c.max_output_size = 4096;
    let e = run("glob", json!({"pattern": "*.txt"}), &c).await;
    let r = result(&e);
    assert_eq!(r["count"], 2000);
    assert_eq!(r["truncated"], true);
    let out = r["output"].as_str().unwrap();
    assert!(out.len() <= 4096, "{}", out.len());
    assert!(out.starts_with("f00000.txt\nf00001.txt\n"));
    assert!(out.ends_with(" of 22000 bytes shown]"), "{out}");

    let e = run("grep", json!({"pattern": "needle"}), &c).await;
    let r = result(&e);
    assert_eq!(r["count"], 2000);
    assert_eq!(r["truncated"], true);
    let out = r["output"].as_str().unwrap();
    assert!(out.len() <= 4096);
    assert!(out.starts_with("f00000.txt:1: needle here\nf00001.txt:1: needle here\n"));
    assert!(out.contains("[output truncated: "));

    // A line longer than 1000 bytes is shortened.
    write(
        d.path(),
        "long.js",
        format!("{}needle{}\n", "a".repeat(10), "b".repeat(5000)),
    );
    let e = run(
        "grep",
        json!({"pattern": "needle", "path": "long.js"}),
        &ctx(d.path()),
    )
    .await;
    let out = output(&e);
    assert!(out.ends_with(" […4016 more bytes]"), "{out}");
}

#[tokio::test]
async fn searches_that_run_out_of_time_are_timeouts() {
    let d = tree();
    let mut c = ctx(d.path());
    c.timeout = std::time::Duration::ZERO;
    let e = run("glob", json!({"pattern": "**/*.rs"}), &c).await;
    assert!(tool_failure(&e, "TOOL_TIMEOUT").starts_with("Search timed out after 0s"));
    assert!(e.envelope.to_value()["partial_output"].is_string());
    let e = run("grep", json!({"pattern": "TODO"}), &c).await;
    assert!(tool_failure(&e, "TOOL_TIMEOUT").contains("narrow the path or pattern"));
}

/// A hostile tree holds a FIFO (an archive can carry one) and the model greps it by name:
/// opening it would block until a writer comes, past any timeout, holding the turn. The
/// call returns at once with an error instead, as `file_read` does.
#[tokio::test]
async fn grep_refuses_a_fifo_instead_of_hanging() {
    let d = tree();
    nix::unistd::mkfifo(
        &d.path().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let c = ctx(d.path());
    let e = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        run("grep", json!({"pattern": "x", "path": "pipe"}), &c),
    )
    .await;
    let Ok(e) = e else {
        // Let the blocked reader go (a writer comes and leaves) so the runtime can end.
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .open(d.path().join("pipe")),
        );
        panic!("grep on a FIFO hung past two minutes");
    };
    assert!(
        op_error(&e).contains("Not a regular file: pipe"),
        "{}",
        op_error(&e)
    );
    // Walking a folder skips it, as before.
    let e = run("grep", json!({"pattern": "TODO"}), &c).await;
    assert!(e.success);
}

#[tokio::test]
async fn no_search_starts_or_reads_through_a_link_beneath_its_folder() {
    let d = tree();
    let p = d.path().canonicalize().unwrap();
    let out = tempfile::tempdir().unwrap();
    write(out.path(), "secret.rs", "SECRET outside\n");
    symlink(out.path(), p.join("link")).unwrap();
    let c = ctx(&p);
    // A pattern's literal start is where the walk begins: not through a link.
    let e = run("glob", json!({"pattern": "link/*.rs"}), &c).await;
    assert_eq!(result(&e)["count"], 0, "{}", output(&e));
    let e = run("glob", json!({"pattern": "**/*.rs"}), &c).await;
    assert_eq!(result(&e)["count"], 3);
    let e = run("grep", json!({"pattern": "SECRET"}), &c).await;
    assert_eq!(result(&e)["count"], 0);

    // The folder judged was `src`; by the time the search runs it is a link out.
    let mut c = ctx(&p);
    c.pinned = Some(ikigai::tools::Pinned {
        given: "src".into(),
        real: Some(p.join("src")),
    });
    std::fs::rename(p.join("src"), p.join("src.was")).unwrap();
    symlink(out.path(), p.join("src")).unwrap();
    for (tool, args) in [
        ("grep", json!({"pattern": "SECRET", "path": "src"})),
        ("glob", json!({"pattern": "*.rs", "path": "src"})),
    ] {
        let e = run(tool, args, &c).await;
        assert!(
            op_error(&e).contains("changed while it was being reached"),
            "{tool}: {}",
            op_error(&e)
        );
    }
}
