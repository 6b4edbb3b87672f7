//! The real binary's TUI in tmux against the loopback fake vendor: a streamed answer and a
//! tool call, Ctrl+C on a slow stream, input history, `/sessions`, `/resume <Tab>` and a
//! resumed session across runs, signals (exit 128+n, the running tool killed), a long
//! paste folded and sent whole, a streamed answer that looks as it does resumed whole, the
//! terminal restored at exit, and (reported, not asserted) CPU use while idle. Resizes are
//! in `tui_resize_e2e`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::common::fake_provider::{End, FakeProvider, Reply};
use crate::common::tmux::{DEADLINE, Tmux, cpu_ticks, gone, restored, wait_exit, wait_pid};

#[test]
fn streams_an_answer_with_a_tool_call_and_restores_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Let me check.",
        &[("call_1", "bash", r#"{"command":"echo hi-from-the-tool"}"#)],
    ));
    fake.push(Reply::text(
        "The tool printed **hi**.\n\n```rust\nfn main() {}\n```\n\nDone now.",
    ));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("please run echo");
    t.keys(&["Enter"]);
    let pane = t.wait_text("Done now.");
    assert!(
        pane.contains("before ikigai"),
        "the shell's output stays above:\n{pane}"
    );
    assert!(pane.contains("› please run echo"), "{pane}");
    assert!(pane.contains("Let me check."), "{pane}");
    assert!(
        pane.contains("● bash(command=\"echo hi-from-the-tool\")"),
        "{pane}"
    );
    assert!(
        pane.contains("    hi-from-the-tool"),
        "the tool's output is shown:\n{pane}"
    );
    assert!(
        pane.contains("The tool printed hi."),
        "markdown is rendered:\n{pane}"
    );
    assert!(pane.contains("fn main() {}"), "{pane}");
    assert!(!pane.contains("```"), "{pane}");
    assert!(
        pane.contains("tools 1/50"),
        "status line counts tool calls:\n{pane}"
    );

    // Idle: no timer runs, so the process should use (almost) no CPU. Reported only.
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    if let Some(pid) = t.ikigai_pid() {
        std::thread::sleep(Duration::from_millis(300));
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_secs(2));
        if let (Some(a), Some(b)) = (before, cpu_ticks(pid)) {
            eprintln!(
                "idle CPU over 2 s: {} clock ticks (utime+stime; 100 ticks = 1 s)",
                b - a
            );
        }
    }

    let pane = t.capture();
    let status_id = pane
        .lines()
        .find(|l| l.starts_with("openai/"))
        .and_then(|l| l.split(" · ").nth(1))
        .unwrap_or_else(|| panic!("status line:\n{pane}"))
        .to_string();
    t.keys(&["C-d"]);
    let pane = wait_exit(&t);
    assert!(restored(&pane), "raw mode is off after exit:\n{pane}");
    assert!(
        pane.contains(&format!("resume with: ikigai --resume {status_id}\nEXITED:0")),
        "one resume line, right before the shell's next output:\n{pane}"
    );
    assert!(
        pane.contains("Done now."),
        "the conversation stays in the scrollback:\n{pane}"
    );
    let history = std::fs::read_to_string(home.path().join(".local/share/ikigai/history")).unwrap();
    assert_eq!(history, "\"please run echo\"\n");
}

