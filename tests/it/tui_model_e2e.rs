//! `/model` in the real binary's TUI (tmux) against loopback fakes: `/model` alone lists
//! the providers with the models their endpoints offer, `/model PROVIDER/MODEL` switches
//! (the status line follows) and the next message goes to the new provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply};
use crate::common::tmux::{Tmux, wait_exit};

#[test]
fn model_lists_then_switches_provider_in_the_tui() {
    let home = tempfile::tempdir().unwrap();
    let openai = FakeProvider::start();
    openai.push(Reply::text("OpenAI here."));
    let claude = FakeVendor::start(Wire::Anthropic);
    claude.with_models(&["claude-fake-1", "claude-fake-2"]);
    claude.push(anthropic_reply(
        Some(("Claude ponders.", "sig-1")),
        "Claude here.",
        &[],
    ));
    let dir = home.path().join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    // The tmux helper sets OPENAI_API_KEY only; the section reads its key from there.
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "model = \"gpt-fake-1\"\n\n[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\n\
             model = \"claude-fake-1\"\napi_key_env = \"OPENAI_API_KEY\"\n",
            claude.base_url
        ),
    )
    .unwrap();
    let t = Tmux::start(home.path(), &openai.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("hi");
    t.keys(&["Enter"]);
    t.wait_text("OpenAI here.");
    // From now on the fake lists its models (the first turn's window probe is done).
    openai.answer_gets();
    openai.push(Reply::status(200, r#"{"data":[{"id":"gpt-fake-1"}]}"#));
    t.type_text("/model");
    t.keys(&["Enter"]);
    let pane = t.wait_text("models: claude-fake-1, claude-fake-2");
    assert!(pane.contains("Providers (* current"), "{pane}");
    assert!(
        pane.lines()
            .any(|l| l.starts_with("* openai ") && l.contains("gpt-fake-1")),
        "{pane}"
    );
    assert!(pane.contains("models: gpt-fake-1"), "{pane}");
    assert!(!pane.contains("test-key"), "a key is never shown:\n{pane}");
    t.type_text("/model claude/claude-fake-1");
    t.keys(&["Enter"]);
    t.wait_text("model set to claude/claude-fake-1");
    t.type_text("and now?");
    t.keys(&["Enter"]);
    let pane = t.wait_text("Claude here.");
    assert!(
        pane.contains("∴ Claude ponders."),
        "reasoning shown apart:\n{pane}"
    );
    let status = pane
        .lines()
        .rev()
        .find(|l| l.contains("claude/claude-fake-1"))
        .unwrap_or_default();
    assert!(
        status.contains(" tok"),
        "the status line names the new provider:\n{pane}"
    );
    assert_eq!(claude.rejections(), Vec::<String>::new());
    let sent = claude.requests().last().unwrap().body.to_string();
    assert!(
        sent.contains("OpenAI here.") && sent.contains("and now?"),
        "{sent}"
    );
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// `/model FILE.gguf` and `/model local/FILE.gguf` select the in-process engine (they
/// once became `openai//FILE.gguf`, sent to the vendor): a missing file is refused by
/// name, the real model answers the next message, and `/model` lists the engine.
#[cfg(feature = "local")]
#[test]
fn a_gguf_file_in_model_selects_the_in_process_engine() {
    let _g = crate::local::serial();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let openai = FakeProvider::start();
    let cfg = h.join(".config/ikigai");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(
        cfg.join("config.toml"),
        "model = \"gpt-fake-1\"\nsystem_prompt = \"Be terse.\"\n[providers.local]\nctx = 4096\n\
         threads = 2\ntemperature = 0\nmax_output_tokens = 8\n",
    )
    .unwrap();
    let model = h.join("m.gguf");
    std::os::unix::fs::symlink(crate::local::model_path(), &model).unwrap();
    let t = Tmux::start(h, &openai.base_url, "");
    t.wait_text("Ask anything");
    t.type_text(&format!("/model {}/nope.gguf", h.display()));
    t.keys(&["Enter"]);
    let pane = t.wait_text("still using openai/gpt-fake-1");
    assert!(pane.contains("nope.gguf"), "{pane}");
    assert!(!pane.contains("openai//"), "{pane}");
    t.type_text(&format!("/model local/{}", model.display()));
    t.keys(&["Enter"]);
    t.wait_text(&format!("model set to local/{}", model.display()));
    t.type_text("Say hi.");
    t.keys(&["Enter"]);
    // The engine answered: the status line names it and counts its tokens (the model
    // loads and reads the prompt first, slow on a loaded machine: a longer deadline).
    let answered = |p: &str| {
        p.lines()
            .rev()
            .find(|l| l.contains(" tok"))
            .is_some_and(|l| l.starts_with("local/") && !l.contains(" 0 tok"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while !answered(&t.capture()) {
        let pane = t.capture();
        assert_eq!(
            pane.matches('✗').count(),
            1,
            "only the missing file's error:\n{pane}"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no answer from the engine:\n{pane}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    t.type_text("/model");
    t.keys(&["Enter"]);
    let pane = t.wait_text("Providers (* current");
    assert!(
        pane.lines()
            .any(|l| l.starts_with("* local ") && l.contains("m.gguf")),
        "{pane}"
    );
    let chats: Vec<String> = openai
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body.to_string())
        .collect();
    assert!(chats.is_empty(), "nothing went to the vendor: {chats:?}");
    t.keys(&["C-d"]);
    wait_exit(&t);
}
