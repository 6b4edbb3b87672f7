//! Sub-agents in the real TUI (tmux, the loopback fake vendor): a sub-agent's call that
//! needs a question is asked of the user, naming the sub-agent, in the parent's ask mode;
//! `n` refuses it (the sub-agent is told), `y` runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

const BUILDER: &str = "---\nname: builder\ndescription: Builds things.\ntools: Bash\n---\nBuild.\n";

#[test]
fn a_sub_agent_s_question_goes_to_the_user_no_refuses_and_yes_runs() {
    let home = tempfile::tempdir().unwrap();
    let agents = home.path().join(".config/ikigai/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("builder.md"), BUILDER).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let fake = FakeProvider::start();
    let task = json!({"description": "make files", "prompt": "touch two files", "agent_type": "builder"});
    fake.push(Reply::tool_calls(&[("p1", "task", &task.to_string())]))
        .push(Reply::tool_calls(&[
            ("s1", "bash", &json!({"command": "touch made-by-no"}).to_string()),
            ("s2", "bash", &json!({"command": "touch made-by-yes"}).to_string()),
        ]))
        .push(Reply::text("SUB-DONE"))
        .push(Reply::text("Turn over."));
    let t = Tmux::start_in(home.path(), &proj, &fake.base_url, "");
    t.wait_text("ask mode");
    t.wait_text("Ask anything");
    t.type_text("go");
    t.keys(&["Enter"]);
    let pane = t.wait_text("y yes · n no");
    assert!(
        pane.contains("asked by the sub-agent builder: make files"),
        "the question names the sub-agent:\n{pane}"
    );
    assert!(pane.contains("touch made-by-no"), "{pane}");
    t.keys(&["n"]);
    t.wait_text("Reason for the model");
    t.keys(&["Enter"]);
    t.wait_for("the second question", |s| {
        s.contains("touch made-by-yes") && s.contains("y yes · n no")
    });
    t.keys(&["y"]);
    t.wait_text("Turn over.");
    assert!(proj.join("made-by-yes").exists(), "yes runs it");
    assert!(!proj.join("made-by-no").exists(), "no refuses it");
    // The sub-agent was told: its next request has the refusal and the result.
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4);
    let sub = reqs[2].body["messages"].to_string();
    assert!(sub.contains("NOT_APPROVED"), "{sub}");
    assert!(reqs[3].body["messages"].to_string().contains("SUB-DONE"));
}

const EXPLORER: &str = "---\nname: explorer\ndescription: Finds things.\ntools: Grep\n---\nSearch.\n";

#[test]
fn a_sub_agent_s_calls_show_live_in_its_task_block() {
    let home = tempfile::tempdir().unwrap();
    let agents = home.path().join(".config/ikigai/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("explorer.md"), EXPLORER).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("main.rs"), "fn main() {}\n").unwrap();
    let fake = FakeProvider::start();
    let task = json!({"description": "find main", "prompt": "where is main?", "agent_type": "explorer"});
    fake.push(Reply::tool_calls(&[("p1", "task", &task.to_string())]))
        .push(Reply::tool_calls(&[("s1", "grep", r#"{"pattern":"fn main"}"#)]))
        .push(Reply::text("SUB-DONE"))
        .push(Reply::text("Turn over."));
    // The sub-agent's answer waits: its block is still running, with its call in it.
    fake.hold_before("SUB-DONE");
    let t = Tmux::start_in(home.path(), &proj, &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("go");
    t.keys(&["Enter"]);
    let pane = t.wait_for("the sub-agent's call in the task block", |s| {
        s.contains("● grep") && s.contains("✓")
    });
    let task_row = pane.lines().position(|l| l.contains("task(")).expect(&pane);
    let grep_row = pane.lines().position(|l| l.contains("● grep")).expect(&pane);
    assert!(task_row < grep_row, "under the task call:\n{pane}");
    fake.release();
    t.wait_text("Turn over.");
}
