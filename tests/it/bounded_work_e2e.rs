//! Bounded work against hostile servers and models, with the real binary: window probe
//! answers that never end are cut at their cap (peak RSS stays small, a warning says so),
//! so are a model list (a clear error) and an event line without an end; 20,000 tool calls in one response past `max_tool_turns` are answered in one step
//! (a handful of events, stored messages and results, a history a strict vendor takes);
//! a page nested 100,000 elements deep becomes Markdown within the call's time, saying
//! what was flattened; a fetch that runs out of time says what had arrived. Nothing here
//! measures time: work is counted in events, messages and bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::site::{Site, answer, stalling};

/// `VmHWM` of a live process, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn config(home: &Path, text: &str) {
    let dir = home.join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

#[test]
fn an_endless_window_probe_answer_is_cut_at_its_cap() {
    // A base URL that is no vendor's is asked for its window (`/props`, then `/models`),
    // in the background once the first (short) request is answered: each answers a JSON
    // document that never ends. The second request waits for that question's answer.
    let fake = FakeProvider::start();
    fake.answer_gets();
    fake.push(Reply::text("hello there"));
    fake.push(Reply::endless(r#"{"default_generation_settings": {"n_ctx": ""#));
    fake.push(Reply::endless(r#"{"data": [{"id": ""#));
    fake.push(Reply::text("second answer"));
    let h = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut child = common::ikigai(h.path())
        .current_dir(cwd.path())
        .args(["--base-url", &fake.base_url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hi\n").unwrap();
    stdin.flush().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let answered = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("hello there"));
    assert!(answered, "the first turn did not wait for the window");
    stdin.write_all(b"again\n").unwrap();
    stdin.flush().unwrap();
    let answered = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("second answer"));
    assert!(answered, "the turn went on after the probe");
    // The turn is over and ikigai waits for the next line: its peak so far.
    let peak = peak_rss(child.id());
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        peak < 150 << 20,
        "peak RSS {} MiB: the endless answer was read beyond its cap",
        peak >> 20
    );
    assert!(
        stderr.contains("passed 8388608 bytes; the rest was not read"),
        "the cut is said: {stderr}"
    );
    // Each answer was cut in turn; the conversation went on.
    let paths: Vec<String> = fake.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/props",
            "/v1/models",
            "/v1/chat/completions"
        ],
        "{stderr}"
    );
}

#[test]
fn an_endless_model_list_and_an_endless_event_line_are_cut_with_clear_errors() {
    let fake = FakeProvider::start();
    fake.answer_gets();
    // Whatever GET comes first (a window probe, the model list) meets an endless answer.
    fake.push(Reply::endless(r#"{"data": [{"id": ""#));
    fake.push(Reply::endless(r#"{"data": [{"id": ""#));
    let h = tempfile::tempdir().unwrap();
    let mut child = common::ikigai(h.path())
        .args(["--base-url", &fake.base_url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"/model\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("cannot list models: the model list of http://127.0.0.1:")
            && text.contains("passed 8388608 bytes; the rest was not read"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A streamed answer whose one `data:` line never ends: cut at the event limit.
    let fake = FakeProvider::start();
    fake.push(Reply::endless(
        "data: {\"choices\": [{\"delta\": {\"content\": \"",
    ));
    let h = tempfile::tempdir().unwrap();
    config(h.path(), "max_response_bytes = 1048576\n");
    let out = common::ikigai(h.path())
        .args(["-p", "hi", "--base-url", &fake.base_url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("one streamed event passed 2097152 bytes"),
        "{stderr}"
    );
}

#[test]
fn calls_past_the_limit_are_answered_in_one_step() {
    const CALLS: usize = 20_000;
    let fake = FakeProvider::start();
    let calls: Vec<(String, String, String)> = (0..CALLS)
        .map(|i| {
            (
                format!("call_{i}"),
                "bash".to_string(),
                json!({ "command": format!("echo {i}") }).to_string(),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    fake.push(Reply::tool_calls(&refs));
    fake.push(Reply::text("Stopped."));
    let h = tempfile::tempdir().unwrap();
    let out = common::ikigai(h.path())
        .args([
            "--json",
            "-p",
            "go",
            "--base-url",
            &fake.base_url,
            "--max-tool-turns",
            "3",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // A turn that reached max_tool_turns exits 1, as documented.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |t: &str| events.iter().filter(|e| e["type"] == t).count();
    // Three ran; one more stands for the 19,997 past the limit.
    assert_eq!(count("tool_call_started"), 4, "{} events", events.len());
    assert_eq!(count("tool_call_finished"), 4);
    assert!(events.len() < 40, "{} events", events.len());
    let last = events
        .iter()
        .rfind(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(last["output"]["error_code"], "LIMIT_REACHED");
    let said = last["output"]["error"].as_str().unwrap();
    assert!(said.contains("The 19996 calls after this one"), "{said}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "notice" && e["text"].as_str().unwrap().contains("19996 more tool calls")),
        "a notice says how many were left out"
    );
    // The model got a history a strict vendor takes (the fake checks it): each of the
    // four calls kept with its result, nothing of the others.
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "{stderr}");
    let messages = reqs[1].messages();
    let sent_calls: usize = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(sent_calls, 4);
    assert_eq!(messages.iter().filter(|m| m["role"] == "tool").count(), 4);
    // And the session keeps as little.
    let list = common::run_in(h.path(), h.path(), &["sessions", "--json"]);
    let sessions: Value = serde_json::from_slice(&list.stdout).unwrap();
    let stored = sessions[0]["messages"].as_i64().unwrap();
    assert!(stored < 20, "{stored} messages stored");
}

#[test]
fn a_page_nested_100000_deep_converts_and_says_what_was_flattened() {
    let deep = format!(
        "<html><body><h1>Top</h1>{}deep text{}</body></html>",
        "<div>".repeat(100_000),
        "</div>".repeat(100_000)
    );
    let site = Site::start(move |path| match path {
        "/deep.html" => Some(answer("200 OK", "text/html", deep.clone())),
        _ => None,
    });
    let h = tempfile::tempdir().unwrap();
    // Time enough for a debug build on a busy machine; on the old code this page took
    // minutes.
    config(h.path(), "tool_timeout_secs = 120\n");
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "web_fetch",
        &json!({ "url": site.url("/deep.html") }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let out = common::ikigai(h.path())
        .args(["-p", "fetch", "--base-url", &fake.base_url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests();
    let result: Value = reqs[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .unwrap();
    assert_eq!(result["tool_success"], true, "{result}");
    let r = &result["result"];
    let text = r["output"].as_str().unwrap();
    assert!(text.contains("# Top") && text.contains("deep text"), "{text}");
    let note = r["note"].as_str().unwrap();
    assert!(
        note.contains("deeper than 256") && note.contains("were left out"),
        "{note}"
    );
}

#[test]
fn a_fetch_that_runs_out_of_time_says_what_arrived() {
    let site = Site::start(|path| match path {
        "/slow.html" => Some(stalling("text/html", "<html><body>".repeat(100), 1 << 20)),
        _ => None,
    });
    let h = tempfile::tempdir().unwrap();
    config(h.path(), "tool_timeout_secs = 2\n");
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        (
            "c1",
            "web_fetch",
            &json!({ "url": site.url("/slow.html") }).to_string(),
        ),
        (
            "c2",
            "web_fetch",
            &json!({ "url": site.url("/never") }).to_string(),
        ),
    ]));
    fake.push(Reply::text("done"));
    let out = common::ikigai(h.path())
        .args(["-p", "fetch", "--base-url", &fake.base_url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests();
    let results: Vec<Value> = reqs[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(results[0]["error_code"], "TOOL_TIMEOUT");
    let slow = results[0]["error"].as_str().unwrap();
    assert!(
        slow.contains("answered (HTTP 200) but its body did not arrive within 2 s")
            && slow.contains("1200 bytes were received"),
        "{slow}"
    );
    let never = results[1]["error"].as_str().unwrap();
    assert!(never.contains("nothing was received"), "{never}");
}
