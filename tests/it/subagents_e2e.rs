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

/// The sessions as `ikigai sessions --json` lists them, in its order.
fn sessions_json(home: &Path, cwd: &Path) -> Vec<Value> {
    let out = common::run_in(home, cwd, &["sessions", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_sub_agent_s_run_is_its_own_session_under_its_parent_and_resumes_on_its_own() {
    let (home, proj) = setup("explorer.md", EXPLORER);
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "p1",
        "task",
        &task("SUB-PROMPT: where is fn main?", "explorer"),
    )]))
    .push(Reply::tool_calls(&[("s1", "grep", r#"{"pattern":"fn main"}"#)]))
    .push(Reply::text("SUB-ANSWER: in main.rs"))
    .push(Reply::text("PARENT-ANSWER: main.rs"));
    let out = run(home.path(), &proj, &fake, &["-p", "PARENT-PROMPT: find main"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    // Listed: the parent, then its sub-agent's session, linked to it and to the call.
    let list = sessions_json(home.path(), &proj);
    assert_eq!(list.len(), 2, "{list:?}");
    let (parent, child) = (&list[0], &list[1]);
    assert_eq!(parent["title"], "PARENT-PROMPT: find main");
    assert!(parent.get("parent").is_none(), "{parent}");
    assert_eq!(child["title"], "SUB-PROMPT: where is fn main?");
    assert_eq!(child["parent"], parent["id"]);
    assert_eq!(child["parent_call"], "p1");
    let child_id = child["id"].as_str().unwrap().to_string();
    // The parent's call result names the session.
    let result = fake.requests()[3].body["messages"].to_string();
    assert!(result.contains(&child_id), "{result}");
    // The table shows it under its parent, marked.
    let table = common::text(&common::run_in(home.path(), &proj, &["sessions"]).stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1].contains("PARENT-PROMPT"), "{table}");
    assert!(lines[2].contains("↳ sub-agent: SUB-PROMPT"), "{table}");
    // Exported as any session, saying whose it is.
    let md = common::run_in(home.path(), &proj, &["export", &child_id]);
    let md = common::text(&md.stdout);
    assert!(md.contains("SUB-ANSWER: in main.rs"), "{md}");
    assert!(md.contains("sub-agent of:"), "{md}");
    // `--continue` is the parent's conversation, never the sub-agent's.
    fake.push(Reply::text("more"));
    let out = run(home.path(), &proj, &fake, &["-c", "-p", "and then?"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let cont = fake.requests()[4].body["messages"].to_string();
    assert!(cont.contains("PARENT-ANSWER"), "{cont}");
    // Resumed on its own: an ordinary session with the sub-agent's history.
    fake.push(Reply::text("resumed"));
    let out = run(
        home.path(),
        &proj,
        &fake,
        &["--resume", &child_id, "-p", "CHILD-FOLLOW-UP"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let resumed = fake.requests()[5].body["messages"].to_string();
    for part in [
        "SUB-PROMPT: where is fn main?",
        "main.rs:1",
        "SUB-ANSWER: in main.rs",
        "CHILD-FOLLOW-UP",
    ] {
        assert!(resumed.contains(part), "{part}: {resumed}");
    }
    assert!(!resumed.contains("PARENT-PROMPT"), "{resumed}");
}

/// An answer whose usage is 2M input tokens (1M of them cached) and 500k output: $2.50 at
/// the price `priced` configures.
fn costly_answer(text: &str) -> Reply {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    Reply::payloads(&[
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake", "choices": [],
            "usage": {"prompt_tokens": 2_000_000, "completion_tokens": 500_000, "total_tokens": 2_500_000,
                "prompt_tokens_details": {"cached_tokens": 1_000_000}}})
        .to_string(),
        "[DONE]".to_string(),
    ])
}

/// A provider with a price (input $1, cached $0.50, output $2 per million tokens).
fn priced(home: &Path, fake: &FakeProvider) {
    std::fs::write(
        home.join(".config/ikigai/config.toml"),
        format!(
            "provider = \"proxy\"\n[providers.proxy]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n\
             model = \"team-model\"\nprice = {{ input = 1.0, cached = 0.5, output = 2.0 }}\n",
            fake.base_url
        ),
    )
    .unwrap();
}

fn json_lines(out: &Output) -> Vec<Value> {
    s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_sub_agent_s_tokens_and_cost_count_in_the_parent_s() {
    let (home, proj) = setup("explorer.md", EXPLORER);
    let fake = FakeProvider::start();
    priced(home.path(), &fake);
    // Parent: 20 in, 7 out; sub-agent: 2M in (1M cached), 500k out; parent: 10 in, 5 out.
    fake.push(Reply::tool_calls(&[("p1", "task", &task("count", "explorer"))]))
        .push(costly_answer("SUB-ANSWER"))
        .push(Reply::text("done"));
    let out = common::ikigai(home.path())
        .current_dir(&proj)
        .args(["--json", "-p", "go"])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let evs = json_lines(&out);
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9;
    // Parent's own: 20e-6 + 14e-6 and 10e-6 + 10e-6; the sub-agent's: 2.50.
    let total = 2.5 + 0.000034 + 0.00002;
    let ended = evs.last().unwrap();
    assert_eq!(ended["type"], "turn_ended", "{ended}");
    assert_eq!(ended["usage"]["input"], 2_000_030, "{ended}");
    assert_eq!(ended["usage"]["output"], 500_012, "{ended}");
    assert_eq!(ended["usage"]["cached"], 1_000_000, "{ended}");
    assert!(close(&ended["usage"]["cost"], total), "{ended}");
    // The sessions: the parent's cost counts its sub-agent's, which has its own.
    let list = sessions_json(home.path(), &proj);
    assert_eq!(list.len(), 2, "{list:?}");
    assert!(close(&list[0]["cost"], total), "{list:?}");
    assert!(close(&list[1]["cost"], 2.5), "{list:?}");
    // Resumed, the parent starts from it; `/cost` has it by model.
    fake.push(Reply::text("again"));
    let out = common::ikigai(home.path())
        .current_dir(&proj)
        .args(["--continue"])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"more\n/cost\n")?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let shown = s(&out.stdout);
    assert!(
        shown.contains("team-model: 2000040 in (1000000 cached), 500017 out"),
        "{shown}"
    );
    assert!(shown.contains("Total: $2.50"), "{shown}");
}

/// Waits (a minute at most) until the fake vendor has received `n` requests; whether it did.
fn requests_reach(fake: &FakeProvider, n: usize) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if fake.requests().len() >= n {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// The tool results of a request, in order: (call id, content).
fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn several_task_calls_run_at_once_and_are_answered_in_call_order() {
    let (home, proj) = setup("explorer.md", EXPLORER);
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("p1", "task", &task("SUB-ONE", "explorer")),
        ("p2", "task", &task("SUB-TWO", "explorer")),
    ]))
    .push(Reply::text("FIRST-ANSWER"))
    .push(Reply::text("SECOND-ANSWER"))
    .push(Reply::text("both done"));
    // The first sub-agent's answer waits until the second sub-agent's request arrived: run
    // one after the other, that request would never come.
    fake.hold_before("FIRST-ANSWER");
    let child = common::ikigai(home.path())
        .current_dir(&proj)
        .args(["-p", "go", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let overlapped = requests_reach(&fake, 3);
    fake.release();
    let out = child.wait_with_output().unwrap();
    assert!(
        overlapped,
        "the second sub-agent started only after the first answered"
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "{}", s(&out.stderr));
    // The sub-agent whose request came first got the first answer.
    let first_is_one = reqs[1].body["messages"].to_string().contains("SUB-ONE");
    assert_ne!(
        first_is_one,
        reqs[2].body["messages"].to_string().contains("SUB-ONE")
    );
    let results = tool_results(&reqs[3].body);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["p1", "p2"], "answered in call order");
    let (one, two) = if first_is_one {
        ("FIRST-ANSWER", "SECOND-ANSWER")
    } else {
        ("SECOND-ANSWER", "FIRST-ANSWER")
    };
    assert!(results[0].1.contains(one), "{results:?}");
    assert!(results[1].1.contains(two), "{results:?}");
}

const SLOW: &str =
    "---\nname: runner\ndescription: Runs commands.\ntools: Bash\ntimeout_secs: 5\n---\nRun it.\n";

#[test]
fn a_sub_agent_stopped_by_its_limit_is_killed_and_the_other_s_answer_is_delivered() {
    let (home, proj) = setup("runner.md", SLOW);
    let pid_file = home.path().join("slow.pid");
    let command = format!("echo $$ > {}; exec sleep 60", pid_file.display());
    let fake = FakeProvider::start();
    // Whichever sub-agent asks first runs the slow command; the other answers at once.
    fake.push(Reply::tool_calls(&[
        ("p1", "task", &task("one", "runner")),
        ("p2", "task", &task("two", "runner")),
    ]))
    .push(Reply::tool_calls(&[(
        "s1",
        "bash",
        &json!({ "command": command }).to_string(),
    )]))
    .push(Reply::text("QUICK-ANSWER"))
    .push(Reply::text("one of them answered"));
    let out = run(home.path(), &proj, &fake, &["-p", "go", "--approval", "auto"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "{}", s(&out.stderr));
    let results = tool_results(&reqs[3].body);
    assert_eq!(results.len(), 2, "{results:?}");
    let (timed_out, answered): (Vec<_>, Vec<_>) =
        results.iter().partition(|(_, r)| r.contains("TOOL_TIMEOUT"));
    assert_eq!((timed_out.len(), answered.len()), (1, 1), "{results:?}");
    assert!(answered[0].1.contains("QUICK-ANSWER"), "{results:?}");
    let pid: i32 = common::wait_for_file(&pid_file).trim().parse().unwrap();
    let gone = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| {
        st.rsplit(')').next().unwrap().trim_start().starts_with('Z')
    });
    assert!(gone, "the stopped sub-agent's command was not killed");
}

#[test]
fn cancelling_the_parent_cancels_every_running_sub_agent() {
    let (home, proj) = setup("runner.md", RUNNER);
    let fake = FakeProvider::start();
    let pids: Vec<PathBuf> = (1..=2).map(|i| home.path().join(format!("{i}.pid"))).collect();
    let slow =
        |p: &Path| json!({ "command": format!("echo $$ > {}; exec sleep 60", p.display()) }).to_string();
    fake.push(Reply::tool_calls(&[
        ("p1", "task", &task("one", "runner")),
        ("p2", "task", &task("two", "runner")),
    ]))
    .push(Reply::tool_calls(&[("s1", "bash", &slow(&pids[0]))]))
    .push(Reply::tool_calls(&[("s2", "bash", &slow(&pids[1]))]));
    let child = common::ikigai(home.path())
        .current_dir(&proj)
        .args(["-p", "go", "--approval", "auto", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let running: Vec<i32> = pids
        .iter()
        .map(|p| common::wait_for_file(p).trim().parse().unwrap())
        .collect();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", s(&out.stderr));
    for pid in running {
        let gone = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| {
            st.rsplit(')').next().unwrap().trim_start().starts_with('Z')
        });
        assert!(gone, "a sub-agent's command ({pid}) was not killed");
    }
    assert_eq!(fake.requests().len(), 3, "nothing was sent after the cancel");
}

#[test]
fn under_json_a_sub_agent_s_events_are_tagged_with_its_call_and_session() {
    let (home, proj) = setup("explorer.md", EXPLORER);
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "p1",
        "task",
        &task("find main", "explorer"),
    )]))
    .push(Reply::tool_calls(&[("s1", "grep", r#"{"pattern":"fn main"}"#)]))
    .push(Reply::text("SUB-ANSWER"))
    .push(Reply::text("done"));
    let out = run(home.path(), &proj, &fake, &["--json", "-p", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let evs = json_lines(&out);
    let tagged: Vec<&Value> = evs.iter().filter(|e| e["type"] == "sub_agent").collect();
    assert!(!tagged.is_empty(), "{evs:?}");
    let child = sessions_json(home.path(), &proj)[1]["id"].clone();
    for e in &tagged {
        assert_eq!((&e["id"], &e["session"]), (&json!("p1"), &child), "{e}");
    }
    let inner: Vec<&str> = tagged
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .filter(|t| *t != "text_delta")
        .collect();
    let at = |t: &str| {
        inner
            .iter()
            .position(|x| *x == t)
            .unwrap_or_else(|| panic!("{t}: {inner:?}"))
    };
    assert!(at("tool_call_started") < at("tool_call_finished"), "{inner:?}");
    assert_eq!(inner.last(), Some(&"turn_ended"), "{inner:?}");
    let started = tagged
        .iter()
        .find(|e| e["event"]["type"] == "tool_call_started")
        .unwrap();
    assert_eq!(started["event"]["name"], "grep");
    // Its text is its own: the parent's answer is not the sub-agent's.
    let ended = evs.last().unwrap();
    assert_eq!(
        (&ended["type"], &ended["text"]),
        (&json!("turn_ended"), &json!("done"))
    );
    // The parent's own events stay untagged: one call started at the top level.
    let top: Vec<&Value> = evs.iter().filter(|e| e["type"] == "tool_call_started").collect();
    assert_eq!(top.len(), 1, "{top:?}");
    assert_eq!(top[0]["name"], "task");
}
