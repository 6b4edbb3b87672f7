//! Criterion benches for the built-in tools: bash overhead per call (spawn to result, with
//! `true`; without the sandbox, with it, and with it but without its private mount table),
//! and grep/glob over a generated tree. The rg comparison is scripts/bench-compare.sh.

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
    ikigai::tools::launcher::set_sandbox(None);
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

criterion_group!(benches, bash_overhead, search);
criterion_main!(benches);
