//! Criterion benches for the built-in tools: bash overhead per call (spawn to result, with
//! `true`; without the sandbox, with it, and with it but without its private mount table),
//! and grep/glob over a generated tree. The rg comparison is scripts/bench-compare.sh.
//! The file tools per call as the agent runs them — the permission decision (which
//! resolves a file tool's path, to hold the tool to it) and the call — for a 4 KB file
//! four folders deep: file_write (flushed to disk), file_edit, file_read.

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ikigai::tools::{Registry, ToolContext};

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir.to_path_buf(), 1024 * 1024, Duration::from_secs(60))
}

/// A deterministic tree: `dirs` × `files` small source files, some with a marker.
fn make_tree(root: &Path, dirs: usize, files: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
        for f in 0..files {
            let ext = ["rs", "txt", "md"][f % 3];
            let mut text = String::new();
            for l in 0..20 {
                let n = d * 1_000_000 + f * 100 + l;
                if n % 97 == 0 {
                    text.push_str(&format!("// needle_marker {n}\n"));
                } else {
                    text.push_str(&format!(
                        "fn item_{d}_{f}_{l}() {{ let value = {}; }}\n",
                        n * 7919 % 10007
                    ));
                }
            }
            std::fs::write(dir.join(format!("f{f:03}.{ext}")), text).unwrap_or_else(|e| panic!("write: {e}"));
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

fn bash_overhead(c: &mut Criterion) {
    // As the binary does: bash starts through the launcher it finds (ikigai-launch), and
    // each call is recorded for the next start.
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_ikigai"));
    ikigai::tools::launcher::install(ikigai::tools::launcher::locate(Some(exe)));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    ikigai::tools::leftovers::install(dir.path().join("running"));
    let ctx = ctx(dir.path());
    let registry = Registry::builtin();
    let rt = runtime();
    c.bench_function("bash_true_per_call", |b| {
        b.to_async(&rt).iter(|| async {
            let e = registry.execute("bash", r#"{"command":"true"}"#, &ctx).await;
            assert!(e.success);
        })
    });
    // The same call under the sandbox (joining the private mount table, capabilities,
    // Landlock, the seccomp filters, applied by the launcher before it executes bash): the
    // issue allows at most 1 ms more. The mount table is built once, at the first call.
    use ikigai::permissions::sandbox::{SandboxMode, Settings, install};
    let settings = Settings {
        mode: SandboxMode::WorkspaceWrite,
        ..Settings::default()
    };
    install(&settings, dir.path(), &|_| None).unwrap_or_else(|e| panic!("sandbox: {e}"));
    c.bench_function("bash_true_per_call_sandboxed", |b| {
        b.to_async(&rt).iter(|| async {
            let e = registry.execute("bash", r#"{"command":"true"}"#, &ctx).await;
            assert!(e.success);
        })
    });
    // Without the private mount table (a system without user namespaces): Landlock and
    // seccomp only, as the sandbox was before it; the difference is the table's cost.
    ikigai::tools::launcher::deny_private_mounts("the bench compares without it");
    c.bench_function("bash_true_per_call_sandboxed_without_private_mounts", |b| {
        b.to_async(&rt).iter(|| async {
            let e = registry.execute("bash", r#"{"command":"true"}"#, &ctx).await;
            assert!(e.success);
        })
    });
    ikigai::permissions::sandbox_in_force::set_sandbox(None);
}

fn search(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    make_tree(dir.path(), 50, 100);
    let ctx = ctx(dir.path());
    let registry = Registry::builtin();
    let rt = runtime();
    let mut g = c.benchmark_group("search_5k_files");
    g.sample_size(20);
    g.bench_function("grep_marker", |b| {
        b.to_async(&rt).iter(|| async {
            let e = registry
                .execute("grep", r#"{"pattern":"needle_marker \\d+"}"#, &ctx)
                .await;
            assert!(e.success);
        })
    });
    g.bench_function("glob_rs", |b| {
        b.to_async(&rt).iter(|| async {
            let e = registry.execute("glob", r#"{"pattern":"**/*.rs"}"#, &ctx).await;
            assert!(e.success);
        })
    });
    g.finish();
}

fn file_tools(c: &mut Criterion) {
    use ikigai::permissions::decide::{Policy, Rules};
    use ikigai::permissions::mode::Mode;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let root = dir
        .path()
        .canonicalize()
        .unwrap_or_else(|e| panic!("canonicalize: {e}"));
    let file = root.join("src/a/b/c/f.txt");
    std::fs::create_dir_all(root.join("src/a/b/c")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let text = "let value = 1;\n".repeat(4096 / 15);
    std::fs::write(&file, &text).unwrap_or_else(|e| panic!("write: {e}"));
    let ctx = ctx(&root);
    let registry = Registry::builtin();
    let policy = Policy::new(Rules::default(), &root);
    let rt = runtime();
    let mut g = c.benchmark_group("file_tools_4k");
    // Decided and run as the agent does (auto mode, no rules: the common case).
    let call = |name: &'static str, args: String| {
        let (registry, policy, ctx, rt) = (&registry, &policy, &ctx, &rt);
        move || {
            let d = policy.decide(Mode::Auto, name, &args);
            let mut ctx = ctx.clone();
            ctx.pinned = d.pinned;
            let e = rt.block_on(registry.execute(name, &args, &ctx));
            assert!(e.success, "{}", e.envelope);
        }
    };
    let write = serde_json::json!({"path": "src/a/b/c/f.txt", "content": text}).to_string();
    let mut run = call("file_write", write);
    g.bench_function("file_write_per_call", |b| b.iter(&mut run));
    // Each edit undoes the one before: `1;` and `2;` in turn, all 273 of them.
    let edits = ["1;", "2;"].map(|from| {
        let to = if from == "1;" { "2;" } else { "1;" };
        serde_json::json!({"path": "src/a/b/c/f.txt", "old_string": from, "new_string": to, "replace_all": true})
            .to_string()
    });
    let runs = edits.map(|args| call("file_edit", args));
    let mut turn = 0usize;
    g.bench_function("file_edit_per_call", |b| {
        b.iter(|| {
            (runs[turn % 2])();
            turn += 1;
        })
    });
    let read = serde_json::json!({"path": "src/a/b/c/f.txt"}).to_string();
    let mut run = call("file_read", read);
    g.bench_function("file_read_per_call", |b| b.iter(&mut run));
    g.finish();
}

criterion_group!(benches, bash_overhead, search, file_tools);
criterion_main!(benches);
