//! An MCP tool's image (the reference server's `get-tiny-image`) reaches the model as an
//! image through the real agent loop, in each wire format: Anthropic and Gemini in the
//! user turn of the results (after the `tool_result` / `functionResponse`), Chat
//! Completions and Responses (whose tool outputs take text only) in a user message right
//! after the results; the result's text says the image follows. A model without image
//! input gets the line saying it was left out, and no image.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::agent::{TestAgent, config_for, turn_end};
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply, responses_reply};
use crate::mcp::{everything_section, registry};
use ikigai::agent::AgentSetup;
use ikigai::config::{Config, ProviderSection, Secret};
use ikigai::protocol::TurnEndReason;
use serde_json::{Value, json};

const TOOL: &str = "every__get-tiny-image";
/// The start of the reference server's tiny PNG, base64.
const PNG_START: &str = "iVBORw0KGgo";
const NOTE: &str = "[image: image/png, ";

/// One turn on `config`'s provider with the reference server: the model calls the image
/// tool, then answers.
async fn converse(config: Config) {
    let dir = tempfile::tempdir().unwrap();
    let (registry, mcp) = registry(&everything_section("every"), dir.path()).await;
    let provider = crate::common::provider(&config);
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let setup = AgentSetup {
        config,
        provider,
        registry,
        sessions: None,
        cwd: dir.path().to_path_buf(),
        system_prompt: "You are a test.".into(),
        environment: String::new(),
        instructions: Vec::new(),
        skills: Default::default(),
        mode: None,
        resumed: None,
        follow_tree: true,
    };
    let handle = ikigai::agent::spawn(setup, tx);
    let mut a = TestAgent { handle, events };
    let events = a.turn("show me the tiny image").await;
    mcp.shutdown().await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
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

fn data_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

#[tokio::test]
async fn chat_completions_sends_the_image_in_a_user_message_after_the_results() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", TOOL, "{}")]));
    fake.push(Reply::text("A tiny image."));
    let config = Config {
        providers: [(
            "openai".to_string(),
            ProviderSection {
                images: Some(true),
                ..Default::default()
            },
        )]
        .into(),
        ..config_for(&fake)
    };
    converse(config).await;
    let reqs = fake.requests();
    let m = reqs[1].messages();
    let tool = m.iter().position(|m| m["role"] == "tool").unwrap();
    assert!(data_of(&m[tool]["content"]).contains(NOTE), "{}", m[tool]);
    assert!(!data_of(&m[tool]["content"]).contains(PNG_START));
    let next = &m[tool + 1];
    assert_eq!(next["role"], "user", "{next}");
    let parts = next["content"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "{next}");
    assert_eq!(parts[0]["type"], "image_url");
    let url = data_of(&parts[0]["image_url"]["url"]);
    assert!(
        url.starts_with(&format!("data:image/png;base64,{PNG_START}")),
        "{url}"
    );
}

#[tokio::test]
async fn responses_sends_the_image_in_a_user_message_after_the_outputs() {
    let fake = FakeProvider::start();
    fake.push(responses_reply("", &[("call_1", TOOL, "{}")]));
    fake.push(responses_reply("A tiny image.", &[]));
    let config = Config {
        provider: Some("openai-responses".into()),
        model: Some("gpt-5-mini".into()),
        ..config_for(&fake)
    };
    converse(config).await;
    let reqs = fake.requests();
    let input = reqs[1].body["input"].as_array().unwrap();
    let out = input
        .iter()
        .position(|i| i["type"] == "function_call_output")
        .unwrap();
    assert!(data_of(&input[out]["output"]).contains(NOTE), "{}", input[out]);
    let next = &input[out + 1];
    assert_eq!(next["role"], "user", "{next}");
    assert_eq!(next["content"][0]["type"], "input_image", "{next}");
    assert!(
        data_of(&next["content"][0]["image_url"]).starts_with(&format!("data:image/png;base64,{PNG_START}")),
        "{next}"
    );
}

#[tokio::test]
async fn anthropic_sends_the_image_after_the_tool_result_in_its_user_turn() {
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_reply(None, "", &[("toolu_01", TOOL, "{}")]));
    fake.push(anthropic_reply(None, "A tiny image.", &[]));
    converse(vendor(&fake, "anthropic", "claude-sonnet-4-5")).await;
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let body = &fake.requests()[1].body;
    let results = body["messages"][2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["type"], "tool_result");
    assert!(data_of(&results[0]["content"]).contains(NOTE), "{results:?}");
    assert_eq!(results[1]["type"], "image");
    assert_eq!(results[1]["source"]["type"], "base64");
    assert_eq!(results[1]["source"]["media_type"], "image/png");
    assert!(data_of(&results[1]["source"]["data"]).starts_with(PNG_START));
}

#[tokio::test]
async fn gemini_sends_the_image_after_the_function_response_in_its_user_turn() {
    let fake = FakeVendor::start(Wire::Gemini);
    fake.push(gemini_reply("", "", "", &[(TOOL, json!({}))]));
    fake.push(gemini_reply("", "", "A tiny image.", &[]));
    converse(vendor(&fake, "google", "gemini-2.5-flash")).await;
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let body = &fake.requests()[1].body;
    let parts = body["contents"][2]["parts"].as_array().unwrap();
    assert_eq!(body["contents"][2]["role"], "user");
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(parts[0]["functionResponse"].is_object(), "{parts:?}");
    assert_eq!(parts[1]["inlineData"]["mimeType"], "image/png");
    assert!(data_of(&parts[1]["inlineData"]["data"]).starts_with(PNG_START));
}

#[tokio::test]
async fn a_model_without_image_input_gets_a_line_and_no_image() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", TOOL, "{}")]));
    fake.push(Reply::text("No image."));
    // A loopback Chat Completions server: no images by default.
    converse(config_for(&fake)).await;
    let reqs = fake.requests();
    let body = reqs[1].body.to_string();
    assert!(
        body.contains("[image omitted: image/png, ") && body.contains("the model takes no images"),
        "{body}"
    );
    assert!(!body.contains(PNG_START), "{body}");
}