#[test]
fn ctrl_c_interrupts_a_slow_stream_and_the_next_turn_works() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let words: String = (1..=60).map(|i| format!("w{i} ")).collect();
    // A few words, then the stream stalls: only Ctrl+C can end this turn.
    fake.push(
        Reply::text(&format!("start {words}FINAL-WORD"))
            .truncated(10)
            .ending(End::Stall),
    );
    fake.push(Reply::text("Second answer arrived."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("go slowly");
    t.keys(&["Enter"]);
    t.wait_text("w2 ");
    // Typed while the model works: queued, sent after the turn ends.
    t.type_text("and then this");
    t.keys(&["Enter"]);
    t.wait_text("queued: and then this");
    t.keys(&["C-c"]);
    // The interrupt leaves the queued message in the input box, unsent (waited for: the
    // frame that ends the turn and the one that refills the box may be two).
    let pane = t.wait_for("the interrupted turn to end", |s| {
        s.contains("■ interrupted") && !s.contains("Esc to interrupt") && s.contains("› and then this")
    });
    let typed = pane.lines().filter(|l| l.contains("› and then this")).count();
    assert_eq!(typed, 1, "in the input box only:\n{pane}");
    assert!(!pane.contains("queued:"), "{pane}");
    assert_eq!(fake.requests().len(), 1, "{pane}");
    t.keys(&["Enter"]);
    let pane = t.wait_text("Second answer arrived.");
    assert!(pane.contains("■ interrupted"), "{pane}");
    assert!(!pane.contains("FINAL-WORD"), "{pane}");
    assert!(pane.contains("› and then this"), "{pane}");
    // Ctrl+C twice on an empty prompt exits.
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.keys(&["C-c"]);
    t.wait_text("Press Ctrl+C again to exit");
    t.keys(&["C-c"]);
    let pane = wait_exit(&t);
    assert!(restored(&pane), "{pane}");
}

#[test]
fn history_and_sessions_carry_over_to_the_next_run() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("Noted: the word is pineapple."));
    let first = {
        let t = Tmux::start(home.path(), &fake.base_url, "");
        t.wait_text("Ask anything");
        t.type_text("remember pineapple");
        t.keys(&["Enter"]);
        t.wait_text("Noted: the word is pineapple.");
        t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
        t.type_text("/exit");
        t.keys(&["Enter"]);
        t.wait_text("EXITED:0");
        t.capture()
    };
    // The last line before the shell's: how to come back.
    let hint = first
        .lines()
        .find_map(|l| l.trim().strip_prefix("resume with: ikigai --resume "))
        .unwrap_or_else(|| panic!("no resume line:\n{first}"))
        .to_string();
    assert!(
        hint.len() == 8 && hint.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
        "{hint:?}"
    );
    fake.push(Reply::text("It was pineapple."));
    let t = Tmux::start(home.path(), &fake.base_url, &format!("--resume {hint}"));
    let pane = t.wait_text("Resumed session");
    let shown = t.wait_text("Noted: the word is pineapple.");
    assert!(shown.contains("› remember pineapple"), "{pane}");
    assert!(pane.contains(&format!("Resumed session {hint}")), "{pane}");
    // Up recalls the input typed in the previous run.
    t.keys(&["Up"]);
    t.wait_text("› remember pineapple\n");
    t.keys(&["C-u"]);
    t.type_text("/sessions");
    t.keys(&["Enter"]);
    // The table: a header, and this session's row with its id and title.
    let table = t.wait_for("the sessions table", |s| {
        s.lines()
            .any(|l| l.trim_start().starts_with(&hint) && l.contains("remember pineapple"))
    });
    assert!(table.contains("› /sessions"), "the command is echoed:\n{table}");
    let header = table
        .lines()
        .find(|l| l.contains("ID ") && l.contains("TITLE") && !l.contains('›'))
        .unwrap_or_else(|| panic!("no table header:\n{table}"));
    let row = table.lines().find(|l| l.trim_start().starts_with(&hint)).unwrap();
    let column = |line: &str, what: &str| line.find(what).map(|i| line[..i].chars().count());
    assert_eq!(
        column(row, "remember pineapple"),
        column(header, "TITLE"),
        "the title sits under its header:\n{table}"
    );
    assert_eq!(
        table
            .lines()
            .filter(|l| l.contains("remember pineapple") && !l.contains('›'))
            .count(),
        1,
        "one stored session:\n{table}"
    );
    t.type_text("what was it?");
    t.keys(&["Enter"]);
    t.wait_text("It was pineapple.");
    // The model got the earlier turn as history.
    let last = fake.requests().last().cloned().unwrap();
    let sent = serde_json::to_string(last.messages()).unwrap();
    assert!(sent.contains("remember pineapple") && sent.contains("Noted: the word is pineapple."));
    // /new, then /resume by the id prefix shown, brings the history back on screen.
    let id = pane
        .split("Resumed session ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.type_text("/new");
    t.keys(&["Enter"]);
    t.wait_text("New session");
    // Tab completes the id from the stored sessions.
    t.type_text(&format!("/resume {}", &id[..2]));
    t.keys(&["Tab"]);
    t.wait_text(&format!("› /resume {id}"));
    t.keys(&["Enter"]);
    t.wait_for("a second resume", |s| s.matches("Resumed session").count() == 2);
    let pane = t.wait_for("the history again", |s| {
        s.matches("It was pineapple.").count() == 2
    });
    let after = pane.rsplit("Resumed session").next().unwrap();
    assert!(
        after.contains("› what was it?") && after.contains("Noted: the word is pineapple."),
        "{pane}"
    );
    t.keys(&["C-d"]);
    t.wait_text("EXITED:0");
}

