//! Nothing ikigai prints can take over the terminal: a session whose first message, model
//! text and tool output hold a title change (`ESC ]0;…BEL`), a clipboard write
//! (`ESC ]52;c;…BEL`), a screen clear (`ESC [2J`) and bidirectional controls is stored as
//! sent, and comes out of `export` (md), `sessions`, the chat, `tool --list`/`--schema`
//! and error messages with every control character shown visibly; `--json` and
//! `export --format jsonl` stay exact.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

const HOSTILE: &str =
    "\u{1b}]0;TITLE\u{7} \u{1b}]52;c;Y2xpcA==\u{7} \u{1b}[2J \u{202E}evil\u{2066}x\u{2069}\u{9b}";

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Fails when `bytes` hold a byte or character a terminal would act on.
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = s(bytes);
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(bad.is_empty(), "{what} holds raw controls {bad:?}:\n{text}");
}

fn run(home: &Path, args: &[&str]) -> Output {
    common::ikigai(home)
        .args(args)
        .env("OPENAI_API_KEY", "k")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn stored_control_sequences_come_out_visible_and_json_stays_exact() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    let command = format!("printf '%s\\n' '{HOSTILE}'");
    fake.push(Reply::tool_calls_after(
        &format!("Looking {HOSTILE}"),
        &[(
            "c1",
            "bash",
            &serde_json::json!({ "command": command }).to_string(),
        )],
    ));
    fake.push(Reply::text(&format!("Done {HOSTILE}")));
    let prompt = format!("hello {HOSTILE}");
    let out = run(h, &["-p", &prompt, "--base-url", &fake.base_url]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_inert("the chat's stdout", &out.stdout);
    assert_inert("the chat's stderr", &out.stderr);
    assert!(
        s(&out.stdout).contains("Done ␛]0;TITLE␇ ␛]52;c;Y2xpcA==␇ ␛[2J <U+202E>evil"),
        "{}",
        s(&out.stdout)
    );

    let list = run(h, &["sessions", "--json"]);
    let sessions: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        sessions[0]["title"].as_str().map(|t| t.contains(HOSTILE)),
        Some(true),
        "--json is exact"
    );

    let table = run(h, &["sessions"]);
    assert_eq!(table.status.code(), Some(0));
    assert_inert("`ikigai sessions`", &table.stdout);
    assert!(
        s(&table.stdout).contains("hello ␛]0;TITLE␇"),
        "{}",
        s(&table.stdout)
    );

    let md = run(h, &["export", &id]);
    assert_eq!(md.status.code(), Some(0), "{}", s(&md.stderr));
    assert_inert("`ikigai export`", &md.stdout);
    let text = s(&md.stdout);
    for want in [
        "hello ␛]0;TITLE␇ ␛]52;c;Y2xpcA==␇ ␛[2J <U+202E>evil<U+2066>x<U+2069><U+009B>",
        "Looking ␛]0;TITLE␇",
        "Done ␛]0;TITLE␇",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    assert!(
        text.matches("␛]52;c;").count() >= 4,
        "prompt, text, tool output, answer:\n{text}"
    );

    // The raw events keep every byte.
    let jsonl = run(h, &["export", &id, "--format", "jsonl"]);
    let events: Vec<serde_json::Value> = s(&jsonl.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let user = events.iter().find(|e| e["kind"] == "user").unwrap();
    assert_eq!(user["content"], prompt);
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "assistant" && e["content"] == format!("Done {HOSTILE}")),
        "{events:?}"
    );

    // --json prints the events exactly.
    fake.push(Reply::text(&format!("Again {HOSTILE}")));
    let json = run(h, &["--json", "-c", "-p", "again", "--base-url", &fake.base_url]);
    let text: String = s(&json.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, format!("Again {HOSTILE}"));

    // An error naming what the user typed.
    let bad = run(h, &["export", &format!("x{HOSTILE}")]);
    assert_ne!(bad.status.code(), Some(0));
    assert_inert("an error", &bad.stderr);
    assert!(s(&bad.stderr).contains("x␛]0;TITLE␇"), "{}", s(&bad.stderr));
}

#[test]
fn tool_listings_and_schemas_show_controls_visibly() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let tools = h.join(".ikigai/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let schema = serde_json::json!({
        "name": "evil",
        "description": format!("Looks fine {HOSTILE}"),
        "parameters": {"q": {"type": "string", "description": HOSTILE, "required": true}},
    });
    let tool = tools.join("evil");
    std::fs::write(&tool, format!("#!/bin/sh\ncat <<'EOF'\n{schema}\nEOF\n")).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A broken tool whose file name itself holds escape sequences.
    let broken = tools.join("bad\u{1b}]0;T\u{7}name");
    std::fs::write(&broken, "#!/bin/sh\nexit 3\n").unwrap();
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();

    let list = run(h, &["tool", "--list"]);
    assert_eq!(list.status.code(), Some(0), "{}", s(&list.stderr));
    assert_inert("`tool --list` stdout", &list.stdout);
    assert_inert("`tool --list` stderr", &list.stderr);
    assert!(
        s(&list.stdout).contains("Looks fine ␛]0;TITLE␇"),
        "{}",
        s(&list.stdout)
    );
    assert!(
        s(&list.stderr).contains("tool 'bad␛]0;T␇name' skipped"),
        "{}",
        s(&list.stderr)
    );

    let out = run(h, &["tool", "evil", "--schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_inert("`tool evil --schema`", &out.stdout);
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, schema, "the same JSON value");
}
