//! Sub-agents under `ikigai acp` (the official SDK's client script, the loopback fake
//! vendor): a sub-agent's call that needs a question is asked of the editor, on the
//! parent's `task` call, naming the sub-agent; a rejection refuses it, an allow runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use crate::common::fake_provider::{FakeProvider, Reply};

#[test]
fn a_sub_agent_s_question_goes_to_the_editor_on_the_task_call() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let agents = h.path().join(".config/ikigai/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("builder.md"),
        "---\nname: builder\ndescription: Builds things.\ntools: Bash\n---\nBuild.\n",
    )
    .unwrap();
    let bash = |c: &str| json!({ "command": c }).to_string();
    let task = json!({"description": "make files", "prompt": "touch two files", "agent_type": "builder"});
    fake.push(Reply::tool_calls(&[("p1", "task", &task.to_string())]))
        .push(Reply::tool_calls(&[
            ("s1", "bash", &bash("touch one")),
            ("s2", "bash", &bash("touch two")),
        ]))
        .push(Reply::text("SUB-DONE"))
        .push(Reply::text("all done"));
    let plan = json!({
        "answers": ["reject_once", "allow_once"],
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "go"}],
    });
    let out = crate::acp::client(h.path(), &fake, &[], plan);
    assert_eq!(out["steps"][2]["result"]["stopReason"], "end_turn", "{out}");
    assert!(!h.path().join("one").exists(), "rejected: not run");
    assert!(h.path().join("two").exists(), "allowed: run");
    let asked = out["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{out}");
    for a in asked {
        assert_eq!(a["toolCall"]["toolCallId"], "p1", "{a}");
        let title = a["toolCall"]["title"].as_str().unwrap_or_default();
        assert!(
            title.contains("asked by the sub-agent builder: make files"),
            "{a}"
        );
    }
}
