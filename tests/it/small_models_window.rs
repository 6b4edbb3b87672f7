//! A server's window, known before it matters (issue 22; asked off the hot path since
//! issue 39): a `--base-url` that is not a vendor's own endpoint is asked for its window
//! like the local presets, and a window a 400 names in a field of its own (`n_ctx`,
//! `max_context_length`, …) is learned. The window shows in the recorded requests' output
//! cap (an eighth of it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::process::{Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::window_vendor::{Flavor, Step, WindowVendor};
use serde_json::json;

fn run(fake: &FakeProvider, home: &std::path::Path) -> Output {
    let cwd = tempfile::tempdir().unwrap();
    common::ikigai(home)
        .current_dir(cwd.path())
        .args(["--base-url", &fake.base_url, "-p", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_server_at_a_non_vendor_base_url_is_asked_for_its_window() {
    // The default model (gpt-5-mini, 400k in the family table) at a server of 4096: a
    // short request goes first (with the table's answer cap), the question follows, and
    // the next turn's request is sized to the server's answer.
    let vendor = WindowVendor::start(4096, Flavor::LlamaCpp);
    vendor.answer_props();
    vendor.push(Step::text("hello")).push(Step::text("again"));
    let h = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut child = common::ikigai(h.path())
        .current_dir(cwd.path())
        .args(["--base-url", &vendor.base_url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"hi\nhi again\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let order = vendor.order();
    assert_eq!(
        order,
        [
            "POST /v1/chat/completions",
            "GET /props",
            "POST /v1/chat/completions"
        ],
        "{stderr}"
    );
    let seen = vendor.seen();
    assert_eq!(seen[0].body["max_completion_tokens"], json!(16384));
    assert_eq!(seen[1].body["max_completion_tokens"], json!(512));
}

#[test]
fn a_window_in_a_structured_error_field_is_learned() {
    let llama = Flavor::LlamaCpp.error_body(5000, 8192);
    let other = json!({"error": {"message": "the request exceeds the model's context window",
        "type": "invalid_request_error", "max_context_length": 7000}})
    .to_string();
    let top_level =
        json!({"detail": "the request exceeds the model's context window", "max_model_len": 6000})
            .to_string();
    for (body, window) in [(llama, 8192), (other, 7000), (top_level, 6000)] {
        let fake = FakeProvider::start();
        fake.push(Reply::status(400, &body));
        for _ in 0..3 {
            fake.push(Reply::text("hello"));
        }
        let h = tempfile::tempdir().unwrap();
        let out = run(&fake, h.path());
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(stderr.contains("exceeds its context window"), "{stderr}");
        // No server answered the window question: the family table's 400k was sent…
        let reqs = fake.requests();
        assert_eq!(reqs[0].body["max_completion_tokens"], json!(16384), "{body}");
        // …then the server's own number is the window (the request, which the server says
        // exceeded it, is refused as too large for it, never summarised from 400001).
        let want = format!("the window holds {window} ({} kept for the answer", window / 8);
        assert!(stderr.contains(&want), "{want}\n{stderr}");
        assert!(!stderr.contains("400001"), "{stderr}");
    }
}

/// `/model` to a server that is not a vendor's own endpoint asks it for its window, as a
/// start there does: the family table's 400k for `gpt-5-mini` is not what a local server
/// holds.
#[test]
fn a_switch_to_a_non_vendor_server_asks_it_for_its_window() {
    let vendor = FakeProvider::start();
    vendor.push(Reply::text("first"));
    let server = WindowVendor::start(4096, Flavor::LlamaCpp);
    server.answer_props();
    server.push(Step::text("second")).push(Step::text("third"));
    let h = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let config = h.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.vend]\nkind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"m\"\n\
             context_window = 100000\n\n[providers.srv]\nkind = \"openai-chat\"\n\
             base_url = \"{}\"\nmodel = \"gpt-5-mini\"\n",
            vendor.base_url, server.base_url
        ),
    )
    .unwrap();
    let mut child = common::ikigai(h.path())
        .current_dir(cwd.path())
        .args(["--config", config.to_str().unwrap(), "--provider", "vend"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"hello\n/model srv/gpt-5-mini\nhello again\nand again\n")
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The configured vendor was never asked; the server was, after its first (short)
    // request, and its answer sized the next one.
    let first = vendor.requests();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].path, "/v1/chat/completions");
    assert_eq!(
        server.order(),
        [
            "POST /v1/chat/completions",
            "GET /props",
            "POST /v1/chat/completions"
        ],
        "{stderr}"
    );
    let seen = server.seen();
    assert_eq!(seen[0].body["max_completion_tokens"], json!(16384));
    assert_eq!(seen[1].body["max_completion_tokens"], json!(512));
}
