//! Constrained decoding in the in-process engine, with the real Qwen2.5-Coder 0.5B GGUF:
//! an opened exec tag is completed into a valid call under the grammar built from the
//! tools, text outside tags is never constrained, the grammar really decides what is
//! sampled, and a grammar llama.cpp rejects leaves sampling unconstrained without a crash.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::local as model;

use ikigai::message::Message;
use ikigai::provider::local::engine::{Engine, EngineEvent, Finish};
use ikigai::provider::local::render::{self, ChatPrompt};
use ikigai::provider::local::tool_call as to_call;
use ikigai::tools::{Registry, ToolSchema};
use model::{serial_async, settings, text_of};

async fn run(engine: &Engine, prompt: ChatPrompt, max: u32, tools: &[ToolSchema]) -> Vec<EngineEvent> {
    let (mut rx, _cancel) = engine.start_with_tools(prompt, Some(max), tools.to_vec());
    let mut out = Vec::new();
    while let Some(e) = rx.recv().await {
        let last = matches!(e, EngineEvent::Finished { .. } | EngineEvent::Failed(_));
        out.push(e);
        if last {
            break;
        }
    }
    out
}

fn execs(events: &[EngineEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Exec(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn finish(events: &[EngineEvent]) -> Finish {
    match events.last() {
        Some(EngineEvent::Finished { finish, .. }) => *finish,
        other => panic!("not finished: {other:?}"),
    }
}

fn ask(user: &str, tools: &[ToolSchema], primer: bool) -> ChatPrompt {
    render::chat_prompt_with(
        "You are a terse assistant.",
        &[Message::user(user)],
        tools,
        primer,
    )
}

/// A valid call: a known tool's call with its arguments parsed, or a one-line command.
fn assert_valid_call(command: &str, tools: &[ToolSchema]) {
    assert!(!command.trim().is_empty(), "empty command");
    assert!(!command.contains('\n'), "one line: {command:?}");
    assert!(
        !command.to_lowercase().contains("system."),
        "no tag inside: {command:?}"
    );
    let (name, args) = to_call(command, tools);
    let starts_like_a_call = tools
        .iter()
        .any(|t| t.name != "bash" && command.starts_with(&format!("{}(", t.name)));
    assert_eq!(name != "bash", starts_like_a_call, "{command:?} is {name} {args}");
    let args: serde_json::Value = serde_json::from_str(&args).unwrap();
    assert!(args.is_object(), "{args}");
}

#[tokio::test]
async fn a_forced_opening_tag_is_completed_into_a_valid_call() {
    let _g = serial_async().await;
    let tools = Registry::builtin().schemas();
    let engine = Engine::spawn(settings(4096)).unwrap();
    for (user, open) in [
        ("Which files are in this folder?", "<||SYSTEM.EXEC>"),
        // Any letter case opens a tag, and is constrained the same.
        ("What does notes.txt say?", "<||system.exec>"),
    ] {
        let mut p = ask(user, &tools, false);
        p.continuation = Some(open.to_string());
        let events = run(&engine, p, 96, &tools).await;
        let c = engine.counters();
        assert_eq!(c.grammar_error, None);
        assert!(c.constrained > 0, "sampled under the grammar: {c:?}");
        assert_eq!(finish(&events), Finish::Exec, "{events:?}");
        let calls = execs(&events);
        assert_eq!(calls.len(), 1, "{events:?}");
        assert_valid_call(&calls[0], &tools);
        assert_eq!(text_of(&events), "", "nothing of the tag is shown");
    }
}

#[tokio::test]
async fn a_tag_the_model_opens_itself_is_constrained_and_plain_text_is_not() {
    let _g = serial_async().await;
    let tools = Registry::builtin().schemas();
    let engine = Engine::spawn(settings(4096)).unwrap();
    // With the primer the model writes the tag itself.
    let events = run(&engine, ask("What is in notes.txt?", &tools, true), 96, &tools).await;
    let c = engine.counters();
    assert!(c.constrained > 0, "{c:?} {events:?}");
    assert!(
        c.constrained < c.generated || c.generated == c.constrained,
        "{c:?}"
    );
    let calls = execs(&events);
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_valid_call(&calls[0], &tools);

    // No tag at all: nothing is constrained.
    let events = run(&engine, model::prompt("Say hello in three words."), 12, &[]).await;
    assert!(execs(&events).is_empty());
    assert_eq!(engine.counters().constrained, 0);
}

#[tokio::test]
async fn the_grammar_decides_what_is_sampled_inside_the_tag() {
    let _g = serial_async().await;
    let mut s = settings(2048);
    s.exec_grammar = Some("root ::= \"echo forced-by-grammar\" \"<SYSTEM.EXEC||>\"".into());
    let engine = Engine::spawn(s).unwrap();
    let mut p = model::prompt("List the files.");
    p.continuation = Some("<||SYSTEM.EXEC>".into());
    let events = run(&engine, p, 48, &[]).await;
    assert_eq!(execs(&events), vec!["echo forced-by-grammar".to_string()]);
    assert_eq!(finish(&events), Finish::Exec);
}

#[tokio::test]
async fn a_grammar_llama_cpp_rejects_leaves_sampling_unconstrained_without_a_crash() {
    let _g = serial_async().await;
    let mut s = settings(2048);
    s.exec_grammar = Some("root ::= ( \"unclosed\"".into());
    let engine = Engine::spawn(s).unwrap();
    let mut p = model::prompt("List the files.");
    p.continuation = Some("<||SYSTEM.EXEC>".into());
    let events = run(&engine, p, 24, &[]).await;
    assert!(
        matches!(events.last(), Some(EngineEvent::Finished { .. })),
        "{events:?}"
    );
    let c = engine.counters();
    assert!(
        c.grammar_error
            .as_deref()
            .is_some_and(|e| e.contains("did not load")),
        "{c:?}"
    );
    assert_eq!(c.constrained, 0);
    // The engine still serves the next job.
    let events = run(&engine, model::prompt("Say ok."), 4, &[]).await;
    assert!(
        matches!(events.last(), Some(EngineEvent::Finished { .. })),
        "{events:?}"
    );
}

/// The cost of constrained decoding per token, measured by hand (one sitting, on an idle
/// machine): `cargo test --test it -- local_constrained::cost --ignored --nocapture`.
/// The same forced tag, greedy, with and without the grammar, alternated five times.
#[tokio::test]
#[ignore = "a measurement, run by hand"]
async fn cost_of_constrained_decoding_per_token() {
    let _g = serial_async().await;
    let tools = Registry::builtin().schemas();
    let mut free = settings(4096);
    free.constrain = false;
    let engines = [
        ("constrained", Engine::spawn(settings(4096)).unwrap()),
        ("unconstrained", Engine::spawn(free).unwrap()),
    ];
    let mut p = ask("Show the first lines of every .rs file under src.", &tools, false);
    p.continuation = Some("<||SYSTEM.EXEC>".into());
    let mut totals = [(0.0f64, 0u32); 2];
    for _ in 0..5 {
        for (i, (_, engine)) in engines.iter().enumerate() {
            // A different user turn each time would change the prompt: the same one is
            // decoded from the cache, so only generation is timed.
            let events = run(engine, p.clone(), 48, &tools).await;
            assert!(matches!(events.last(), Some(EngineEvent::Finished { .. })));
            let c = engine.counters();
            totals[i].0 += c.generation_ms;
            totals[i].1 += c.generated.saturating_sub(1);
        }
    }
    for (i, (name, engine)) in engines.iter().enumerate() {
        let (ms, n) = totals[i];
        println!(
            "{name}: {n} tokens, {:.2} ms/token (last job: {} constrained of {})",
            ms / f64::from(n.max(1)),
            engine.counters().constrained,
            engine.counters().generated
        );
    }
}
