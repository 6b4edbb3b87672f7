//! The `web_fetch` tool through the agent loop: the real binary in scripted mode, the fake
//! vendor asking for the calls, and a small HTTP server on 127.0.0.1 of the test's own
//! that records every request it gets. An HTML page as Markdown, a redirect on the same
//! host followed, redirects to another host (`localhost`, another port) not followed and
//! never sent, a huge page capped and read on with `next_offset`, text and JSON as they
//! are, a 404, an image refused, a server that never answers, a refused connection,
//! `file://` refused, a redirect loop, a body past 10 MiB, a binary body without a type; `ask` mode refusing unattended (and an allow rule over the URL);
//! `sandbox_network = false` denying with nothing sent; no key in any request, and the
//! key scrubbed from what the model gets back; in the TUI, the approval question and the
//! question to run a fetch the sandbox stopped outside it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::site::{Answer, Site, answer, redirect};

const KEY: &str = "sk-webfetch-secret-key-1234";

fn config(home: &Path, text: &str) {
    let dir = home.join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn fetch(id: &str, url: &str) -> (String, String, String) {
    (
        id.to_string(),
        "web_fetch".to_string(),
        json!({ "url": url }).to_string(),
    )
}

/// Runs one scripted turn in which the model makes `calls` then answers "done"; the tool
/// results the model got, in order.
fn turn(
    home: &Path,
    fake: &FakeProvider,
    calls: &[(String, String, String)],
    args: &[&str],
) -> (Output, Vec<Value>) {
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    fake.push(Reply::tool_calls(&refs));
    fake.push(Reply::text("done"));
    let out = common::ikigai(home)
        .args(["-p", "fetch", "--base-url", &fake.base_url])
        .args(args)
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let reqs = fake.requests();
    let last = reqs.last().expect("a request");
    let results = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    (out, results)
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const PAGE: &str = "<!doctype html><html><head><title>Docs</title>\
    <style>body { color: red }</style><script>var tracking = 1;</script></head>\
    <body><h1>Hello web</h1><p>Some <b>bold</b> text and a <a href=\"/other\">link</a>.</p>\
    <ul><li>first</li><li>second</li></ul><p>The key is sk-webfetch-secret-key-1234.</p>\
    </body></html>";

fn huge() -> String {
    let mut html = String::from("<html><body>");
    for i in 1..=3000 {
        html.push_str(&format!("<p>Paragraph {i} of the huge page.</p>"));
    }
    html.push_str("</body></html>");
    html
}

#[test]
fn pages_text_redirects_and_failures_through_the_agent_loop() {
    let other = Site::start(|_| Some(answer("200 OK", "text/html", "<p>other port</p>")));
    let other_url = other.url("/page.html");
    let site = Site::start(move |path| {
        Some(match path {
            "/page.html" => answer("200 OK", "text/html; charset=utf-8", PAGE),
            "/moved" => redirect("/page.html"),
            "/loop" => redirect("/loop"),
            "/to-other-port" => redirect(&other_url),
            "/huge.html" => answer("200 OK", "text/html", huge()),
            "/notes.txt" => answer("200 OK", "text/plain", "line one\n<b>not html</b>\n"),
            "/data.json" => answer("200 OK", "application/json", r#"{"name":"ikigai","n":[1,2]}"#),
            "/missing" => answer("404 Not Found", "text/html", "<h1>No such page</h1>"),
            "/logo.png" => answer("200 OK", "image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
            "/hang" => return None,
            "/endless.txt" => answer("200 OK", "text/plain", "0123456789abcdef\n".repeat(11 << 16)),
            "/blob" => Answer {
                status: "200 OK",
                headers: Vec::new(),
                body: b"\x7fELF\x02\x01\x01\0\0\0\0".to_vec(),
                promised: 0,
            },
            _ => answer("404 Not Found", "text/plain", "?"),
        })
    });
    let localhost = format!("http://localhost:{}/page.html", site.port);
    let site_port = site.port;
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let h = tempfile::tempdir().unwrap();
    config(h.path(), "max_output_size = 20000\ntool_timeout_secs = 3\n");
    let fake = FakeProvider::start();
    let calls = vec![
        fetch("c1", &site.url("/page.html")),
        fetch("c2", &site.url("/moved")),
        fetch("c3", &site.url("/to-other-port")),
        fetch("c4", &site.url("/huge.html")),
        fetch("c5", &site.url("/notes.txt")),
        fetch("c6", &site.url("/data.json")),
        fetch("c7", &site.url("/missing")),
        fetch("c8", &site.url("/logo.png")),
        fetch("c9", &site.url("/hang")),
        fetch("c10", &format!("http://127.0.0.1:{refused}/")),
        fetch("c11", "file:///etc/passwd"),
        fetch("c12", &site.url("/loop")),
        fetch("c13", &site.url("/endless.txt")),
        fetch("c14", &site.url("/blob")),
    ];
    let (out, r) = turn(h.path(), &fake, &calls, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(r.len(), calls.len(), "{r:?}");
    let ok = |i: usize| {
        assert_eq!(r[i]["tool_success"], true, "{}", r[i]);
        r[i]["result"].clone()
    };

    // An HTML page, as Markdown, without its script and style; the key scrubbed.
    let page = ok(0);
    let md = page["output"].as_str().unwrap();
    assert!(md.contains("# Hello web"), "{md}");
    assert!(md.contains("**bold**") && md.contains("[link](/other)"), "{md}");
    assert!(md.contains("first") && md.contains("second"), "{md}");
    assert!(!md.contains("tracking") && !md.contains("color: red"), "{md}");
    assert!(!md.contains(KEY) && md.contains("[redacted]"), "{md}");
    assert_eq!(page["status"], 200);
    assert_eq!(page["url"], site.url("/page.html"));

    // A redirect on the same host is followed; the result names where it ended.
    let moved = ok(1);
    assert!(moved["output"].as_str().unwrap().contains("# Hello web"));
    assert_eq!(moved["url"], site.url("/page.html"));

    // A redirect to another port is another host: not followed, and never sent.
    let away = ok(2);
    let e = away["error"].as_str().unwrap();
    assert!(
        e.contains("another host") && e.contains(&other.url("/page.html")),
        "{e}"
    );
    assert_eq!(away["redirect"], other.url("/page.html"));
    assert!(other.seen().is_empty(), "{:?}", other.seen());

    // A huge page: capped with the usual notice, and `next_offset` to read on.
    let big = ok(3);
    let text = big["output"].as_str().unwrap();
    assert!(text.len() <= 20000, "{}", text.len());
    assert!(
        text.contains("Paragraph 1 of") && text.contains("[output truncated:"),
        "{text}"
    );
    assert_eq!(big["truncated"], true);
    let next = big["next_offset"].as_u64().unwrap();
    assert!(
        big["note"].as_str().unwrap().contains(&format!("offset {next}")),
        "{big}"
    );
    assert!(!text.contains("Paragraph 3000 of"));

    // Text and JSON come as they are.
    assert_eq!(ok(4)["output"], "line one\n<b>not html</b>\n");
    assert_eq!(ok(4)["content_type"], "text/plain");
    assert_eq!(ok(5)["output"], r#"{"name":"ikigai","n":[1,2]}"#);

    // A 404 is an error that says so, with the page's text.
    let missing = ok(6);
    assert!(
        missing["error"].as_str().unwrap().contains("HTTP 404 Not Found"),
        "{missing}"
    );
    assert_eq!(missing["status"], 404);
    assert!(
        missing["body"].as_str().unwrap().contains("No such page"),
        "{missing}"
    );

    // An image is refused without being shown.
    let png = ok(7);
    let e = png["error"].as_str().unwrap();
    assert!(e.contains("text only") && e.contains("image/png"), "{e}");

    // A server that never answers: a timeout that says so.
    assert_eq!(r[8]["tool_success"], false);
    assert_eq!(r[8]["error_code"], "TOOL_TIMEOUT", "{}", r[8]);
    assert!(
        r[8]["error"]
            .as_str()
            .unwrap()
            .contains("did not answer within 3 s"),
        "{}",
        r[8]
    );

    // Nothing listens: said at once.
    let e = ok(9)["error"].as_str().unwrap().to_string();
    assert!(
        e.contains("connection refused") && e.contains(&format!("127.0.0.1:{refused}")),
        "{e}"
    );

    // Other schemes are refused before anything is opened.
    assert_eq!(r[10]["error_code"], "INVALID_PARAMS", "{}", r[10]);
    assert!(
        r[10]["error"]
            .as_str()
            .unwrap()
            .contains("http and https URLs only")
    );

    // A redirect loop ends after five.
    let e = ok(11)["error"].as_str().unwrap().to_string();
    assert!(e.contains("more than 5 times"), "{e}");

    // A body past 10 MiB is not read further; one without a type is refused when binary.
    let endless = ok(12);
    assert_eq!(endless["truncated"], true);
    assert!(
        endless["note"]
            .as_str()
            .unwrap()
            .contains("Only the first 10 MiB"),
        "{endless}"
    );
    let e = ok(13)["error"].as_str().unwrap().to_string();
    assert!(
        e.contains("text only") && e.contains("binary content without a content type"),
        "{e}"
    );

    // Every request: a GET with ikigai's user agent, and never a key.
    let seen = site.seen();
    assert!(!seen.is_empty());
    for head in &seen {
        assert!(head.starts_with("GET "), "{head}");
        assert!(head.to_lowercase().contains("user-agent: ikigai/"), "{head}");
        assert!(!head.contains(KEY) && !head.contains("webfetch-secret"), "{head}");
        assert!(!head.to_lowercase().contains("authorization"), "{head}");
        assert!(!head.to_lowercase().contains("cookie"), "{head}");
    }
    assert_eq!(
        seen.iter().filter(|h| h.starts_with("GET /loop ")).count(),
        6,
        "the first request and five redirects"
    );

    // Reading on from next_offset gives the lines after the first call's.
    let (_, r) = turn(
        h.path(),
        &fake,
        &[(
            "d1".into(),
            "web_fetch".into(),
            json!({"url": site.url("/huge.html"), "offset": next}).to_string(),
        )],
        &[],
    );
    let more = r[0]["result"]["output"].as_str().unwrap();
    let first = more.lines().next().unwrap();
    assert!(
        first.starts_with("Paragraph ") && !text.contains(&format!("{first}\n")),
        "{first}"
    );

    // 127.0.0.1 and localhost are different hosts, even on the same port.
    let to_local = Site::start(move |_| Some(redirect(&localhost)));
    let (_, r) = turn(h.path(), &fake, &[fetch("e1", &to_local.url("/x"))], &[]);
    let e = r[0]["result"]["error"].as_str().unwrap();
    assert!(
        e.contains("another host") && e.contains(&format!("localhost:{site_port}")),
        "{e}"
    );
    assert!(
        !site
            .seen()
            .iter()
            .any(|h| h.to_lowercase().contains("host: localhost")),
        "the redirect to localhost was followed"
    );
}

#[test]
fn ask_mode_refuses_unattended_unless_a_rule_allows_the_url() {
    let site = Site::start(|_| Some(answer("200 OK", "text/plain", "hello")));
    let h = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let (out, r) = turn(
        h.path(),
        &fake,
        &[fetch("c1", &site.url("/a"))],
        &["--approval", "ask"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(r[0]["error_code"], "NOT_APPROVED", "{}", r[0]);
    assert!(site.seen().is_empty(), "{:?}", site.seen());

    // In read-only mode too: it reaches the network.
    let (_, r) = turn(
        h.path(),
        &fake,
        &[fetch("c1", &site.url("/a"))],
        &["--approval", "read-only"],
    );
    assert_eq!(r[0]["error_code"], "NOT_APPROVED", "{}", r[0]);
    assert!(site.seen().is_empty());

    // A rule over the URL allows that site, and no other.
    config(
        h.path(),
        &format!(
            "[permissions]\nallow = [\"web_fetch(http://127.0.0.1:{}/*)\"]\n",
            site.port
        ),
    );
    let (_, r) = turn(
        h.path(),
        &fake,
        &[
            fetch("c1", &site.url("/a")),
            fetch("c2", &format!("http://localhost:{}/a", site.port)),
        ],
        &["--approval", "ask"],
    );
    assert_eq!(r[0]["result"]["output"], "hello", "{}", r[0]);
    assert_eq!(r[1]["error_code"], "NOT_APPROVED", "{}", r[1]);
    assert_eq!(site.seen().len(), 1, "{:?}", site.seen());
}

#[test]
fn sandbox_network_false_denies_the_fetch_before_anything_is_sent() {
    let site = Site::start(|_| Some(answer("200 OK", "text/plain", "hello")));
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = root.path().canonicalize().unwrap();
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    config(&home, "sandbox = \"workspace-write\"\nsandbox_network = false\n");
    let fake = FakeProvider::start();
    let calls = [fetch("c1", &site.url("/a"))];
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    fake.push(Reply::tool_calls(&refs));
    fake.push(Reply::text("done"));
    let out = common::ikigai(&home)
        .args(["-p", "fetch", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    let tool = reqs.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    let r: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        r["error_code"], "NOT_APPROVED",
        "nobody approved running it outside: {r}"
    );
    let e = r["error"].as_str().unwrap();
    assert!(
        e.contains("sandbox: network access denied") && e.contains("sandbox_network = false"),
        "{e}"
    );
    assert!(
        r["result"]["error"].as_str().unwrap().contains("was not fetched"),
        "{r}"
    );
    assert!(
        site.seen().is_empty(),
        "a request reached the server: {:?}",
        site.seen()
    );

    // With the network allowed in the sandbox, the same call fetches.
    config(&home, "sandbox = \"workspace-write\"\nsandbox_network = true\n");
    fake.push(Reply::tool_calls(&refs));
    fake.push(Reply::text("done"));
    let out = common::ikigai(&home)
        .args(["-p", "fetch", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(site.seen().len(), 1);
}

#[test]
fn permissions_check_takes_a_url() {
    let h = tempfile::tempdir().unwrap();
    config(
        h.path(),
        "[permissions]\nallow = [\"web_fetch(https://docs.rs/*)\"]\n",
    );
    let check = |call: &str| {
        let out = common::ikigai(h.path())
            .args(["permissions", "check", call])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        s(&out.stdout)
    };
    let out = check("web_fetch(https://Docs.rs/htmd)");
    assert!(
        out.starts_with("allow\n") && out.contains("rule allow web_fetch(https://docs.rs/*)"),
        "{out}"
    );
    let out = check("web_fetch(https://docs.rs.evil.example/)");
    assert!(
        out.starts_with("ask\n") && out.contains("reaches the network"),
        "{out}"
    );
}

#[test]
fn the_tui_asks_before_fetching_and_yes_fetches() {
    use crate::common::tmux::Tmux;
    let site = Site::start(|_| Some(answer("200 OK", "text/html", "<h1>Fetched title</h1>")));
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let url = site.url("/doc");
    fake.push(Reply::tool_calls(&[(
        "c1",
        "web_fetch",
        &json!({ "url": url }).to_string(),
    )]));
    fake.push(Reply::text("Turn over."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("ask mode");
    t.wait_text("Ask anything");
    t.type_text("read the doc");
    t.keys(&["Enter"]);
    let pane = t.wait_text("y yes · n no");
    let joined: String = pane.lines().map(str::trim).collect::<Vec<_>>().join("");
    assert!(
        joined.contains("Allow web_fetch?") && joined.contains("reaches the network"),
        "{pane}"
    );
    assert!(joined.contains(&url), "{pane}");
    assert!(
        joined.contains(&format!(
            "a always in this project: web_fetch(http://127.0.0.1:{}/*)",
            site.port
        )),
        "{pane}"
    );
    assert!(site.seen().is_empty(), "fetched before the answer");
    t.keys(&["y"]);
    t.wait_text("Turn over.");
    assert_eq!(site.seen().len(), 1);
    let reqs = fake.requests();
    let tool = reqs.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    let r: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(r["result"]["output"], "# Fetched title", "{r}");
}

#[test]
fn in_the_tui_a_fetch_the_sandbox_stopped_runs_outside_it_only_when_the_user_says_yes() {
    use crate::common::tmux::Tmux;
    let site = Site::start(|_| Some(answer("200 OK", "text/plain", "from the network")));
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let call = json!({ "url": site.url("/a") }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "web_fetch", &call)]));
    fake.push(Reply::text("Done one."));
    // Auto mode: the only question is the sandbox's (sandbox_network defaults to false).
    let t = Tmux::start(
        home.path(),
        &fake.base_url,
        "--approval auto --sandbox workspace-write",
    );
    t.wait_text("Ask anything");
    t.type_text("fetch it");
    t.keys(&["Enter"]);
    let pane = t.wait_text("OUTSIDE the sandbox");
    let joined: String = pane.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    assert!(joined.contains("sandbox: network access denied"), "{pane}");
    assert!(site.seen().is_empty(), "sent before the answer");
    t.keys(&["Escape"]);
    t.wait_text("Done one.");
    assert!(site.seen().is_empty(), "Esc is no: {:?}", site.seen());

    fake.push(Reply::tool_calls(&[("c2", "web_fetch", &call)]));
    fake.push(Reply::text("Done two."));
    t.wait_text("Ask anything");
    t.type_text("again");
    t.keys(&["Enter"]);
    t.wait_text("OUTSIDE the sandbox");
    t.keys(&["y"]);
    t.wait_text("Done two.");
    assert_eq!(site.seen().len(), 1);
    let reqs = fake.requests();
    let last = reqs.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    let r: Value = serde_json::from_str(last["content"].as_str().unwrap()).unwrap();
    assert_eq!(r["result"]["output"], "from the network", "{r}");
}
