//! The in-process engine with the real Qwen2.5-Coder 0.5B GGUF (no stand-in), greedy and
//! with short outputs: streaming, cancel, the context-full error, token injection after an
//! exec tag, the KV cache across turns, and the load errors.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::local as model;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use ikigai::message::Message;
use ikigai::provider::local::engine::{Engine, EngineError, EngineEvent, Finish, Status};
use ikigai::provider::local::load::LoadError;
use ikigai::provider::local::render::plain_output;
use ikigai::provider::local::tag::output_block;
use ikigai::provider::local::{LocalProvider, LocalSettings};
use ikigai::provider::{Provider, ProviderError, Request, StreamEvent};
use ikigai::tools::bash::Bash;
use ikigai::tools::{Envelope, Tool, ToolContext};
use model::{prompt, run, serial_async, settings, text_of, token_count};
use serde_json::json;

#[tokio::test]
async fn a_plain_answer_streams_as_text_deltas() {
    let _g = serial_async().await;
    let engine = Engine::spawn(settings(2048)).unwrap();
    assert!(matches!(engine.ready().await, Ok(ref n) if !n.is_empty()));
    let events = run(&engine, prompt("Write the word hello five times."), 12).await;
    let texts = events
        .iter()
        .filter(|e| matches!(e, EngineEvent::Text(_)))
        .count();
    assert!(texts >= 2, "streamed in several deltas: {events:?}");
    assert!(!text_of(&events).trim().is_empty());
    let Some(EngineEvent::Finished {
        finish,
        prompt_tokens,
        generated,
        ..
    }) = events.last().cloned()
    else {
        panic!("no Finished: {events:?}");
    };
    assert!(matches!(finish, Finish::Stop | Finish::Length));
    assert!((1..=12).contains(&generated));
    let c = engine.counters();
    assert_eq!(c.prompt_tokens, prompt_tokens);
    assert_eq!(
        c.position,
        prompt_tokens + generated,
        "every generated token is in the cache"
    );
    assert_eq!(c.reused, 0);
    assert_eq!(c.decoded, prompt_tokens);
}

#[tokio::test]
async fn cancel_stops_between_two_tokens_and_keeps_the_partial_answer_cached() {
    let _g = serial_async().await;
    let engine = Engine::spawn(settings(2048)).unwrap();
    let (mut rx, cancel) = engine.start(prompt("Count from 1 to 200, separated by commas."), Some(400));
    let mut seen = String::new();
    let mut deltas = 0;
    let finished = loop {
        match rx.recv().await.expect("event") {
            EngineEvent::Text(t) => {
                seen.push_str(&t);
                deltas += 1;
                if deltas == 3 {
                    cancel.store(true, Ordering::Relaxed);
                }
            }
            other => break other,
        }
    };
    let EngineEvent::Finished {
        finish,
        prompt_tokens,
        generated,
        ..
    } = finished
    else {
        panic!("expected Finished, got {finished:?}");
    };
    assert_eq!(finish, Finish::Cancelled);
    assert!(generated < 400, "stopped long before the limit ({generated})");
    assert_eq!(engine.counters().position, prompt_tokens + generated);
    // The engine is free again at once.
    let events = run(&engine, prompt("Say ok."), 2).await;
    assert!(
        matches!(events.last(), Some(EngineEvent::Finished { .. })),
        "{events:?}"
    );
}