#[test]
fn sigterm_sighup_and_sigint_restore_the_terminal_and_exit_128_plus_n() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    for (sig, code) in [
        (Signal::SIGTERM, 143),
        (Signal::SIGHUP, 129),
        (Signal::SIGINT, 130),
    ] {
        let home = tempfile::tempdir().unwrap();
        let fake = FakeProvider::start();
        let t = Tmux::start(home.path(), &fake.base_url, "");
        t.wait_text("Ask anything");
        t.type_text("typed but not sent");
        t.wait_text("typed but not sent");
        let pid = wait_pid(&t);
        kill(Pid::from_raw(pid as i32), sig).unwrap();
        let pane = t.wait_for("exit and the tty line", |s| {
            s.contains("EXITED:") && s.contains("TTY:")
        });
        assert!(restored(&pane), "{sig}: terminal modes restored:\n{pane}");
        assert!(pane.contains(&format!("EXITED:{code}")), "{sig}:\n{pane}");
        assert!(!pane.contains("resume with:"), "nothing was said:\n{pane}");
    }
}

#[test]
fn sigterm_and_sighup_cancel_the_running_tool() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    for (sig, code) in [(Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let home = tempfile::tempdir().unwrap();
        let fake = FakeProvider::start();
        let pids = home.path().join("pids");
        let cmd = format!(
            "echo $$ > {p}; sleep 300 & echo $! >> {p}; echo started; wait",
            p = pids.display()
        );
        let args = serde_json::json!({ "command": cmd }).to_string();
        fake.push(Reply::tool_calls(&[("call_1", "bash", &args)]));
        fake.push(Reply::text("never reached"));
        // The command writes a file: auto, so it runs without a question.
        let t = Tmux::start(home.path(), &fake.base_url, "--approval auto");
        t.wait_text("Ask anything");
        t.type_text("run the slow thing");
        t.keys(&["Enter"]);
        t.wait_text("Running bash");
        let end = Instant::now() + DEADLINE;
        let tool: Vec<u32> = loop {
            let text = std::fs::read_to_string(&pids).unwrap_or_default();
            let got: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if got.len() == 2 {
                break got;
            }
            assert!(Instant::now() < end, "the tool did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(tool.iter().all(|p| !gone(*p)), "the tool runs");
        kill(Pid::from_raw(wait_pid(&t) as i32), sig).unwrap();
        let pane = t.wait_for("exit and the tty line", |s| {
            s.contains("EXITED:") && s.contains("TTY:")
        });
        assert!(restored(&pane), "{sig}:\n{pane}");
        assert!(pane.contains(&format!("EXITED:{code}")), "{sig}:\n{pane}");
        let end = Instant::now() + DEADLINE;
        while !tool.iter().all(|p| gone(*p)) {
            assert!(
                Instant::now() < end,
                "{sig}: the tool's processes {tool:?} outlived ikigai"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!pane.contains("never reached"), "{pane}");
    }
}

#[test]
fn a_long_paste_shows_as_a_marker_and_is_sent_whole() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("Read all 30 lines."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    let pasted: String = (1..=30).map(|i| format!("pasted line {i}\n")).collect();
    let s = t
        .tmux()
        .args(["set-buffer", "-b", "p", &pasted])
        .status()
        .unwrap();
    assert!(s.success());
    t.type_text("what is this? ");
    // -p: as a bracketed paste, since ikigai asked the terminal for those.
    let s = t
        .tmux()
        .args(["paste-buffer", "-p", "-b", "p", "-t", "t"])
        .status()
        .unwrap();
    assert!(s.success());
    let pane = t.wait_text("› what is this? [pasted 30 lines]");
    assert!(!pane.contains("pasted line 2\n"), "folded in the editor:\n{pane}");
    t.keys(&["Enter"]);
    t.wait_text("Read all 30 lines.");
    let last = fake.requests().last().cloned().unwrap();
    let sent = serde_json::to_string(last.messages()).unwrap();
    let want = serde_json::to_string(&format!("what is this? {pasted}")).unwrap();
    assert!(sent.contains(&want), "the whole paste is sent:\n{sent}");
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// Lines the model separates by a single newline stay separate lines (they were once
/// joined: "…sit amet Paragraph 1: …").
#[test]
fn single_newlines_in_an_answer_stay_line_breaks() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "Lorem ipsum dolor sit amet\nParagraph 1: the first\nParagraph 2: the second",
    ));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("three lines please");
    t.keys(&["Enter"]);
    let pane = t.wait_text("Paragraph 2: the second");
    assert!(!pane.contains("sit amet Paragraph"), "{pane}");
    assert!(
        pane.lines()
            .any(|l| l.trim_start().starts_with("Paragraph 1: the first")),
        "{pane}"
    );
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// A streamed answer goes into the scrollback line by line as its lines finish; the result
/// is the same rows the whole answer gives when a resumed session shows it at once:
/// paragraphs with single newlines, a heading, lists, a fenced code block, a table.
#[test]
fn an_answer_streamed_line_by_line_looks_as_when_resumed_whole() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let code: String = (1..=12)
        .map(|i| format!("    step({i}); // code {i}\n"))
        .collect();
    let rows: String = (1..=5).map(|i| format!("| row {i} | {} |\n", i * i)).collect();
    let items: String = (1..=8).map(|i| format!("- item {i} of the list\n")).collect();
    let doc = format!(
        "DOC-START\nFirst line\nSecond line, still the same paragraph\n\n## A heading\n\n{items}\n\
         1. numbered\n2. **bold** and `code`\n   continued\n\n```rust\nfn main() {{\n{code}}}\n```\n\n\
         | name | square |\n|------|-------:|\n{rows}\n> a quote\n> over two lines\n\nDOC-END"
    );
    fake.push(Reply::text(&doc).paced(Duration::from_millis(3)));
    let part = |pane: &str| -> Vec<String> {
        let from = pane.find("› show the doc").unwrap_or_else(|| panic!("{pane}"));
        let to = pane[from..].find("DOC-END").unwrap_or_else(|| panic!("{pane}")) + from;
        pane[from..to].lines().map(|l| l.trim_end().to_string()).collect()
    };
    let (streamed, hint) = {
        let t = Tmux::start(home.path(), &fake.base_url, "");
        t.wait_text("Ask anything");
        t.type_text("show the doc");
        t.keys(&["Enter"]);
        t.wait_text("DOC-END");
        t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
        t.type_text("/exit");
        t.keys(&["Enter"]);
        let pane = t.wait_text("EXITED:0");
        let all = t.capture_all();
        let hint = pane
            .lines()
            .find_map(|l| l.trim().strip_prefix("resume with: ikigai --resume "))
            .unwrap_or_else(|| panic!("no resume line:\n{pane}"))
            .to_string();
        (part(&all), hint)
    };
    let t = Tmux::start(home.path(), &fake.base_url, &format!("--resume {hint}"));
    t.wait_text("Resumed session");
    t.wait_text("DOC-END");
    let resumed = part(&t.capture_all());
    assert_eq!(
        streamed,
        resumed,
        "streamed:\n{}\n\nresumed:\n{}",
        streamed.join("\n"),
        resumed.join("\n")
    );
    let shown = streamed.join("\n");
    for want in ["code 12", "row 5 │", "item 8 of", "│ over two lines", "continued"] {
        assert_eq!(shown.matches(want).count(), 1, "{want:?} once:\n{shown}");
    }
    assert!(
        !shown.contains("```") && !shown.contains("|---"),
        "rendered:\n{shown}"
    );
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// The TUI abbreviates a long tool result after 50 lines, as plain mode does.
#[test]
fn a_long_tool_result_is_abbreviated_after_50_lines() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "call_1",
        "bash",
        r#"{"command":"seq 1 200"}"#,
    )]));
    fake.push(Reply::text("Counted."));
    let t = Tmux::start(home.path(), &fake.base_url, "--approval auto");
    t.wait_text("Ask anything");
    t.type_text("count");
    t.keys(&["Enter"]);
    let pane = t.wait_text("Counted.");
    assert!(pane.contains("… 150 more lines"), "{pane}");
    assert!(!pane.lines().any(|l| l.trim() == "200"), "{pane}");
    t.keys(&["C-d"]);
    wait_exit(&t);
}

