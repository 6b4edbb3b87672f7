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
