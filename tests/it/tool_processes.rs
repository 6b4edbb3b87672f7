//! Tool processes seen from outside: the real binary against the fake vendor, the model
//! running `bash`. Provider keys and secret-looking variables never reach the process;
//! processes that leave the tool's group die with the call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Recorded, Reply};
use serde_json::{Value, json};

const OPENAI_KEY: &str = "sk-test-OPENAIVALUE1234567";
const ANTHROPIC_KEY: &str = "sk-ant-ANTHROPICVALUE7654321";
const CUSTOM_KEY: &str = "custom-VENDORVALUE99887766";

fn run(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn ikigai");
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

/// The envelope of the last tool result in a request.
fn tool_envelope(req: &Recorded) -> Value {
    let tool: Vec<&Value> = req.messages().iter().filter(|m| m["role"] == "tool").collect();
    let last = tool
        .last()
        .unwrap_or_else(|| panic!("no tool result: {:?}", req.messages()));
    serde_json::from_str(last["content"].as_str().unwrap()).unwrap()
}

fn bash_call(id: &str, command: &str) -> Reply {
    let args = json!({ "command": command }).to_string();
    Reply::tool_calls(&[(id, "bash", &args)])
}

#[test]
fn provider_keys_and_secret_variables_never_reach_a_tool() {
    let fake = FakeProvider::start();
    fake.push(bash_call(
        "call_1",
        "env; echo \"openai=[$OPENAI_API_KEY] custom=[$CUSTOM_VENDOR_CRED]\"",
    ));
    fake.push(Reply::text("done"));
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        "api_key_env = \"CUSTOM_VENDOR_CRED\"\n\
         tool_env_pass = [\"GITHUB_TOKEN\", \"OPENAI_API_KEY\", \"CUSTOM_VENDOR_CRED\"]\n\
         tool_env_exclude = [\"corp_*\"]\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &["-p", "show env", "--base-url", &fake.base_url],
        &[
            ("IKIGAI_CONFIG", config.to_str().unwrap()),
            ("CUSTOM_VENDOR_CRED", CUSTOM_KEY),
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
            ("MY_SERVICE_TOKEN", "tokenvalue-should-not-pass"),
            ("db_password", "pwvalue-should-not-pass"),
            ("CORP_INTERNAL", "corpvalue-should-not-pass"),
            ("GITHUB_TOKEN", "ghvalue-passed-on-purpose"),
            ("PLAIN_SETTING", "plain-visible"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let envelope = tool_envelope(&reqs[1]);
    let output = envelope["result"]["output"].as_str().unwrap().to_string();
    // The tool really ran and printed its environment.
    assert!(output.contains("PLAIN_SETTING=plain-visible"), "{output}");
    assert!(output.contains("PATH="), "{output}");
    assert!(
        output.contains("GITHUB_TOKEN=ghvalue-passed-on-purpose"),
        "{output}"
    );
    assert!(output.contains("openai=[] custom=[]"), "{output}");
    let everything = format!(
        "{output}\n{stdout}\n{}",
        serde_json::to_string(&reqs[1].messages()).unwrap()
    );
    for hidden in [
        OPENAI_KEY,
        ANTHROPIC_KEY,
        CUSTOM_KEY,
        "tokenvalue-should-not-pass",
        "pwvalue-should-not-pass",
        "corpvalue-should-not-pass",
        "ANTHROPIC_API_KEY",
        "MY_SERVICE_TOKEN",
    ] {
        assert!(
            !everything.contains(hidden),
            "{hidden} reached the tool:\n{output}"
        );
    }
}

fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => matches!(
            stat.rsplit(')').next().unwrap_or("").trim_start().chars().next(),
            Some('Z' | 'X')
        ),
    }
}

#[test]
fn processes_that_leave_the_tool_group_die_with_the_call() {
    let fake = FakeProvider::start();
    // A new session, a job-control group, and a double fork into a new session. The
    // odd duration names these sleeps among every other test's processes.
    fake.push(bash_call(
        "call_1",
        "setsid sleep 100.4321 & echo $!; set -m; sleep 100.4321 & echo $!; set +m; \
         setsid -w bash -c 'sleep 100.4321 & echo $!'",
    ));
    // The next call runs while ikigai is still alive: the escaped processes are already
    // gone, not merely cleaned up at exit.
    fake.push(bash_call(
        "call_2",
        "ps -eo stat=,args= | awk '$1 !~ /^Z/ && $2 == \"sleep\" && $3 == \"100.4321\"'; echo checked",
    ));
    fake.push(Reply::text("done"));
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &["-p", "escape", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests();
    let output = tool_envelope(&reqs[1])["result"]["output"]
        .as_str()
        .unwrap()
        .to_string();
    let pids: Vec<i32> = output.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(pids.len(), 3, "{output}");
    let check = tool_envelope(&reqs[2])["result"]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        check, "checked\n",
        "escaped processes still ran during the next call"
    );
    for pid in pids {
        let start = std::time::Instant::now();
        while !gone(pid) && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(gone(pid), "pid {pid} outlived its tool call");
    }
}
