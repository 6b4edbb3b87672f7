//! Criterion benches for external tools: a call's overhead over spawning the tool directly,
//! the start of background discovery (what the prompt waits for: nothing), and discovery
//! of 20 tools where one takes 0.9 s to answer `--schema` against that tool alone.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ikigai::tools::discovery::{DiscoverySpec, Origin, ToolDir};
use ikigai::tools::{EnvPolicy, Registry, ToolContext};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ARGS: &str = r#"{"text":"hello"}"#;

fn tool(dir: &Path, file: &str, schema_delay: &str) -> PathBuf {
    let p = dir.join(file);
    let name = file.replace('-', "_");
    let body = format!(
        "#!/bin/sh\nif [ \"$1\" = --schema ]; then {schema_delay}\n\
         echo '{{\"name\":\"{name}\",\"description\":\"Echo.\",\"parameters\":{{\"text\":{{\"type\":\"string\",\"required\":true}}}}}}'\n\
         exit 0; fi\nexec cat\n"
    );
    std::fs::write(&p, body).unwrap_or_else(|e| panic!("write: {e}"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod: {e}"));
    p
}

fn spec(dir: &Path) -> DiscoverySpec {
    DiscoverySpec {
        dirs: vec![ToolDir {
            origin: Origin::Project,
            path: dir.to_path_buf(),
        }],
        cwd: dir.to_path_buf(),
        env: Arc::new(EnvPolicy::default()),
        home: None,
        schema_timeout: ikigai::tools::discovery::SCHEMA_TIMEOUT,
        project_trust: ikigai::tools::discovery::ProjectTrust::Trusted,
    }
}

/// 19 tools answering at once and one after 0.9 s.
fn twenty_tools(dir: &Path) {
    for i in 0..19 {
        tool(dir, &format!("echo-{i:02}"), "");
    }
    tool(dir, "slow", "sleep 0.9");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

fn call_overhead(c: &mut Criterion) {
    // As the binary does at start (main.rs): escaped processes are then looked for from
    // our own children down; every tool starts through the launcher found as the
    // binary finds it (ikigai-launch), and each call is recorded for the next start.
    ikigai::tools::process::become_subreaper();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_ikigai"));
    ikigai::tools::launcher::install(ikigai::tools::launcher::locate(Some(exe)));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    ikigai::tools::leftovers::install(dir.path().join("running"));
    let path = tool(dir.path(), "echo", "");
    let rt = runtime();
    let registry = Registry::builtin();
    rt.block_on(registry.discover_now(spec(dir.path())));
    let ctx = ToolContext::new(dir.path().to_path_buf(), 1024 * 1024, Duration::from_secs(30));
    let mut g = c.benchmark_group("external_call");
    g.bench_function("direct_spawn", |b| {
        b.to_async(&rt).iter(|| async {
            let mut child = tokio::process::Command::new(&path)
                .current_dir(dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("spawn: {e}"));
            let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
            stdin
                .write_all(ARGS.as_bytes())
                .await
                .unwrap_or_else(|e| panic!("write: {e}"));
            drop(stdin);
            let mut out = String::new();
            let mut stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
            stdout
                .read_to_string(&mut out)
                .await
                .unwrap_or_else(|e| panic!("read: {e}"));
            let status = child.wait().await.unwrap_or_else(|e| panic!("wait: {e}"));
            assert!(status.success() && out == ARGS);
        })
    });
    g.bench_function("through_registry", |b| {
        b.to_async(&rt).iter(|| async {
            let e = registry.execute("echo", ARGS, &ctx).await;
            assert_eq!(e.envelope.to_value()["result"]["text"], "hello");
        })
    });
    g.finish();
}

fn startup(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    twenty_tools(dir.path());
    let rt = runtime();
    let mut g = c.benchmark_group("startup_to_usable_tools");
    g.sample_size(10);
    let builtin = Registry::builtin().schemas().len();
    g.bench_function("no_external_tools", |b| {
        b.iter(|| {
            let r = Registry::builtin();
            assert_eq!(r.schemas().len(), builtin);
        })
    });
    // The prompt needs the registry usable; discovery goes on in the background (its
    // processes are awaited outside the measured time).
    g.bench_function("twenty_tools_in_background", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rt.block_on(async {
                    let start = Instant::now();
                    let r = Registry::builtin();
                    r.start_discovery(spec(dir.path()));
                    assert_eq!(r.schemas().len(), builtin);
                    total += start.elapsed();
                    r.discovered().await;
                });
            }
            total
        })
    });
    g.finish();
}

fn discovery(c: &mut Criterion) {
    let twenty = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    twenty_tools(twenty.path());
    let single = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    tool(single.path(), "slow", "sleep 0.9");
    let rt = runtime();
    let mut g = c.benchmark_group("discovery");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(12));
    let builtin = Registry::builtin().schemas().len();
    for (label, dir, n) in [
        ("single_0.9s_tool", &single, builtin + 1),
        ("twenty_tools_one_0.9s", &twenty, builtin + 20),
    ] {
        g.bench_function(label, |b| {
            b.to_async(&rt).iter(|| async {
                let r = Registry::builtin();
                r.discover_now(spec(dir.path())).await;
                assert_eq!(r.tools().len(), n);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, call_overhead, startup, discovery);
criterion_main!(benches);
