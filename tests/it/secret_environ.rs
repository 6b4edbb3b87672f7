//! No tool process can read a key: after start, ikigai's own environment block (as the
//! kernel shows it in `/proc/PID/environ`) holds no provider key, no variable the tool
//! filter removes (a config-named key variable included) and no database URL, yet ikigai
//! still authenticates with the key and passes `tool_env_pass` variables on. A `bash`
//! tool reads `/proc/$PPID/environ` (raw, and base64-encoded into what the model gets) and
//! the environment of every process named ikigai; the test reads `/proc/PID/environ` too.
//! Run as root, and as an ordinary user, for whom ikigai is not even readable
//! (non-dumpable).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

const KEY: &str = "sk-environ-KEY-4242424242";
const GH: &str = "ghp_PASSEDTOKEN99887766";
const AWS: &str = "AWS-SECRET-5566778899";
const CORP: &str = "CORPCRED-1122334455";
const SECRETS: [&str; 4] = [KEY, GH, AWS, CORP];

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The secret values (or the names that carried them) found in `bytes`.
fn found(bytes: &[u8]) -> Vec<String> {
    let text = s(bytes);
    let mut hits: Vec<String> = SECRETS
        .iter()
        .filter(|v| text.contains(*v))
        .map(|v| v.to_string())
        .collect();
    for name in [
        "OPENAI_API_KEY=",
        "GITHUB_TOKEN=",
        "AWS_SECRET_ACCESS_KEY=",
        "CORP_CRED=",
        "IKIGAI_DATABASE_URL=",
    ] {
        if text.contains(name) {
            hits.push(name.to_string());
        }
    }
    hits
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// One run: ikigai (as nobody, or as whoever runs the tests) answers a turn whose tool
/// call probes for secrets, and every place the probe looked is checked.
fn probe(as_nobody: bool) {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let out = h.join("probe");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(h.join(".config/ikigai")).unwrap();
    std::fs::write(
        h.join(".config/ikigai/config.toml"),
        "tool_env_pass = [\"GITHUB_TOKEN\"]\n\
         [providers.corp]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"CORP_CRED\"\n",
    )
    .unwrap();
    if as_nobody {
        chown_all(h, 65534);
    }
    let o = out.display();
    let command = format!(
        "tr '\\0' '\\n' 2> {o}/ppid.err > {o}/ppid.txt < /proc/$PPID/environ; \
         for p in /proc/[0-9]*; do if [ \"$(cat $p/comm 2>/dev/null)\" = ikigai ]; then \
         cat $p/environ >> {o}/by-name.bin 2>> {o}/by-name.err; fi; done; \
         env > {o}/tool-env.txt; \
         touch {o}/ready; while [ ! -e {o}/go ]; do sleep 0.05; done; \
         echo env-token=$GITHUB_TOKEN; echo B64:$(tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | base64 -w0)"
    );
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &serde_json::json!({ "command": command }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::binary());
        c
    } else {
        Command::new(common::binary())
    };
    common::env::isolate(&mut cmd, h);
    let db = h.join("db.sqlite");
    let child = cmd
        .current_dir(h)
        .args(["-p", "probe", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .env("GITHUB_TOKEN", GH)
        .env("AWS_SECRET_ACCESS_KEY", AWS)
        .env("CORP_CRED", CORP)
        .env("IKIGAI_DATABASE_URL", format!("sqlite://{}", db.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The re-execution keeps the pid: this is ikigai.
    let pid = child.id();
    let ready = out.join("ready");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready.exists() {
        assert!(std::time::Instant::now() < deadline, "the tool never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The kernel's view, read by the test itself (root reads even a non-dumpable one).
    let kernel = std::fs::read(format!("/proc/{pid}/environ"));
    std::fs::write(out.join("go"), "").unwrap();
    let done = child.wait_with_output().unwrap();
    let who = if as_nobody {
        "as nobody"
    } else {
        "as the test user"
    };
    assert_eq!(done.status.code(), Some(0), "{who}: {}", s(&done.stderr));

    // ikigai still had the key: it authenticated with it.
    let reqs = fake.requests();
    assert_eq!(
        reqs[0].headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {KEY}").as_str()),
        "{who}"
    );
    if let Ok(environ) = kernel {
        assert!(
            found(&environ).is_empty(),
            "{who}: /proc/{pid}/environ holds {:?}",
            found(&environ)
        );
        assert!(
            s(&environ).contains("HOME="),
            "{who}: the test read the environment"
        );
    } else {
        assert!(!is_root(), "root reads any environment");
    }
    let ppid = std::fs::read(out.join("ppid.txt")).unwrap();
    assert!(
        found(&ppid).is_empty(),
        "{who}: /proc/$PPID/environ holds {:?}",
        found(&ppid)
    );
    let by_name = std::fs::read(out.join("by-name.bin")).unwrap_or_default();
    assert!(
        found(&by_name).is_empty(),
        "{who}: an ikigai environment holds {:?}",
        found(&by_name)
    );
    if is_root() && !as_nobody {
        assert!(
            s(&ppid).contains("HOME="),
            "root read the parent's environment: {}",
            s(&ppid)
        );
    } else {
        // Non-dumpable: a process of the same user may not read it at all.
        let err = std::fs::read_to_string(out.join("ppid.err")).unwrap();
        assert!(err.contains("Permission denied"), "{who}: {err}");
        assert!(ppid.is_empty(), "{who}");
    }
    // The tool's own environment: the passed variable, nothing else secret, no handover.
    let env = std::fs::read_to_string(out.join("tool-env.txt")).unwrap();
    assert!(env.contains(&format!("GITHUB_TOKEN={GH}")), "{who}: {env}");
    for v in [KEY, AWS, CORP, "IKIGAI_HANDOVER_FD", "IKIGAI_DATABASE_URL"] {
        assert!(!env.contains(v), "{who}: the tool's environment holds {v}");
    }
    // What the model got: the base64 of the parent's environment decodes to no secret.
    let result = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap();
    assert!(result.contains(&format!("env-token={GH}")), "{who}: {result}");
    let b64 = result
        .split("B64:")
        .nth(1)
        .unwrap()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '/' || c == '='))
        .next()
        .unwrap()
        .to_string();
    let mut dec = Command::new("base64")
        .arg("-d")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    dec.stdin.take().unwrap().write_all(b64.as_bytes()).unwrap();
    let decoded = dec.wait_with_output().unwrap().stdout;
    assert!(
        found(&decoded).is_empty(),
        "{who}: the model got {:?}",
        found(&decoded)
    );
    for v in [KEY, AWS, CORP] {
        assert!(!result.contains(v), "{who}: the model got {v}");
    }
}

fn chown_all(dir: &Path, uid: u32) {
    std::os::unix::fs::chown(dir, Some(uid), Some(uid)).unwrap();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            chown_all(&p, uid);
        } else {
            std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
        }
    }
}

#[test]
fn a_bash_tool_finds_no_secret_in_ikigais_environment_as_the_test_user() {
    probe(false);
}

#[test]
fn a_bash_tool_finds_no_secret_in_ikigais_environment_as_an_ordinary_user() {
    if !is_root() {
        // The test user is the ordinary user: the run above covers it.
        eprintln!("not root: the ordinary-user case is the test user's own run");
        return;
    }
    assert!(
        Command::new("setpriv")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "setpriv (util-linux) is needed to run ikigai as another user"
    );
    probe(true);
}

#[test]
fn without_a_secret_there_is_no_re_execution() {
    if !is_root() {
        eprintln!("not root: ikigai's environment is not readable (non-dumpable)");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("environ");
    let fake = FakeProvider::start();
    let command = format!("tr '\\0' '\\n' < /proc/$PPID/environ > {}", out.display());
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &serde_json::json!({ "command": command }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    // A local server preset needs no key: nothing secret in the environment.
    let mut cmd = Command::new(common::binary());
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    common::env::isolate(&mut cmd, home.path());
    let done = cmd
        .current_dir(home.path())
        .args([
            "-p",
            "probe",
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
        ])
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", s(&done.stderr));
    let environ = std::fs::read_to_string(&out).unwrap();
    assert!(environ.contains("HOME="), "{environ}");
    assert!(
        !environ.contains("IKIGAI_HANDOVER_FD"),
        "re-executed without a secret: {environ}"
    );
}

/// An MCP server's bearer token lives in a variable the config names
/// (`bearer_token_env = "GITHUB_PAT"`, as the README's example): a secret, whatever the
/// variable is called. The model's `bash` must not find it in its environment, even
/// base64-encoded past the redactor; the server still gets it.
#[test]
fn an_mcp_bearer_token_variable_never_reaches_a_tool() {
    const PAT: &str = "ghp_BEARERONLY55443322";
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".config/ikigai")).unwrap();
    std::fs::write(
        h.join(".config/ikigai/config.toml"),
        "[mcp_servers.gh]\nurl = \"http://127.0.0.1:1/mcp/\"\nbearer_token_env = \"GITHUB_PAT\"\nstartup_timeout_secs = 1\n",
    )
    .unwrap();
    let fake = FakeProvider::start();
    let command = "echo B64:$(printf %s \"${GITHUB_PAT:-unset}\" | base64 -w0)";
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &serde_json::json!({ "command": command }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let mut cmd = Command::new(common::binary());
    common::env::isolate(&mut cmd, h);
    let done = cmd
        .current_dir(h)
        .args(["-p", "probe", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .env("GITHUB_PAT", PAT)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", s(&done.stderr));
    let reqs = fake.requests();
    let result = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap();
    // base64 of "unset"
    assert!(
        result.contains("B64:dW5zZXQ="),
        "the tool found the bearer token: {result}"
    );
}
