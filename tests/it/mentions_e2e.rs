//! `@file` mentions with the real binary and the fake vendor: in `-p`, piped lines and
//! the TUI (tmux) the mentioned file's content, a line range and a directory listing reach
//! the model after the typed text, shown as one `📎` line each and stored with the
//! message (a resumed session sends them again); a missing file, a symlink leading out of
//! the project and `/proc` are errors before anything is sent; `user@example.com` is text;
//! a configured key inside an attached file is scrubbed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

const KEY: &str = "sk-mention-KEY-0123456789";

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `~/proj` with `test_calc.py`, `notes.txt` (10 lines), `src/` and a symlink out to
/// `~/secret.txt`.
fn project() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::write(
        proj.join("test_calc.py"),
        "def test_add():\n    assert add(2, 2) == 4\n",
    )
    .unwrap();
    let notes: String = (1..=10).map(|i| format!("note {i}\n")).collect();
    std::fs::write(proj.join("notes.txt"), notes).unwrap();
    std::fs::write(proj.join("src/calc.py"), "def add(a, b): return a + b\n").unwrap();
    std::fs::write(proj.join("src/util.py"), "").unwrap();
    std::fs::write(home.path().join("secret.txt"), "TOP-SECRET-42\n").unwrap();
    std::os::unix::fs::symlink(home.path().join("secret.txt"), proj.join("link.txt")).unwrap();
    (home, proj)
}

fn run(home: &Path, cwd: &Path, fake: &FakeProvider, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = common::ikigai(home)
        .current_dir(cwd)
        .args(args)
        .args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// The user messages of request `i`, as sent.
fn user_texts(fake: &FakeProvider, i: usize) -> Vec<String> {
    fake.requests()[i]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_prompt_carries_the_mentioned_file_a_range_and_a_directory() {
    let (home, proj) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::text("Looked."));
    let prompt = "look at @test_calc.py, lines @notes.txt:3-5 and @src/ (mail me: user@example.com)";
    let out = run(home.path(), &proj, &fake, &["-p", prompt], "");
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(s(&out.stdout).trim(), "Looked.");
    let sent = &user_texts(&fake, 0)[0];
    assert!(sent.starts_with(prompt), "the typed text comes first: {sent}");
    assert!(
        sent.contains("<file path=\"test_calc.py\">\ndef test_add():\n    assert add(2, 2) == 4\n</file>"),
        "{sent}"
    );
    assert!(
        sent.contains("<file path=\"notes.txt\" lines=\"3-5\">\nnote 3\nnote 4\nnote 5\n</file>"),
        "{sent}"
    );
    assert!(!sent.contains("note 6") && !sent.contains("note 2\n"), "{sent}");
    assert!(
        sent.contains("<directory path=\"src/\">") && sent.contains("calc.py") && sent.contains("util.py"),
        "{sent}"
    );
    for line in [
        "📎 test_calc.py, 2 lines",
        "📎 notes.txt:3-5, 3 lines",
        "📎 src/, 2 entries",
    ] {
        assert!(err.contains(line), "{line}: {err}");
    }
    assert!(!err.contains("example.com"), "an email is text: {err}");

    // Stored with the message: a resumed session sends the content again.
    fake.push(Reply::text("Again."));
    let out = run(home.path(), &proj, &fake, &["--continue", "-p", "and now?"], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let users = user_texts(&fake, 1);
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[0].contains("assert add(2, 2) == 4"), "{users:?}");
    assert_eq!(users[1], "and now?");

    // Piped stdin is data: an `@word` in it is no mention.
    fake.push(Reply::text("Piped."));
    let out = run(
        home.path(),
        &proj,
        &fake,
        &["-p", "explain @src/calc.py"],
        "@pytest.fixture\ndef f(): pass\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let sent = &user_texts(&fake, 2)[0];
    assert!(
        sent.starts_with("explain @src/calc.py\n\n<stdin>\n@pytest.fixture")
            && sent.contains("def add(a, b)"),
        "{sent}"
    );

    // --json: the user_message event names the attachments.
    fake.push(Reply::text("Json."));
    let out = run(home.path(), &proj, &fake, &["--json", "-p", "@notes.txt:1"], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let user: serde_json::Value = s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "user_message")
        .unwrap();
    assert_eq!(
        user,
        serde_json::json!({"type": "user_message", "text": "@notes.txt:1", "attachments": ["notes.txt:1, 1 line"]})
    );
}

#[test]
fn a_missing_file_a_link_out_of_the_project_and_proc_are_refused_before_sending() {
    let (home, proj) = project();
    let fake = FakeProvider::start();
    let cases = [
        ("look at @gone.py", "@gone.py: no such file or directory"),
        (
            "read @link.txt",
            "@link.txt: it leads outside the working directory",
        ),
        ("read @/proc/self/environ", "@/proc/self/environ: /proc/"),
        ("see @notes.txt:40-50", "offset 40 is past the end"),
    ];
    for (prompt, why) in cases {
        let out = run(home.path(), &proj, &fake, &["-p", prompt], "");
        let err = s(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{prompt}: {err}");
        assert!(
            err.contains(why) && err.contains("nothing was sent"),
            "{prompt}: {err}"
        );
        assert!(!err.contains("TOP-SECRET"), "{err}");
    }
    assert!(fake.requests().is_empty(), "nothing reached the vendor");

    // The configured key in an attached file is scrubbed like everything ikigai sends.
    std::fs::write(proj.join("deploy.sh"), format!("export OPENAI_API_KEY={KEY}\n")).unwrap();
    fake.push(Reply::text("Scrubbed."));
    let out = run(home.path(), &proj, &fake, &["-p", "check @deploy.sh"], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let sent = &user_texts(&fake, 0)[0];
    assert!(
        sent.contains("export OPENAI_API_KEY=[redacted]") && !sent.contains(KEY),
        "{sent}"
    );

    // Piped lines: the bad one stops the run before it is sent, as a failed turn does.
    fake.push(Reply::text("First."));
    let out = run(
        home.path(),
        &proj,
        &fake,
        &[],
        "what is in @src/calc.py?\nand @gone.rs?\nnever sent\n",
    );
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("📎 src/calc.py, 1 line"), "{err}");
    assert!(err.contains("@gone.rs: no such file"), "{err}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "only the first line was sent");
    assert!(user_texts(&fake, 1)[0].contains("def add(a, b)"));
}

#[test]
fn the_tui_attaches_a_mention_and_refuses_a_missing_one() {
    let (home, proj) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::text("It tests add."));
    let t = Tmux::start_in(home.path(), &proj, &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("look at @gone.py");
    t.keys(&["Enter"]);
    t.wait_text("@gone.py: no such file or directory");
    assert!(fake.requests().is_empty(), "nothing was sent");
    t.type_text("look at @tcalc");
    t.keys(&["Tab"]);
    t.wait_text("look at @test_calc.py");
    t.keys(&["Enter"]);
    let pane = t.wait_text("It tests add.");
    let lines: Vec<&str> = pane.lines().map(str::trim).collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("› look at @test_calc.py"))
        .unwrap();
    assert_eq!(
        lines[at + 1],
        "📎 test_calc.py, 2 lines",
        "the attachment line sits right under its message: {pane}"
    );
    let sent = &user_texts(&fake, 0)[0];
    assert!(
        sent.starts_with("look at @test_calc.py") && sent.contains("assert add(2, 2) == 4"),
        "{sent}"
    );
}
