//! Image input (`@shot.png`) through the real agent loop against each wire format's
//! loopback fake: the image part of the recorded request is checked per format (Chat
//! Completions `image_url`, Responses `input_image`, Anthropic `image`, Gemini
//! `inlineData`); the type comes from the content, not the name; an image over 5 MB, a
//! file named like an image that is none, and a provider without image input are refused
//! before anything is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use base64::Engine;
use ikigai::config::{Config, Protocol, ProviderSection, Secret};
use ikigai::protocol::{Event, TurnEndReason};
use ikigai::provider::Provider;
use serde_json::json;

use crate::common::agent::{TestAgent, config_for, notices, turn_end};
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply};

/// A 1×1 PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn png_bytes() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(PNG).unwrap()
}

fn data_url() -> String {
    format!("data:image/png;base64,{PNG}")
}

/// A folder with `shot.png` (a PNG), `shot.dat` (the same PNG under another name) and
/// `fake.png` (text).
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shot.png"), png_bytes()).unwrap();
    std::fs::write(dir.path().join("shot.dat"), png_bytes()).unwrap();
    std::fs::write(dir.path().join("fake.png"), "just text\n").unwrap();
    dir
}

fn with_images(config: Config, provider: &str, images: Option<bool>) -> Config {
    let section = ProviderSection {
        images,
        ..Default::default()
    };
    Config {
        providers: [(provider.to_string(), section)].into(),
        ..config
    }
}

/// Chat Completions on loopback with `[providers.openai] images = …`.
fn chat(fake: &FakeProvider, images: Option<bool>) -> Config {
    with_images(config_for(fake), "openai", images)
}

fn vendor(fake: &FakeVendor, provider: &str, model: &str) -> Config {
    Config {
        provider: Some(provider.into()),
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new("vendor-key")),
        model: Some(model.into()),
        retry_base_delay_ms: 10,
        ..Config::default()
    }
}

fn agent(config: Config, cwd: &std::path::Path) -> TestAgent {
    let provider: Arc<dyn Provider> = crate::common::provider(&config);
    TestAgent::start_with(config, provider, cwd)
}

