//! The example tools in examples/tools/ work through the real binary: the shell tool, the
//! Python tool with a full JSON Schema, and the credential tool, which answers
//! MISSING_CREDENTIALS until `tool_env_pass` lets GITHUB_TOKEN through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{Value, json};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tools")
}

/// `ikigai tool ARGS` in `home` with the examples as the system folder.
fn ikigai_tool(home: &Path, args: &[&str], stdin: &str, extra_config: &str, envs: &[(&str, &str)]) -> Output {
    let config = home.join("config.toml");
    std::fs::write(
        &config,
        format!(
            // A loaded machine may start Python slowly; the 1 s default is not under test here.
            "{extra_config}\ntool_schema_timeout_ms = 30000\n[tool_dirs]\nsystem = \"{}\"\nuser = \"{}\"\n",
            examples().display(),
            home.join("no-user-tools").display()
        ),
    )
    .unwrap();
    let mut cmd = common::ikigai(home);
    cmd.arg("tool")
        .args(args)
        .env("IKIGAI_CONFIG", &config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn json_out(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn every_example_is_discovered_and_the_shell_and_python_tools_run() {
    let home = tempfile::tempdir().unwrap();
    let out = ikigai_tool(home.path(), &["--list"], "", "", &[]);
    let list = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.stderr.is_empty(),
        "nothing skipped: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["now", "word_stats", "github_user"] {
        assert!(
            list.lines().any(|l| l.starts_with(name)),
            "{name} missing: {list}"
        );
    }
    let r = json_out(&ikigai_tool(home.path(), &["now"], r#"{"tz":"UTC"}"#, "", &[]));
    assert_eq!(r["tz"], "UTC");
    assert!(r["output"].as_str().unwrap().ends_with("+0000"), "{r}");

    std::fs::write(home.path().join("text.txt"), "the cat and the dog and THE bird\n").unwrap();
    let r = json_out(&ikigai_tool(
        home.path(),
        &["word_stats"],
        r#"{"path":"text.txt","top":2,"options":{"min_length":3}}"#,
        "",
        &[],
    ));
    assert_eq!(
        r,
        json!({"words": 8, "top": [{"word": "the", "count": 3}, {"word": "and", "count": 2}]})
    );
    let schema = json_out(&ikigai_tool(
        home.path(),
        &["word_stats", "--schema"],
        "",
        "",
        &[],
    ));
    assert_eq!(
        schema["parameters"]["properties"]["options"]["properties"]["min_length"]["minimum"],
        1
    );
}

/// A one-shot HTTP server answering `/user`; returns its URL and the request it saw.
fn github_stub() -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).unwrap();
        let body = r#"{"login":"octo-test","id":1}"#;
        write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    });
    (url, handle)
}

#[test]
fn the_credential_tool_asks_for_setup_until_its_token_is_passed() {
    let home = tempfile::tempdir().unwrap();
    let token = ("GITHUB_TOKEN", "ghp_exampleTOKEN123");
    let r = json_out(&ikigai_tool(home.path(), &["github_user"], "{}", "", &[token]));
    assert_eq!(r["error"]["code"], "MISSING_CREDENTIALS", "{r}");
    assert!(r["error"]["setup"].to_string().contains("tool_env_pass"), "{r}");

    let (url, seen) = github_stub();
    let r = json_out(&ikigai_tool(
        home.path(),
        &["github_user"],
        "{}",
        "tool_env_pass = [\"GITHUB_TOKEN\", \"GITHUB_API_URL\"]",
        &[token, ("GITHUB_API_URL", &url)],
    ));
    assert_eq!(r, json!({"output": "octo-test"}));
    let request = seen.join().unwrap();
    assert!(request.contains("Bearer ghp_exampleTOKEN123"), "{request}");
}