#[tokio::test]
async fn dropping_the_provider_stream_cancels_the_generation() {
    let _g = serial_async().await;
    let mut s = settings(2048);
    s.max_output_tokens = 300;
    let long = LocalProvider::new(s).unwrap();
    let messages = vec![Message::user("Count from 1 to 300, separated by commas.")];
    let req = Request {
        model: "local",
        system: "",
        messages: &messages,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let mut stream = long.stream(req).await.unwrap();
    let mut deltas = 0;
    while let Some(Ok(ev)) = stream.next().await {
        if matches!(ev, StreamEvent::TextDelta(_)) {
            deltas += 1;
            if deltas == 3 {
                break;
            }
        }
    }
    drop(stream);
    // The next request is served: the cancelled one ended early, not after 300 tokens.
    let messages = vec![Message::user("Say ok.")];
    let req = Request {
        model: "local",
        system: "",
        messages: &messages,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let events: Vec<_> = long.stream(req).await.unwrap().collect().await;
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    let c = long.engine().counters();
    assert_eq!(c.jobs, 2);
    assert!(c.reused > 0, "the cancelled answer's prompt prefix stayed cached");
}

#[tokio::test]
async fn a_full_context_is_the_distinct_context_length_error_and_the_engine_goes_on() {
    let _g = serial_async().await;
    // A prompt that does not fit at all.
    let mut s = settings(512);
    s.max_output_tokens = 8;
    let provider = LocalProvider::new(s).unwrap();
    let long = "word ".repeat(2000);
    let messages = vec![Message::user(long)];
    let req = Request {
        model: "local",
        system: "",
        messages: &messages,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let events: Vec<_> = provider.stream(req).await.unwrap().collect().await;
    assert!(
        matches!(events.last(), Some(Err(ProviderError::ContextLength { detail, requested: Some(_), window: Some(512) })) if detail.contains("context length exceeded")),
        "{events:?}"
    );
    // A prompt that fits with a few tokens to spare: the answer fills the window.
    let mut s = settings(512);
    s.max_output_tokens = 400;
    let engine = Engine::spawn(s).unwrap();
    engine.ready().await.unwrap();
    let n_ctx = engine.counters().n_ctx;
    assert!(n_ctx >= 512);
    let words = "word ".repeat(n_ctx as usize - 60);
    let text = format!("Repeat this text exactly: {words}");
    let events = run(&engine, prompt(&text), 400).await;
    assert!(
        matches!(events.last(), Some(EngineEvent::Failed(EngineError::ContextFull { n_ctx: n, .. })) if *n == n_ctx),
        "{events:?}"
    );
    assert!(
        !text_of(&events).is_empty(),
        "the partial answer streamed before the error"
    );
    assert_eq!(
        engine.counters().position,
        n_ctx - 1,
        "filled to the last slot, nothing overwritten"
    );
    // Still usable: a short prompt reuses what it can and answers.
    let events = run(&engine, prompt("Say ok."), 2).await;
    assert!(
        matches!(events.last(), Some(EngineEvent::Finished { .. })),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_exec_tag_pauses_and_the_output_is_decoded_straight_into_the_context() {
    let _g = serial_async().await;
    let engine = Engine::spawn(settings(2048)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ran.log");
    let command = format!("echo ikigai-$RANDOM | tee -a {}", log.display());
    let forced = format!("<||SYSTEM.EXEC>{command}<SYSTEM.EXEC||>");
    let mut p = prompt("Run the command, then tell me what it printed.");
    p.continuation = Some(forced.clone());

    // 1. The forced prefix ends in a complete tag: the engine pauses and names the command.
    let events = run(&engine, p.clone(), 16).await;
    let execs: Vec<_> = events
        .iter()
        .filter_map(|e| {
            if let EngineEvent::Exec(c) = e {
                Some(c.clone())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(execs, vec![command.clone()]);
    assert!(matches!(
        events.last(),
        Some(EngineEvent::Finished {
            finish: Finish::Exec,
            generated: 0,
            ..
        })
    ));
    let before = engine.counters().position;

    // 2. The command runs through ikigai's bash tool.
    let ctx = ToolContext::new(dir.path().to_path_buf(), 16 * 1024, Duration::from_secs(10));
    let out = Bash.call(json!({ "command": command }), &ctx).await.unwrap();
    let printed = out.result["output"].as_str().unwrap().trim().to_string();
    assert!(printed.starts_with("ikigai-"), "{printed}");
    // On lines of its own, as the engine renders it.
    let block = format!(
        "\n{}\n",
        output_block(&plain_output(&Envelope::of_output(&out).to_string()))
    );

    // 3. The follow-up's only new text is the output block: decoded, then generation goes on.
    p.continuation = Some(format!("{forced}{block}"));
    let events = run(&engine, p, 16).await;
    let c = engine.counters();
    assert_eq!(
        c.reused, before,
        "nothing before the closing tag was decoded again"
    );
    assert_eq!(
        c.decoded as usize,
        token_count(&block),
        "exactly the output block's tokens"
    );
    assert_eq!(
        c.prompt_tokens,
        before + c.decoded,
        "the position advanced by the output's tokens"
    );
    assert!(
        c.generated > 0 && !text_of(&events).is_empty(),
        "generation continued: {events:?}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, EngineEvent::Exec(_))),
        "the tag is not run again"
    );
    let ran = std::fs::read_to_string(&log).unwrap();
    assert_eq!(ran.lines().count(), 1, "the command ran once");
    assert_eq!(ran.trim(), printed);
}

#[tokio::test]
async fn the_second_turn_decodes_only_its_new_tokens() {
    let _g = serial_async().await;
    let provider = LocalProvider::new(settings(2048)).unwrap();
    let mut messages = vec![Message::user("Name one colour.")];
    let req = Request {
        model: "local",
        system: "Answer in one word.",
        messages: &messages,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let mut answer = String::new();
    let mut stream = provider.stream(req).await.unwrap();
    while let Some(ev) = stream.next().await {
        if let StreamEvent::TextDelta(t) = ev.unwrap() {
            answer.push_str(&t);
        }
    }
    let first = provider.engine().counters();
    assert_eq!(first.reused, 0);
    assert_eq!(
        first.decoded, first.prompt_tokens,
        "the first turn prefills the whole prompt"
    );
    assert!(
        first.prompt_tokens > 50,
        "the system prompt alone is longer than that"
    );

    messages.push(Message::assistant(answer));
    messages.push(Message::user("Another one."));
    let req = Request {
        model: "local",
        system: "Answer in one word.",
        messages: &messages,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let events: Vec<_> = provider.stream(req).await.unwrap().collect().await;
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    let second = provider.engine().counters();
    assert_eq!(
        second.reused, first.position,
        "the whole first turn, answer included, stayed cached"
    );
    assert_eq!(second.decoded, second.prompt_tokens - second.reused);
    let new_text = "<|im_end|>\n<|im_start|>user\nAnother one.<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(
        second.decoded as usize,
        token_count(new_text),
        "only the new message's tokens"
    );
}

fn load_error(path: &std::path::Path) -> LoadError {
    let engine = Engine::spawn(LocalSettings::new(path)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match rt.block_on(engine.ready()) {
        Err(EngineError::Load(e)) => {
            assert_eq!(engine.status(), Status::Failed(e.clone()));
            e
        }
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn load_errors_are_clear_and_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.gguf");
    let e = load_error(&missing);
    assert_eq!(e, LoadError::Missing(missing.clone()));
    assert!(e.to_string().contains("nope.gguf") && e.to_string().contains("does not exist"));

    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "hello, not a model\n").unwrap();
    let e = load_error(&text);
    assert_eq!(e, LoadError::NotGguf(text.clone()));
    assert!(e.to_string().contains("notes.gguf"));

    // A real header cut short: the magic is right, the rest is missing.
    let cut = dir.path().join("cut.gguf");
    let mut head = vec![0u8; 4096];
    std::io::Read::read_exact(&mut std::fs::File::open(model::model_path()).unwrap(), &mut head).unwrap();
    std::fs::File::create(&cut).unwrap().write_all(&head).unwrap();
    let e = load_error(&cut);
    assert!(matches!(e, LoadError::BadGguf(_)), "{e:?}");
    assert!(e.to_string().contains("cut.gguf"));
}

#[test]
fn a_request_while_loading_waits_for_the_model() {
    let _g = model::serial();
    let engine = Engine::spawn(settings(512)).unwrap();
    // Queued at once, before the model can have loaded.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let events = rt.block_on(run(&engine, prompt("Say ok."), 2));
    assert!(
        matches!(events.last(), Some(EngineEvent::Finished { .. })),
        "{events:?}"
    );
    assert!(
        matches!(engine.status(), Status::Ready { notice: None, .. }),
        "the GGUF's own template applies"
    );
}
