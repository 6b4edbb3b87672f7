//! The real binary's TUI in tmux against the loopback fake vendor: a streamed answer and a
//! tool call, Ctrl+C on a slow stream, input history and a resumed session across runs,
//! the terminal restored at exit, and (reported, not asserted) CPU use while idle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::fake_provider::{End, FakeProvider, Reply};

const DEADLINE: Duration = Duration::from_secs(40);

/// A private tmux server (own socket) running one ikigai in a 100x30 window.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(home: &Path, base_url: &str, args: &str) -> Tmux {
        let ok = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "tmux is needed for this test: run `make deps` or install tmux"
        );
        let socket = home.join("tmux.sock");
        let bin = env!("CARGO_BIN_EXE_ikigai");
        let env = format!(
            "env -u OPENAI_API_KEY -u IKIGAI_CONFIG -u IKIGAI_MODEL -u IKIGAI_DATABASE_URL -u NO_COLOR \
             HOME={h} XDG_CONFIG_HOME={h}/.config XDG_DATA_HOME={h}/.local/share \
             OPENAI_BASE_URL={base_url} OPENAI_API_KEY=test-key",
            h = home.display()
        );
        let script = format!(
            "cd {h} && printf 'before ikigai\\n' && {env} {bin} {args}; echo EXITED:$?; \
             echo TTY: $(stty -a | tr ' ;' '\\n\\n' | grep -x -e '-\\?icanon' -e '-\\?echo'); sleep 600",
            h = home.display()
        );
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["new-session", "-d", "-x", "100", "-y", "30", "-s", "t", &script])
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        Tmux { socket }
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    fn keys(&self, keys: &[&str]) {
        let s = self
            .tmux()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
        assert!(s.success());
    }

    fn type_text(&self, text: &str) {
        let s = self
            .tmux()
            .args(["send-keys", "-t", "t", "-l", text])
            .status()
            .unwrap();
        assert!(s.success());
    }

    /// The screen plus the scrollback history of the pane.
    fn capture(&self) -> String {
        let o = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-500", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Polls the pane until `pred` holds; panics with the pane's text at the deadline.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + DEADLINE;
        loop {
            let s = self.capture();
            if pred(&s) {
                return s;
            }
            assert!(Instant::now() < end, "timed out waiting for {what}; pane:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Everything the pane ever showed: its whole scrollback plus the screen.
    fn capture_all(&self) -> String {
        let o = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The visible screen only.
    fn capture_screen(&self) -> String {
        let o = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Resizes the window and waits until the input box and status line are drawn again
    /// at the new width.
    fn resize(&self, w: u16, h: u16) {
        let s = self
            .tmux()
            .args([
                "resize-window",
                "-t",
                "t",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ])
            .status()
            .unwrap();
        assert!(s.success());
        let end = Instant::now() + DEADLINE;
        loop {
            let screen = self.capture_screen();
            let rows: Vec<&str> = screen.lines().collect();
            let sep = "─".repeat(usize::from(w));
            if rows.len() == usize::from(h)
                && rows.iter().any(|r| r.trim_end() == sep)
                && rows.iter().any(|r| r.contains("Ask anything"))
            {
                // One more moment for any late frame, then done.
                std::thread::sleep(Duration::from_millis(150));
                return;
            }
            assert!(Instant::now() < end, "no redraw at {w}x{h}; screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }

    /// The ikigai process: the pane shell's child.
    fn ikigai_pid(&self) -> Option<u32> {
        let o = self
            .tmux()
            .args(["list-panes", "-t", "t", "-F", "#{pane_pid}"])
            .output()
            .ok()?;
        let shell: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().ok()?;
        std::fs::read_dir("/proc")
            .ok()?
            .filter_map(Result::ok)
            .find_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let after = stat.rsplit_once(')')?.1;
                let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
                let comm = stat.split_once('(')?.1.split_once(')')?.0;
                (ppid == shell && comm == "ikigai").then_some(pid)
            })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn restored(pane: &str) -> bool {
    pane.lines().any(|l| l.trim() == "TTY: icanon echo")
}

/// Waits for the exit and the terminal-mode line printed after it.
fn wait_exit(t: &Tmux) -> String {
    t.wait_for("exit and the tty line", |s| {
        s.contains("EXITED:0") && s.contains("TTY:")
    })
}

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

/// Waits for the ikigai process to appear in the pane.
fn wait_pid(t: &Tmux) -> u32 {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(p) = t.ikigai_pid() {
            return p;
        }
        assert!(Instant::now() < end, "ikigai process not found");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A process that is gone (or a zombie nobody needs any more).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
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
        let t = Tmux::start(home.path(), &fake.base_url, "");
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

/// The finished conversation in the whole pane history (scrollback + screen): every
/// message exactly once, no leftover copies of the input box, status line or separator.
fn assert_history_intact(all: &str, answers: &[&str], when: &str) {
    assert_eq!(all.matches("before ikigai").count(), 1, "{when}:\n{all}");
    for a in answers {
        assert_eq!(all.matches(a).count(), 1, "{when}: {a:?} once:\n{all}");
    }
    assert_eq!(
        all.matches("Ask anything").count(),
        1,
        "{when}: one input box:\n{all}"
    );
    assert_eq!(
        all.matches("tools 0/50").count(),
        1,
        "{when}: one status line:\n{all}"
    );
    let seps = all
        .lines()
        .filter(|l| !l.trim().is_empty() && l.trim().chars().all(|c| c == '─'))
        .count();
    assert_eq!(seps, 1, "{when}: no stray separator fragments:\n{all}");
}

#[test]
fn resizing_never_erases_or_duplicates_the_history() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("Short answer: FIRST-ANSWER-END"));
    // Long enough to fill the screen and push the start into the scrollback.
    let long: String = (1..=40)
        .map(|i| format!("- item number {i} of the long list\n"))
        .collect();
    fake.push(Reply::text(&format!("LONG-START\n\n{long}\nLONG-END")));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("first question");
    t.keys(&["Enter"]);
    t.wait_text("FIRST-ANSWER-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.resize(100, 30);

    // The issue's repro: 30 rows -> 8 -> 30, and more, in both directions.
    let first = ["› first question", "FIRST-ANSWER-END"];
    for (w, h) in [(100, 8), (100, 30), (100, 12), (100, 30)] {
        t.resize(w, h);
        assert_history_intact(&t.capture_all(), &first, &format!("after {w}x{h}"));
    }

    // A full screen: shrink 30 -> 20 and back, then width changes.
    t.type_text("second question");
    t.keys(&["Enter"]);
    t.wait_text("LONG-END");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    t.resize(100, 30);
    let all = [
        "› first question",
        "FIRST-ANSWER-END",
        "› second question",
        "LONG-START",
        "item number 1 of",
        "item number 20 of",
        "item number 40 of",
        "LONG-END",
    ];
    assert_history_intact(&t.capture_all(), &all, "before resizing");
    for (w, h) in [
        (100, 20),
        (100, 30),
        (60, 30),
        (100, 30),
        (70, 12),
        (120, 40),
        (100, 30),
    ] {
        t.resize(w, h);
        assert_history_intact(&t.capture_all(), &all, &format!("after {w}x{h}"));
    }
    // Still usable: the next answer lands below the rest.
    fake.push(Reply::text("THIRD-ANSWER"));
    t.type_text("third");
    t.keys(&["Enter"]);
    t.wait_text("THIRD-ANSWER");
    t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
    let pane = t.capture_all();
    let order: Vec<usize> = ["FIRST-ANSWER-END", "LONG-END", "› third", "THIRD-ANSWER"]
        .iter()
        .map(|x| pane.find(x).unwrap_or_else(|| panic!("{x}:\n{pane}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "in order:\n{pane}");
    t.keys(&["C-d"]);
    wait_exit(&t);
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
