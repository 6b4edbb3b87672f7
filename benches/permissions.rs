//! Criterion benches for the permission decision (issue 34 §2): a 1 KB `bash` line judged
//! with a deny rule in force (the bound is 100 µs), and the decisions every ordinary tool
//! call pays — a read-only `git status` in a repository of 2,000 tracked files (its git
//! configuration and index are read), a short command, a file write, a `web_fetch` URL.
//! Run on the old code with `--save-baseline main`, then on the new one with
//! `--baseline main`: before and after in one run.

use std::path::Path;
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};
use ikigai::permissions::rule::{Rule, Source};
use ikigai::permissions::{Mode, Policy, Rules};

fn rules(allow: &[&str], deny: &[&str]) -> Rules {
    let parse = |v: &[&str]| {
        v.iter()
            .map(|t| Rule::parse(t, Source::User, None).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    };
    Rules {
        allow: parse(allow),
        ask: Vec::new(),
        deny: parse(deny),
    }
}

fn bash(cmd: &str) -> String {
    serde_json::json!({ "command": cmd }).to_string()
}

/// A realistic 1 KB line: a pipeline, a loop, quoting, a substitution, redirections.
fn kilobyte_line() -> String {
    let mut line = String::new();
    let mut n = 0;
    while line.len() < 1000 {
        line.push_str(&format!(
            "cargo test -p crate_{n} --lib -- --nocapture 2>&1 | grep -n \"test result\" | head -n 5 && "
        ));
        n += 1;
    }
    line.push_str("ls -la src");
    line
}

/// A git repository with 2,000 tracked files (an index to read) and a plain config.
fn repository(root: &Path) {
    for d in 0..20 {
        let dir = root.join(format!("src{d:02}"));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:03}.rs")), format!("// {d} {f}\n"))
                .unwrap_or_else(|e| panic!("write: {e}"));
        }
    }
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
}

fn decisions(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    repository(dir.path());
    let deny = Policy::new(rules(&[], &["bash(rm *)"]), dir.path());
    let line = bash(&kilobyte_line());
    assert!(line.len() > 1000);
    c.bench_function("permission_bash_1kb_line_deny_rule", |b| {
        b.iter(|| deny.decide(Mode::Auto, "bash", &line))
    });

    let ask = Policy::new(
        rules(&["bash(cargo test*)"], &["bash(rm -rf*)", "file_read(.env)"]),
        dir.path(),
    );
    let status = bash("git status --porcelain");
    c.bench_function("permission_git_status_ask_mode", |b| {
        b.iter(|| ask.decide(Mode::Ask, "bash", &status))
    });
    let short = bash("cargo test --release 2>&1 | tail -n 20");
    c.bench_function("permission_short_command_ask_mode", |b| {
        b.iter(|| ask.decide(Mode::Ask, "bash", &short))
    });
    let write = serde_json::json!({"path": "src00/f000.rs", "content": "x"}).to_string();
    c.bench_function("permission_file_write_ask_mode", |b| {
        b.iter(|| ask.decide(Mode::Ask, "file_write", &write))
    });
    let fetch = Policy::new(
        rules(
            &["web_fetch(https://docs.rs/*)"],
            &["web_fetch(http://127.0.0.1*)"],
        ),
        dir.path(),
    );
    let url = serde_json::json!({"url": "https://docs.rs/htmd/latest/htmd/"}).to_string();
    c.bench_function("permission_web_fetch_ask_mode", |b| {
        b.iter(|| fetch.decide(Mode::Ask, "web_fetch", &url))
    });
}

criterion_group!(benches, decisions);
criterion_main!(benches);
