//! Every Chat-Completions-shaped recorded stream in tests/fixtures/sse, served over
//! real HTTP on 127.0.0.1 and decoded by the OpenAI provider into canonical events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use futures_util::StreamExt;
use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::provider::openai::OpenAiChat;
use ikigai::provider::{Provider, ProviderError, Request, StreamEvent};
use serde_json::{Value, json};

/// Decoded events of one fixture, and the error that ended it, if any.
pub async fn replay(name: &str) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let fake = FakeProvider::start();
    fake.push(Reply::fixture(name));
    let config = Config {
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new("test-key")),
        ..Config::default()
    };
    let provider = OpenAiChat::new(&config).unwrap();
    let msgs = vec![Message::user("hi")];
    let req = Request {
        model: "m",
        system: "",
        messages: &msgs,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let mut stream = provider.stream(req).await.unwrap();
    let mut events = Vec::new();
    let mut error = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    (events, error)
}

fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn reasoning(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// (id, name, parsed arguments) of every tool call, in order.
fn calls(events: &[StreamEvent]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall { id, name, arguments } => Some((
                id.clone(),
                name.clone(),
                serde_json::from_str(arguments).unwrap_or_else(|e| panic!("bad args {arguments}: {e}")),
            )),
            _ => None,
        })
        .collect()
}

fn usage(events: &[StreamEvent]) -> Option<(u64, u64)> {
    events.iter().find_map(|e| match e {
        StreamEvent::Usage { input, output, .. } => Some((*input, *output)),
        _ => None,
    })
}

fn finish(events: &[StreamEvent]) -> Option<Option<String>> {
    events.iter().find_map(|e| match e {
        StreamEvent::Finished { reason } => Some(reason.as_ref().map(|r| r.as_str().to_string())),
        _ => None,
    })
}

struct Expect {
    file: &'static str,
    text: &'static str,
    reasoning: bool,
    calls: Vec<(&'static str, &'static str, Value)>,
    usage: Option<(u64, u64)>,
    error: Option<&'static str>,
}

