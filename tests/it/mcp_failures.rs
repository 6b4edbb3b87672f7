//! Broken MCP servers (tests/fixtures/mcp/server.py): one that never answers `initialize`,
//! one that crashes mid-call, one that prints garbage on stdout, one that floods 100 MB.
//! None blocks, hangs or ends anything; each is a clear status and a clear tool error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::mcp::{ctx, everything_section, fixture_section, registry};
use ikigai::tools::mcp::Status;

fn status(mcp: &ikigai::tools::mcp::Mcp, name: &str) -> Status {
    mcp.list(&[]).into_iter().find(|s| s.name == name).unwrap().status
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_fails_after_its_startup_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let toml_text =
        fixture_section("mute", "silent", "startup_timeout_secs = 4") + &everything_section("every");
    let started = Instant::now();
    let (r, mcp) = registry(&toml_text, dir.path()).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    let Status::Failed { reason, stderr } = status(&mcp, "mute") else {
        panic!("{:?}", status(&mcp, "mute"))
    };
    assert!(reason.contains("did not finish starting within 4 s"), "{reason}");
    assert_eq!(stderr, ["fixture server starting in mode silent"]);
    // The other server is unaffected; the first request does not wait again.
    assert_eq!(status(&mcp, "every"), Status::Ready);
    let t = Instant::now();
    mcp.first_request().await;
    mcp.first_request().await;
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "the failed server is not waited for again"
    );
    assert!(r.schemas().iter().any(|s| s.name == "every__echo"));
    mcp.shutdown().await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_is_a_clear_error_and_can_be_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let (r, mcp) = registry(&fixture_section("crashy", "crash", ""), dir.path()).await;
    let e = r.execute("crashy__boom", "{}", &ctx(dir.path())).await;
    assert!(!e.success);
    assert_eq!(e.envelope.to_value()["error_code"], "TOOL_CRASHED", "{e:?}");
    let text = e.envelope.error.as_deref().unwrap();
    assert!(
        text.contains("MCP server `crashy` stopped during the call"),
        "{text}"
    );
    assert!(text.contains("exited with code 3"), "{text}");
    assert!(text.contains("boom: the fixture crashes now"), "{text}");
    assert!(text.contains("/mcp restart crashy"), "{text}");
    // Its tools are no longer offered, but a call still says why.
    assert!(!r.schemas().iter().any(|s| s.name == "crashy__boom"));
    let e = r.execute("crashy__boom", "{}", &ctx(dir.path())).await;
    assert!(
        e.envelope.to_value()["error"]
            .as_str()
            .unwrap()
            .contains("is unavailable: it exited with code 3"),
        "{e:?}"
    );
    assert_eq!(mcp.restart("crashy").await, Ok(Status::Ready));
    assert!(r.schemas().iter().any(|s| s.name == "crashy__boom"));
    // Crashed again: `/refresh` restarts every failed server.
    let _ = r.execute("crashy__boom", "{}", &ctx(dir.path())).await;
    assert!(matches!(status(&mcp, "crashy"), Status::Failed { .. }));
    r.refresh().await;
    assert_eq!(status(&mcp, "crashy"), Status::Ready);
    assert!(
        mcp.restart("nope")
            .await
            .unwrap_err()
            .contains("configured: crashy")
    );
    mcp.shutdown().await;
}

#[tokio::test]
async fn garbage_on_stdout_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (r, mcp) = registry(&fixture_section("noisy", "garbage", ""), dir.path()).await;
    assert_eq!(status(&mcp, "noisy"), Status::Ready);
    let e = r.execute("noisy__hello", "{}", &ctx(dir.path())).await;
    assert_eq!(e.envelope.to_value()["result"]["output"], "hello ran", "{e:?}");
    mcp.shutdown().await;
}

#[tokio::test]
async fn a_server_that_floods_100_mb_is_cut_off_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (r, mcp) = registry(&fixture_section("flood", "flood", ""), dir.path()).await;
    let t = Instant::now();
    let e = r.execute("flood__flood", "{}", &ctx(dir.path())).await;
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(e.envelope.to_value()["error_code"], "TOOL_CRASHED", "{e:?}");
    let text = e.envelope.error.as_deref().unwrap();
    assert!(text.contains("larger than 16 MiB"), "{text}");
    assert!(matches!(status(&mcp, "flood"), Status::Failed { .. }));
    mcp.shutdown().await;
}