fn attachments(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .find_map(|e| match e {
            Event::UserMessage { attachments, .. } => Some(attachments.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn chat_completions_sends_the_image_as_an_image_url_part() {
    let dir = workdir();
    let fake = FakeProvider::start();
    fake.push(Reply::text("A dot."));
    let mut a = agent(chat(&fake, Some(true)), dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(attachments(&events), ["shot.png, PNG image, 70 B"]);
    let reqs = fake.requests();
    let user = reqs[0].messages().last().unwrap().clone();
    assert_eq!(
        user,
        json!({"role": "user", "content": [
            {"type": "text", "text": "what is in @shot.png?"},
            {"type": "image_url", "image_url": {"url": data_url()}},
        ]})
    );
}

#[tokio::test]
async fn responses_sends_the_image_as_an_input_image_part() {
    let dir = workdir();
    let fake = FakeProvider::start();
    fake.push(crate::common::fake_vendor::responses_reply("A dot.", &[]));
    let config = Config {
        provider: Some("openai-responses".into()),
        model: Some("gpt-5-mini".into()),
        ..config_for(&fake)
    };
    let mut a = agent(config, dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    let reqs = fake.requests();
    assert_eq!(reqs[0].path, "/v1/responses");
    let input = reqs[0].body["input"].as_array().unwrap();
    assert_eq!(
        input.last().unwrap(),
        &json!({"role": "user", "content": [
            {"type": "input_text", "text": "what is in @shot.png?"},
            {"type": "input_image", "image_url": data_url()},
        ]})
    );
}

#[tokio::test]
async fn anthropic_sends_the_image_as_a_base64_image_block() {
    let dir = workdir();
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_reply(None, "A dot.", &[]));
    let mut a = agent(vendor(&fake, "anthropic", "claude-sonnet-4-5"), dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let body = &fake.requests()[0].body;
    let content = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{content:?}");
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "what is in @shot.png?"})
    );
    assert_eq!(content[1]["type"], "image");
    assert_eq!(
        content[1]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": PNG})
    );
}

#[tokio::test]
async fn gemini_sends_the_image_as_an_inline_data_part() {
    let dir = workdir();
    let fake = FakeVendor::start(Wire::Gemini);
    fake.push(gemini_reply("", "", "A dot.", &[]));
    let mut a = agent(vendor(&fake, "google", "gemini-2.5-flash"), dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let body = &fake.requests()[0].body;
    assert_eq!(
        body["contents"][0],
        json!({"role": "user", "parts": [
            {"text": "what is in @shot.png?"},
            {"inlineData": {"mimeType": "image/png", "data": PNG}},
        ]})
    );
}

#[tokio::test]
async fn the_type_is_read_from_the_content_not_the_name() {
    let dir = workdir();
    let fake = FakeProvider::start();
    fake.push(Reply::text("A dot."));
    let mut a = agent(chat(&fake, Some(true)), dir.path());
    // A PNG named `.dat` is an image.
    let events = a.turn("and @shot.dat").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    let reqs = fake.requests();
    let content = &reqs[0].messages().last().unwrap()["content"];
    assert_eq!(content[1]["image_url"]["url"], data_url());
    // Text named `.png` is refused, and nothing is sent.
    let events = a.turn("and @fake.png").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    let n = notices(&events).join("\n");
    assert!(
        n.contains("@fake.png: not a PNG, JPEG, GIF or WebP image (by its content); nothing was sent"),
        "{n}"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn an_image_over_5_mb_is_refused_before_sending() {
    let dir = workdir();
    let mut big = png_bytes();
    big.resize(5 * 1024 * 1024 + 1, 0);
    std::fs::write(dir.path().join("big.png"), big).unwrap();
    let fake = FakeProvider::start();
    let mut a = agent(chat(&fake, Some(true)), dir.path());
    let events = a.turn("look at @big.png").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    let n = notices(&events).join("\n");
    assert!(
        n.contains("@big.png: the image is 5242881 bytes; images up to 5 MB (5242880 bytes) are attached; nothing was sent"),
        "{n}"
    );
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_local_server_without_image_input_is_refused_before_sending() {
    let dir = workdir();
    let fake = FakeProvider::start();
    // A Chat Completions server on loopback is taken for a local one: no images unless
    // `images = true`.
    let mut a = agent(chat(&fake, None), dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    let n = notices(&events).join("\n");
    assert!(
        n.contains(
            "fake-model cannot see images: provider `openai` is set up for models without image input \
             (if fake-model takes images, set images = true in [providers.openai]); nothing was sent"
        ),
        "{n}"
    );
    assert!(fake.requests().is_empty());
    // And a vendor format configured `images = false` likewise.
    let vendor_fake = FakeVendor::start(Wire::Anthropic);
    let config = with_images(
        vendor(&vendor_fake, "anthropic", "claude-sonnet-4-5"),
        "anthropic",
        Some(false),
    );
    let mut a = agent(config, dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    assert!(
        notices(&events)
            .join("\n")
            .contains("set images = true in [providers.anthropic]")
    );
    assert!(vendor_fake.requests().is_empty());
}

#[tokio::test]
async fn the_text_protocol_is_refused_before_sending() {
    let dir = workdir();
    let fake = FakeProvider::start();
    let config = Config {
        tool_protocol: Some(Protocol::Text),
        ..chat(&fake, Some(true))
    };
    let mut a = agent(config, dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    let n = notices(&events).join("\n");
    assert!(
        n.contains("fake-model cannot see images: the text tool protocol sends text only; nothing was sent"),
        "{n}"
    );
    assert!(fake.requests().is_empty());
}

#[cfg(feature = "local")]
#[tokio::test]
async fn the_in_process_engine_is_refused_before_anything_runs() {
    let dir = workdir();
    let model = dir.path().join("none.gguf");
    let settings = ikigai::provider::local::LocalSettings::new(model.clone());
    let provider = Arc::new(ikigai::provider::local::LocalProvider::new(settings).unwrap());
    let mut a = TestAgent::start_with(Config::default(), provider, dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    let n = notices(&events).join("\n");
    assert!(
        n.contains("cannot see images: the in-process engine takes no images; nothing was sent"),
        "{n}"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::TurnStarted)));
}

/// `ikigai -p` in `cwd` against the Chat Completions fake, with `config.toml` in `home`.
fn run_binary(home: &std::path::Path, fake: &FakeProvider, args: &[&str]) -> std::process::Output {
    crate::common::ikigai(home)
        .args(args)
        .args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_image_is_stored_with_the_session_and_sent_again_on_resume() {
    let home = workdir();
    let h = home.path();
    std::fs::create_dir_all(h.join(".config/ikigai")).unwrap();
    std::fs::write(
        h.join(".config/ikigai/config.toml"),
        "[providers.openai]\nimages = true\n",
    )
    .unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("A dot."));
    let out = run_binary(h, &fake, &["-p", "what is in @shot.png?"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("📎 shot.png, PNG image, 70 B"), "{err}");
    // The file is gone: the resumed session sends the stored image, not a new read.
    std::fs::remove_file(h.join("shot.png")).unwrap();
    fake.push(Reply::text("Still a dot."));
    let out = run_binary(h, &fake, &["--continue", "-p", "and now?"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let users: Vec<&serde_json::Value> = reqs[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(
        users[0]["content"],
        json!([
            {"type": "text", "text": "what is in @shot.png?"},
            {"type": "image_url", "image_url": {"url": data_url()}},
        ])
    );
    assert_eq!(users[1]["content"], "and now?");
}

#[test]
fn the_binary_refuses_an_image_for_a_local_server_with_exit_1_and_sends_nothing() {
    let home = workdir();
    let fake = FakeProvider::start();
    // No `images = true`: the loopback Chat Completions server is taken for a local one.
    let out = run_binary(home.path(), &fake, &["-p", "what is in @shot.png?"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot see images") && err.contains("set images = true in [providers.openai]"),
        "{err}"
    );
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn after_a_switch_to_a_model_without_images_the_history_goes_without_them() {
    let dir = workdir();
    let vendor_fake = FakeVendor::start(Wire::Anthropic);
    vendor_fake.push(anthropic_reply(None, "A dot.", &[]));
    let chat_fake = FakeProvider::start();
    chat_fake.push(Reply::text("Text only."));
    let local = ProviderSection {
        base_url: Some(chat_fake.base_url.clone()),
        ..Default::default()
    };
    let config = Config {
        providers: [("openai".to_string(), local)].into(),
        ..vendor(&vendor_fake, "anthropic", "claude-sonnet-4-5")
    };
    let mut a = agent(config, dir.path());
    let events = a.turn("what is in @shot.png?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    a.send(ikigai::protocol::Op::SetModel("openai/fake-model".into()));
    a.until(|e| matches!(e, Event::ModelChanged { .. })).await;
    let events = a.turn("and now?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    let reqs = chat_fake.requests();
    let users: Vec<&serde_json::Value> = reqs[0]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users[0]["content"], "what is in @shot.png?");
    assert!(!reqs[0].body.to_string().contains(PNG));
}

#[tokio::test]
async fn gemini_takes_no_gif_and_says_so_before_sending() {
    let dir = workdir();
    std::fs::write(
        dir.path().join("anim.gif"),
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00;",
    )
    .unwrap();
    let fake = FakeVendor::start(Wire::Gemini);
    let mut a = agent(vendor(&fake, "google", "gemini-2.5-flash"), dir.path());
    let events = a.turn("what is in @anim.gif?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    let n = notices(&events).join("\n");
    assert!(
        n.contains("gemini-2.5-flash takes PNG, JPEG or WebP images, not GIF; nothing was sent"),
        "{n}"
    );
    assert!(fake.requests().is_empty());
}