fn expectations() -> Vec<Expect> {
    let weather_sf = json!({"location": "San Francisco"});
    vec![
        Expect {
            file: "openai-chat-01-text-usage.sse",
            text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
            reasoning: false,
            calls: vec![],
            usage: Some((14, 30)),
            error: None,
        },
        Expect {
            file: "openai-chat-02-single-tool-fragmented-args.sse",
            text: "",
            reasoning: false,
            calls: vec![(
                "call_CTf1nWJLqSeRgDqaCG27xZ74",
                "get_weather",
                json!({"city": "San Francisco", "state": "CA"}),
            )],
            usage: Some((48, 19)),
            error: None,
        },
        Expect {
            file: "openai-chat-03-parallel-tools-sequential.sse",
            text: "",
            reasoning: false,
            calls: vec![
                (
                    "call_JMW1whyEaYG438VE1OIflxA2",
                    "GetWeatherArgs",
                    json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
                ),
                (
                    "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                    "get_stock_price",
                    json!({"exchange": "NASDAQ", "ticker": "AAPL"}),
                ),
            ],
            usage: Some((149, 60)),
            error: None,
        },
        Expect {
            file: "openai-chat-04-parallel-tools-include-usage.sse",
            text: "",
            reasoning: false,
            calls: vec![
                ("call_3rqTYrA6H21AYUaRGP4F66oq", "get_country", json!({})),
                ("call_Xw9XMKBJU48kAAd78WgIswDx", "get_product_name", json!({})),
            ],
            usage: Some((364, 40)),
            error: None,
        },
        Expect {
            file: "openai-chat-05-refusal.sse",
            text: "I'm sorry, I can't assist with that request.",
            reasoning: false,
            calls: vec![],
            usage: Some((79, 11)),
            error: None,
        },
        Expect {
            file: "openai-chat-06-error-first-chunk.sse",
            text: "",
            reasoning: false,
            calls: vec![],
            usage: None,
            error: Some("The server had an error processing your request."),
        },
        Expect {
            file: "compat-01-xai-grok-reasoning-tool-call-one-chunk.sse",
            text: "",
            reasoning: true,
            calls: vec![("call_79382389", "weather", weather_sf.clone())],
            usage: Some((307, 26)),
            error: None,
        },
        Expect {
            file: "compat-02-deepseek-reasoner-tool-call.sse",
            text: "",
            reasoning: true,
            calls: vec![("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", weather_sf.clone())],
            usage: Some((339, 83)),
            error: None,
        },
        Expect {
            file: "compat-03-groq-tool-call-one-chunk.sse",
            text: "",
            reasoning: false,
            calls: vec![("tk85n1k4m", "weather", json!({}))],
            usage: Some((210, 15)),
            error: None,
        },
        Expect {
            file: "compat-04-mistral-tool-call-no-index-no-type.sse",
            text: "",
            reasoning: false,
            calls: vec![("gSIMJiOkT", "weather", weather_sf.clone())],
            usage: Some((124, 22)),
            error: None,
        },
        Expect {
            file: "compat-05-mistral-glm-incremental-empty-name.sse",
            text: "",
            reasoning: false,
            calls: vec![(
                "chatcmpl-tool-9f149c74c42f265b",
                "webSearchTool",
                json!({"query": "current Berlin weather"}),
            )],
            usage: Some((171, 14)),
            error: None,
        },
        Expect {
            file: "compat-06-qwen-dashscope-empty-id-continuations.sse",
            text: "",
            reasoning: false,
            calls: vec![("call_eee11723464a4b9eb8cee71d", "weather", weather_sf.clone())],
            usage: Some((295, 22)),
            error: None,
        },
        Expect {
            file: "compat-07-vllm-llama-usage-every-chunk.sse",
            text: "",
            reasoning: false,
            calls: vec![(
                "chatcmpl-tool-b3b307239370432d9910d4b79b4dbbaa",
                "searchGoogle",
                json!({"query": "latest news on ai"}),
            )],
            usage: Some((226, 20)),
            error: None,
        },
        Expect {
            file: "compat-08-bedrock-claude-text-then-tools-index-from-1.sse",
            text: "I'll run both `ls` commands in a single turn for you - one on the current directory and one on the `working_dir`.",
            reasoning: false,
            calls: vec![
                (
                    "toolu_bdrk_01RMTd7R9DzQjEEWgDwzcBsU",
                    "developer__shell",
                    json!({"command": "ls"}),
                ),
                (
                    "toolu_bdrk_016bgVTGZdpjP8ehjMWp9cWW",
                    "developer__shell",
                    json!({"command": "ls working_dir"}),
                ),
            ],
            usage: Some((4982, 122)),
            error: None,
        },
        Expect {
            file: "compat-09-openrouter-error-midstream-sse-comments.sse",
            text: "",
            reasoning: true,
            calls: vec![],
            usage: None,
            error: Some("Token limit reached"),
        },
        Expect {
            file: "compat-10-groq-text-then-error-event.sse",
            text: "maybe",
            reasoning: true,
            calls: vec![],
            usage: None,
            error: Some("Tool choice is required, but model did not call a tool"),
        },
        Expect {
            file: "local-01-llamacpp-server-tool-call-token-args.sse",
            text: "",
            reasoning: false,
            calls: vec![(
                "W6REFSbDzoV8XK7JEEYvGeHABQ1NNaCX",
                "glob",
                json!({"pattern": "src/**/*.rs"}),
            )],
            usage: None,
            error: None,
        },
        Expect {
            file: "local-02-llamacpp-server-two-calls.sse",
            text: "",
            reasoning: false,
            calls: vec![
                (
                    "iDCwqiAQohPmslWJLdCmsnaxdUgTAHYj",
                    "glob",
                    json!({"pattern": "*.md"}),
                ),
                (
                    "8Tbe6120R1VIP1QEJJPIkwhQ9wLKPScW",
                    "bash",
                    json!({"command": "cargo --version"}),
                ),
            ],
            usage: None,
            error: None,
        },
        Expect {
            file: "local-03-llama-cpp-python-repeats-name-every-delta.sse",
            text: "",
            reasoning: false,
            calls: vec![(
                "call__0_bash_cmpl-96401f03-4d80-4177-913b-5e7d8500b73c",
                "bash",
                json!({"command": "git status"}),
            )],
            usage: None,
            error: None,
        },
        Expect {
            file: "local-04-llamacpp-server-tool-call-as-fenced-json-text.sse",
            text: "```json\n{\n  \"name\": \"glob\",\n  \"arguments\": {\n    \"pattern\": \"src/**/*.rs\"\n  }\n}\n```",
            reasoning: false,
            calls: vec![],
            usage: None,
            error: None,
        },
        Expect {
            // The raw wire: the echo of the prefill is the text protocol's to drop.
            file: "local-05-llamacpp-server-echoes-the-prefill.sse",
            text: "<||SYSTEM.EXEC>echo ikigai-echo-42<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\nikigai-echo-42\n<SYSTEM.OUTPUT||>\nThis line prints \"ikigai-echo-42\".",
            reasoning: false,
            calls: vec![],
            usage: Some((167, 14)),
            error: None,
        },
        Expect {
            // The raw wire: a result the model wrote itself, no call (the made-up result
            // is cut above the wire: `small_models_results`).
            file: "local-06-llamacpp-server-qwen-1.5b-writes-a-tool-response.sse",
            text: "<tool_response>\n{\"result\":{\"exit_code\":0,\"output\":\"Cargo.toml: cargo version 1.64.0\\n\"},\"tool_success\":true}\n</tool_response>",
            reasoning: false,
            calls: vec![],
            usage: Some((1968, 39)),
            error: None,
        },
    ]
}

