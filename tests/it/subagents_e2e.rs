//! Sub-agents against the real binary and the loopback fake vendor: the `task` tool runs
//! a second agent with a fresh context, its type's system prompt and a tool subset (never
//! `task`: depth 1), and its final answer reaches the parent's next request; a sub-agent
//! cannot do more than the parent's mode allows without a question (nobody can answer
//! one); the tool is offered only when agent types exist, and an untrusted folder's types
//! are not loaded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(home: &Path, cwd: &Path, fake: &FakeProvider, args: &[&str]) -> Output {
    common::ikigai(home)
        .current_dir(cwd)
        .args(args)
        .args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "test-key")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// A home with the user's agent type `file` as `text`, and a project with `main.rs`.
fn setup(file: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let agents = home.path().join(".config/ikigai/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join(file), text).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("main.rs"), "fn main() {}\n").unwrap();
    (home, proj)
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn task(prompt: &str, agent_type: &str) -> String {
    json!({"description": "look around", "prompt": prompt, "agent_type": agent_type}).to_string()
}

const EXPLORER: &str = "---\nname: explorer\ndescription: Finds where things are in the code.\n\
                        tools: Read, Grep, Glob, task\n---\nEXPLORER-PROMPT: search, never change.\n";

#[test]
fn a_sub_agent_runs_with_a_fresh_context_and_its_tools_and_its_answer_reaches_the_parent() {
    let (home, proj) = setup("explorer.md", EXPLORER);
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "p1",
        "task",
        &task("SUB-PROMPT: where is fn main?", "explorer"),
    )]))
    .push(Reply::tool_calls(&[("s1", "grep", r#"{"pattern":"fn main"}"#)]))
    .push(Reply::text("SUB-ANSWER: fn main is in main.rs, line 1."))
    .push(Reply::text("It is in main.rs."));
    let out = run(home.path(), &proj, &fake, &["-p", "PARENT-PROMPT: find main"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "{}", s(&out.stderr));
    // The parent is offered `task`, its description listing the type; what it costs.
    let parent_tools = reqs[0].body["tools"].to_string();
    let task_schema = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap()
        .to_string();
    println!(
        "the task tool with one agent type: {} bytes of the first request",
        task_schema.len() + 1
    );
    assert!(tool_names(&reqs[0].body).contains(&"task".to_string()));
    assert!(
        parent_tools.contains("explorer: Finds where things are in the code."),
        "{parent_tools}"
    );
    // The sub-agent: a fresh context (its system prompt, its prompt), its tools only, no
    // `task` even when its type names it (depth 1).
    let sub = &reqs[1].body;
    let msgs = sub["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{sub}");
    assert!(
        msgs[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("EXPLORER-PROMPT"),
        "{sub}"
    );
    assert_eq!(msgs[1]["content"], "SUB-PROMPT: where is fn main?");
    assert!(!sub.to_string().contains("PARENT-PROMPT"));
    let mut names = tool_names(sub);
    names.sort();
    assert_eq!(names, ["file_read", "glob", "grep"]);
    // Its tool ran; its final answer is the parent's tool result.
    assert!(
        reqs[2].body["messages"].to_string().contains("main.rs:1"),
        "{}",
        reqs[2].body
    );
    let result = reqs[3]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .unwrap();
    assert!(
        result.contains("SUB-ANSWER: fn main is in main.rs, line 1."),
        "{result}"
    );
    assert!(!result.contains("s1"), "only the final answer: {result}");
}

const WRITER: &str =
    "---\nname: writer\ndescription: Writes files.\ntools: Write, Bash\n---\nWrite what you are told.\n";

#[test]
fn a_sub_agent_cannot_do_more_than_the_parent_without_asking() {
    // What the parent's mode allows without a question, the sub-agent does (`ask` lets a
    // file tool write inside the project); what would ask is refused (nobody answers).
    for (mode, writes, runs) in [
        ("read-only", false, false),
        ("ask", true, false),
        ("auto", true, true),
    ] {
        let (home, proj) = setup("writer.md", WRITER);
        let fake = FakeProvider::start();
        fake.push(Reply::tool_calls(&[(
            "p1",
            "task",
            &task("write x.txt", "writer"),
        )]))
        .push(Reply::tool_calls(&[
            ("s1", "file_write", r#"{"path":"x.txt","content":"x"}"#),
            ("s2", "bash", r#"{"command":"touch y.txt"}"#),
        ]))
        .push(Reply::text("tried"))
        .push(Reply::text("ok"));
        let out = run(home.path(), &proj, &fake, &["-p", "go", "--approval", mode]);
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", s(&out.stderr));
        assert_eq!(fake.requests().len(), 4, "{mode}: {}", s(&out.stderr));
        assert_eq!(proj.join("x.txt").exists(), writes, "{mode}: file_write");
        assert_eq!(proj.join("y.txt").exists(), runs, "{mode}: bash");
    }
    // The default type (no agent_type): read-only tools only; a write is no tool of its.
    let (home, proj) = setup("writer.md", WRITER);
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "p1",
        "task",
        &json!({"description": "d", "prompt": "write x.txt"}).to_string(),
    )]))
    .push(Reply::tool_calls(&[(
        "s1",
        "file_write",
        r#"{"path":"x.txt","content":"x"}"#,
    )]))
    .push(Reply::text("could not"))
    .push(Reply::text("ok"));
    let out = run(home.path(), &proj, &fake, &["-p", "go", "--approval", "auto"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let mut names = tool_names(&fake.requests()[1].body);
    names.sort();
    assert_eq!(names, ["file_read", "glob", "grep", "list_dir"]);
    assert!(!proj.join("x.txt").exists());
}

#[test]
fn task_is_offered_only_with_agent_types_and_an_untrusted_folder_s_are_not_loaded() {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("proj");
    let agents = proj.join(".ikigai/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("ok"))
        .push(Reply::text("ok"))
        .push(Reply::text("ok"));
    let out = run(home.path(), &proj, &fake, &["-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(!tool_names(&fake.requests()[0].body).contains(&"task".to_string()));
    std::fs::write(
        agents.join("r.md"),
        "---\nname: r\ndescription: Reviews.\n---\nReview.\n",
    )
    .unwrap();
    let out = run(home.path(), &proj, &fake, &["-p", "hi"]);
    assert!(s(&out.stderr).contains("agent type(s) in"), "{}", s(&out.stderr));
    assert!(!tool_names(&fake.requests()[1].body).contains(&"task".to_string()));
    let t = common::run_in(home.path(), &proj, &["trust"]);
    assert_eq!(t.status.code(), Some(0), "{}", s(&t.stderr));
    run(home.path(), &proj, &fake, &["-p", "hi"]);
    assert!(tool_names(&fake.requests()[2].body).contains(&"task".to_string()));
}

const RUNNER: &str = "---\nname: runner\ndescription: Runs commands.\ntools: Bash\n---\nRun it.\n";

#[test]
fn cancelling_the_parent_cancels_its_sub_agent_and_kills_its_tools() {
    let (home, proj) = setup("runner.md", RUNNER);
    let pid_file = home.path().join("tool.pid");
    let command = format!("echo $$ > {}; sleep 30; touch late", pid_file.display());
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "p1",
        "task",
        &task("run the slow thing", "runner"),
    )]))
    .push(Reply::tool_calls(&[(
        "s1",
        "bash",
        &json!({ "command": command }).to_string(),
    )]));
    let child = common::ikigai(home.path())
        .current_dir(&proj)
        .args(["-p", "go", "--approval", "auto", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid: i32 = common::wait_for_file(&pid_file).trim().parse().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", s(&out.stderr));
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| {
            st.rsplit(')').next().unwrap().trim_start().starts_with('Z')
        })
    };
    assert!(gone(pid), "the sub-agent's command was not killed");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "nothing was sent after the cancel");
    // The command was the sub-agent's: its own context and tools.
    assert_eq!(
        reqs[1].body["messages"].as_array().unwrap().len(),
        2,
        "{}",
        reqs[1].body
    );
    assert_eq!(tool_names(&reqs[1].body), ["bash"]);
}