/// A message that cannot go out for want of a key makes no session: no "resume with"
/// at exit, nothing stored.
#[test]
fn a_message_without_a_key_makes_no_session() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let t = Tmux::start(home.path(), &fake.base_url, "--provider anthropic");
    t.wait_text("Ask anything");
    t.type_text("hello there");
    t.keys(&["Enter"]);
    t.wait_text("No API key in $ANTHROPIC_API_KEY");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.keys(&["C-d"]);
    let pane = wait_exit(&t);
    assert!(!pane.contains("resume with:"), "{pane}");
    let out = crate::common::ikigai(home.path())
        .args(["sessions", "--all", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "[]",
        "nothing stored; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An output block the model wrote itself (imitating the text protocol) is shown as a
/// code block, not as raw `<||SYSTEM.OUTPUT>` tags.
#[test]
fn an_output_block_the_model_wrote_shows_no_raw_tags() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "I ran it:\n<||SYSTEM.OUTPUT>\nmade-up-output\n<SYSTEM.OUTPUT||>\nAll done.",
    ));
    let t = Tmux::start(home.path(), &fake.base_url, "--tool-protocol text");
    t.wait_text("Ask anything");
    t.type_text("run it");
    t.keys(&["Enter"]);
    let pane = t.wait_text("All done.");
    assert!(pane.contains("made-up-output"), "{pane}");
    assert!(!pane.contains("SYSTEM.OUTPUT"), "{pane}");
    t.keys(&["C-d"]);
    wait_exit(&t);
}