#[tokio::test]
async fn every_chat_completions_fixture_decodes_to_the_right_events() {
    let all = expectations();
    // Every Chat-Completions-shaped fixture on disk is covered.
    let mut on_disk: Vec<String> = std::fs::read_dir(common::fixture_path(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("openai-chat") || n.starts_with("compat") || n.starts_with("local"))
        .collect();
    on_disk.sort();
    let mut covered: Vec<String> = all.iter().map(|e| e.file.to_string()).collect();
    covered.sort();
    assert_eq!(on_disk, covered);

    for exp in all {
        let (events, error) = replay(exp.file).await;
        let f = exp.file;
        assert_eq!(text(&events), exp.text, "{f}: text");
        assert_eq!(!reasoning(&events).is_empty(), exp.reasoning, "{f}: reasoning");
        let got: Vec<(String, String, Value)> = calls(&events);
        let want: Vec<(String, String, Value)> = exp
            .calls
            .iter()
            .map(|(i, n, a)| (i.to_string(), n.to_string(), a.clone()))
            .collect();
        assert_eq!(got, want, "{f}: tool calls");
        assert_eq!(usage(&events), exp.usage, "{f}: usage");
        match (exp.error, error) {
            (None, None) => assert!(finish(&events).is_some(), "{f}: finished"),
            (Some(want), Some(ProviderError::Api(msg))) => assert!(msg.contains(want), "{f}: {msg}"),
            (want, got) => panic!("{f}: expected error {want:?}, got {got:?}"),
        }
    }
}

#[tokio::test]
async fn a_body_cut_before_finish_is_reported_not_silently_accepted() {
    let fake = FakeProvider::start();
    // The role chunk and a few words, then the body ends cleanly with no finish reason.
    fake.push(Reply::text("one two three four").truncated(3));
    let config = Config {
        base_url: Some(fake.base_url.clone()),
        ..Config::default()
    };
    let provider = OpenAiChat::new(&config).unwrap();
    let msgs = vec![Message::user("hi")];
    let req = Request {
        model: "m",
        system: "",
        messages: &msgs,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let items: Vec<_> = provider.stream(req).await.unwrap().collect().await;
    assert_eq!(items[0], Ok(StreamEvent::TextDelta("one ".into())));
    assert!(
        matches!(items.last(), Some(Err(ProviderError::Stream(m))) if m.contains("closed before")),
        "{items:?}"
    );
}

#[tokio::test]
async fn malformed_chunks_end_the_stream_with_a_clear_error() {
    let fake = FakeProvider::start();
    fake.push(Reply::payloads(&[
        r#"{"choices":[{"delta":{"content":"ok"}}]}"#.to_string(),
        "{this is not json".to_string(),
    ]));
    let config = Config {
        base_url: Some(fake.base_url.clone()),
        ..Config::default()
    };
    let provider = OpenAiChat::new(&config).unwrap();
    let msgs = vec![Message::user("hi")];
    let req = Request {
        model: "m",
        system: "",
        messages: &msgs,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let items: Vec<_> = provider.stream(req).await.unwrap().collect().await;
    assert_eq!(items[0], Ok(StreamEvent::TextDelta("ok".into())));
    assert!(
        matches!(&items[1], Err(ProviderError::Stream(m)) if m.contains("malformed chunk")),
        "{items:?}"
    );
    // The key header: none configured, none sent.
    assert!(!fake.requests()[0].headers.contains_key("authorization"));
}
