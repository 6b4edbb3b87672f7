//! Criterion benches for the MCP client (issue 21):
//! - `mcp_call`: one `tools/call` to a running stdio server through ikigai (registry, rmcp,
//!   result conversion) against the same request written by hand to the same kind of
//!   server and its answer line read back (the server's own time plus the pipe). The
//!   difference is ikigai's overhead.
//! - `first_frame`: what the TUI's first frame waits for, in the order `app::chat` runs it
//!   on the binary's current-thread runtime (registry and discovery started, MCP servers
//!   started, app built, first frame rendered), with no MCP server and with five. The
//!   servers themselves start after the frame (their tasks are polled once the loop
//!   awaits) and are closed outside the measured time.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ikigai::config::Config;
use ikigai::tools::mcp::{Mcp, config};
use ikigai::tools::{EnvPolicy, Registry, ToolContext};
use ikigai::ui::tui::TuiContext;
use ikigai::ui::tui::app::App;
use ikigai::ui::tui::history::History;
use ikigai::ui::tui::screen::Screen;
use ikigai::ui::tui::theme::Theme;
use ratatui::backend::TestBackend;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// `n` servers of the fixture in `mode`, named s0, s1, …
fn specs(n: usize, mode: &str) -> Vec<config::ServerSpec> {
    let mut sections = std::collections::BTreeMap::new();
    for i in 0..n {
        sections.insert(
            format!("s{i}"),
            config::ServerSection {
                command: Some("python3".into()),
                args: Some(vec![fixture().display().to_string(), mode.into()]),
                ..Default::default()
            },
        );
    }
    config::validate(&sections, Path::new("bench.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn call_overhead(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let (mcp, _notices) = Mcp::new(
        specs(1, "plain"),
        dir.path().to_path_buf(),
        Arc::new(EnvPolicy::default()),
    );
    let registry = Registry::builtin();
    registry.attach_mcp(mcp.clone());
    rt.block_on(mcp.start_and_wait());
    let ctx = ToolContext::new(dir.path().to_path_buf(), 1 << 20, Duration::from_secs(30));

    // The same server, spoken to by hand: newline-delimited JSON-RPC on its pipes.
    let (mut child, mut stdin, mut stdout) = rt.block_on(async {
        let mut child = tokio::process::Command::new("python3")
            .arg(fixture())
            .arg("plain")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
        let mut stdout = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("stdout")));
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        stdin
            .write_all(format!("{init}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n").as_bytes())
            .await
            .unwrap_or_else(|e| panic!("write: {e}"));
        let mut line = String::new();
        stdout.read_line(&mut line).await.unwrap_or_else(|e| panic!("read: {e}"));
        (child, stdin, stdout)
    });

    let mut g = c.benchmark_group("mcp_call");
    let mut id = 0u64;
    g.bench_function("raw_json_rpc_same_server", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    id += 1;
                    let req = format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"hello\",\"arguments\":{{}}}}}}\n"
                    );
                    stdin.write_all(req.as_bytes()).await.unwrap_or_else(|e| panic!("write: {e}"));
                    let mut line = String::new();
                    stdout.read_line(&mut line).await.unwrap_or_else(|e| panic!("read: {e}"));
                    assert!(line.contains("hello ran"), "{line}");
                }
                start.elapsed()
            })
        })
    });
    g.bench_function("through_registry", |b| {
        b.to_async(&rt).iter(|| async {
            let e = registry.execute("s0__hello", "{}", &ctx).await;
            assert_eq!(e.envelope.to_value()["result"]["output"], "hello ran", "{e:?}");
        })
    });
    g.finish();
    rt.block_on(async {
        mcp.shutdown().await;
        let _ = child.kill().await;
    });
}

fn first_frame(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let config = Config::default();
    let keys = ikigai::provider::key_vars(&config);
    let spec = ikigai::provider::resolve(&config, &|_| None)
        .unwrap_or_else(|e| panic!("{e}"))
        .spec;
    let mut g = c.benchmark_group("first_frame");
    g.sample_size(20);
    for n in [0usize, 5] {
        let servers = specs(n, "plain");
        g.bench_function(format!("{n}_mcp_servers"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    rt.block_on(async {
                        let start = Instant::now();
                        let registry = Registry::builtin();
                        registry.start_discovery(ikigai::tools::discovery::DiscoverySpec::from_config(
                            &config,
                            dir.path(),
                            keys.clone(),
                        ));
                        // As app::start_mcp does.
                        let mcp = (!servers.is_empty()).then(|| {
                            let policy = Arc::new(EnvPolicy::from_config(&config, keys.clone()));
                            let (mcp, notices) = Mcp::new(servers.clone(), dir.path().to_path_buf(), policy);
                            registry.attach_mcp(mcp.clone());
                            mcp.start();
                            (mcp, notices)
                        });
                        let ctx = TuiContext {
                            provider: spec.clone(),
                            config: config.clone(),
                            registry: registry.clone(),
                            cwd: dir.path().to_path_buf(),
                            welcome_notes: vec![],
                            sessions: None,
                        };
                        let mut app =
                            App::new(ctx, Theme::new(true), History::load(None), "~/project".into());
                        let mut screen =
                            Screen::new(TestBackend::new(100, 30), 3).unwrap_or_else(|e| panic!("{e}"));
                        screen
                            .render(&mut app, Instant::now())
                            .unwrap_or_else(|e| panic!("{e}"));
                        total += start.elapsed();
                        // Not measured: let the servers start, then close them.
                        if let Some((mcp, _)) = mcp {
                            mcp.first_request().await;
                            mcp.shutdown().await;
                        }
                        registry.discovered().await;
                    });
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, call_overhead, first_frame);
criterion_main!(benches);
