//! Credentials never follow a redirect: for every wire kind, a 307 to another host:port
//! is an error naming the place (and the other host receives nothing: no key, no
//! configured header, no conversation), for chat requests and model listings. Also: an
//! HTML page answered with 200 says what arrived, and `max_retry_wait_secs` caps the
//! total Retry-After wait with a countdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire};

const KEY: &str = "kind-key-0123456789";
const HEADER: &str = "corp-secret-header-987";

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A config selecting a `[providers.corp]` section of `kind` at `base_url`, with its key
/// in CORP_KEY and a configured secret header.
fn config(home: &Path, kind: &str, base_url: &str, model: &str, extra: &str) {
    let dir = home.join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "provider = \"corp\"\nmax_retries = 1\nretry_base_delay_ms = 1\n{extra}\n\
             [providers.corp]\nkind = \"{kind}\"\nbase_url = \"{base_url}\"\napi_key_env = \"CORP_KEY\"\n\
             model = \"{model}\"\nheaders = {{ x-corp-token = \"{HEADER}\" }}\n"
        ),
    )
    .unwrap();
}

fn run(home: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = common::ikigai(home)
        .args(args)
        .env("CORP_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// The host a hostile endpoint redirects to; it must never be asked anything.
fn elsewhere() -> FakeProvider {
    let other = FakeProvider::start();
    other.answer_gets();
    for _ in 0..4 {
        other.push(Reply::text("you should not be here"));
    }
    other
}

fn redirect_to(other: &FakeProvider) -> Reply {
    Reply::status(307, "").with_header("location", &format!("{}/stolen", other.base_url))
}

fn assert_refused(out: &Output, other: &FakeProvider) {
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let want = format!(
        "the server redirected (307) to {}/stolen; set base_url to that if you trust it",
        other.base_url
    );
    assert!(err.contains(&want), "{err}");
    assert!(!err.contains(KEY) && !err.contains(HEADER), "{err}");
    assert_eq!(other.requests().len(), 0, "the other host was asked");
}

#[test]
fn openai_chat_and_responses_never_follow_a_redirect() {
    for kind in ["openai-chat", "openai-responses"] {
        let h = tempfile::tempdir().unwrap();
        let primary = FakeProvider::start();
        let other = elsewhere();
        config(h.path(), kind, &primary.base_url, "gpt-x", "");
        primary.push(redirect_to(&other));
        let out = run(h.path(), &["-p", "my secret plan"], "");
        assert_refused(&out, &other);
        assert_eq!(primary.requests().len(), 1, "{kind}: one request, not retried");
    }
}

#[test]
fn a_model_listing_never_follows_a_redirect() {
    let h = tempfile::tempdir().unwrap();
    let primary = FakeProvider::start();
    primary.answer_gets();
    let other = elsewhere();
    config(h.path(), "openai-chat", &primary.base_url, "gpt-x", "");
    primary.push(redirect_to(&other));
    let out = run(h.path(), &[], "/model\n");
    let all = format!("{}{}", s(&out.stdout), s(&out.stderr));
    assert!(
        all.contains(&format!(
            "the server redirected (307) to {}/stolen",
            other.base_url
        )),
        "{all}"
    );
    assert_eq!(other.requests().len(), 0, "the other host was asked");
}

#[test]
fn anthropic_and_gemini_keys_never_follow_a_redirect() {
    for (wire, kind, model) in [
        (Wire::Anthropic, "anthropic", "claude-sonnet-4-5"),
        (Wire::Gemini, "google", "gemini-2.5-flash"),
    ] {
        let h = tempfile::tempdir().unwrap();
        let primary = FakeVendor::start(wire);
        let other = elsewhere();
        config(h.path(), kind, &primary.base_url, model, "");
        primary.push(redirect_to(&other));
        let out = run(h.path(), &["-p", "my secret plan"], "");
        assert_refused(&out, &other);
        let seen = primary.requests();
        assert_eq!(seen.len(), 1, "{kind}: {:?}", primary.rejections());
        assert_eq!(
            seen[0].headers.get("x-corp-token").map(String::as_str),
            Some(HEADER)
        );
    }
}

#[test]
fn an_html_page_with_200_says_what_arrived() {
    let h = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    config(h.path(), "openai-chat", &fake.base_url, "gpt-x", "");
    fake.push(
        Reply::status(
            200,
            "<!doctype html>\n<html><head><title>Sign in \u{1b}]0;pwned\u{7}to the portal</title></head></html>",
        )
        .with_header("content-type", "text/html; charset=utf-8"),
    );
    let out = run(h.path(), &["-p", "hi"], "");
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "the server answered 200 with text/html; charset=utf-8, not the API's response: \
             <!doctype html> <html><head><title>Sign in ␛]0;pwned␇to the portal</title>"
        ),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "{err}");
}

#[test]
fn a_long_retry_after_ends_the_retries_at_once_and_a_short_one_counts_down() {
    let h = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    config(
        h.path(),
        "openai-chat",
        &fake.base_url,
        "gpt-x",
        "max_retry_wait_secs = 5",
    );
    fake.push(Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "100"));
    let started = std::time::Instant::now();
    let out = run(h.path(), &["-p", "hi"], "");
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not retrying: waiting 100 s more would pass max_retry_wait_secs (5 s)"),
        "{err}"
    );
    assert!(err.contains("rate limited (429)"), "{err}");
    assert_eq!(fake.requests().len(), 1);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "it waited"
    );

    // A wait within the cap is counted down, second by second.
    fake.push(Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "2"));
    fake.push(Reply::text("done"));
    let out = run(h.path(), &["-p", "hi"], "");
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("retrying in 2.0 s (attempt 1)"), "{err}");
    assert!(err.contains("ikigai: retrying in 1 s (attempt 1)"), "{err}");

    // --json: a `retrying` event per second of the wait.
    fake.push(Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "2"));
    fake.push(Reply::text("done"));
    let out = run(h.path(), &["--json", "-p", "hi"], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let waits: Vec<f64> = s(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "retrying")
        .map(|e| e["in_secs"].as_f64().unwrap())
        .collect();
    assert_eq!(waits, [2.0, 1.0]);
}
