//! The real binary's TUI in a private tmux server, for the e2e tests: start it against a
//! fake vendor, send keys and pastes, resize the window, read the screen and the whole
//! scrollback, find the process.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const DEADLINE: Duration = Duration::from_secs(40);

/// A private tmux server (own socket) running one ikigai in a 100x30 window.
pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    pub fn start(home: &Path, base_url: &str, args: &str) -> Tmux {
        Self::start_in(home, home, base_url, args)
    }

    /// `start`, with ikigai run in `cwd` (a project folder that is not the home folder).
    pub fn start_in(home: &Path, cwd: &Path, base_url: &str, args: &str) -> Tmux {
        Self::start_with(home, cwd, base_url, "", args)
    }

    /// `start_in`, with `runner` (a command prefix such as `setpriv --reuid=65534 …`) in
    /// front of the binary: ikigai runs as another user in the same terminal.
    pub fn start_with(home: &Path, cwd: &Path, base_url: &str, runner: &str, args: &str) -> Tmux {
        let ok = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "tmux is needed for this test: run `make deps` or install tmux"
        );
        // A fresh socket per start: a second run in the same home never meets the first
        // run's server while it shuts down.
        static STARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = home.join(format!("tmux-{n}.sock"));
        let bin = super::binary();
        let bin = bin.display();
        let env = format!(
            "env -u OPENAI_API_KEY -u IKIGAI_CONFIG -u IKIGAI_MODEL -u IKIGAI_DATABASE_URL -u NO_COLOR \
             HOME={h} XDG_CONFIG_HOME={h}/.config XDG_DATA_HOME={h}/.local/share \
             OPENAI_BASE_URL={base_url} OPENAI_API_KEY=test-key",
            h = home.display()
        );
        let script = format!(
            "cd {c} && printf 'before ikigai\\n' && {env} {runner} {bin} {args}; echo EXITED:$?; \
             echo TTY: $(stty -a | tr ' ;' '\\n\\n' | grep -x -e '-\\?icanon' -e '-\\?echo'); sleep 600",
            c = cwd.display()
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

    pub fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    pub fn keys(&self, keys: &[&str]) {
        let s = self
            .tmux()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
        assert!(s.success());
    }

    pub fn type_text(&self, text: &str) {
        let s = self
            .tmux()
            .args(["send-keys", "-t", "t", "-l", text])
            .status()
            .unwrap();
        assert!(s.success());
    }

    /// The screen plus the scrollback history of the pane.
    pub fn capture(&self) -> String {
        let o = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-500", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Polls the pane until `pred` holds; panics with the pane's text at the deadline.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
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
    pub fn capture_all(&self) -> String {
        let o = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The visible screen only.
    pub fn capture_screen(&self) -> String {
        let o = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Resizes the window and waits until the program has redrawn at the new size.
    ///
    /// tmux resizes its own grid at once but tells the program later: it queues pane
    /// resizes and passes them on at most every 250 ms, so for a while the pane and the
    /// program disagree about the size, and the old frame (still on the grid) can look
    /// redrawn. So: wait until the pane's pty has the new size (the program has its
    /// SIGWINCH then), then type a probe into the input box and wait until it is drawn
    /// (the program draws only at the size it has been told), then erase it.
    pub fn resize(&self, w: u16, h: u16) {
        self.resize_window(w, h);
        self.wait_pty_size(w, h);
        self.type_text("resize-probe");
        self.wait_frame(w, h, "the probe", |s| s.contains("› resize-probe"));
        self.keys(&["C-u"]);
        self.wait_frame(w, h, "the probe erased", |s| !s.contains("resize-probe"));
    }

    /// Asks tmux to resize the window (without waiting for anything).
    pub fn resize_window(&self, w: u16, h: u16) {
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
    }

    /// The window size the program in the pane has been told, (columns, rows).
    pub fn pty_size(&self) -> Option<(u16, u16)> {
        let o = self
            .tmux()
            .args(["display-message", "-p", "-t", "t", "#{pane_tty}"])
            .output()
            .ok()?;
        let tty = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let o = Command::new("stty").args(["-F", &tty, "size"]).output().ok()?;
        let s = String::from_utf8_lossy(&o.stdout);
        let mut it = s.split_whitespace();
        let rows = it.next()?.parse().ok()?;
        let cols = it.next()?.parse().ok()?;
        Some((cols, rows))
    }

    /// Waits until the pane's pty has been resized to `w`x`h` (tmux may take 250 ms).
    pub fn wait_pty_size(&self, w: u16, h: u16) {
        let end = Instant::now() + DEADLINE;
        loop {
            let got = self.pty_size();
            if got == Some((w, h)) {
                return;
            }
            assert!(Instant::now() < end, "pty never became {w}x{h}: {got:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the screen is `h` rows with a full-width separator and `pred` holds.
    fn wait_frame(&self, w: u16, h: u16, what: &str, pred: impl Fn(&str) -> bool) {
        let end = Instant::now() + DEADLINE;
        let sep = "─".repeat(usize::from(w));
        loop {
            let screen = self.capture_screen();
            let rows: Vec<&str> = screen.lines().collect();
            if rows.len() == usize::from(h) && rows.iter().any(|r| r.trim_end() == sep) && pred(&screen) {
                return;
            }
            assert!(
                Instant::now() < end,
                "no redraw at {w}x{h} with {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }

    /// The ikigai process: the pane shell's child.
    pub fn ikigai_pid(&self) -> Option<u32> {
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
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

pub fn restored(pane: &str) -> bool {
    pane.lines().any(|l| l.trim() == "TTY: icanon echo")
}

/// Waits for the exit and the terminal-mode line printed after it.
pub fn wait_exit(t: &Tmux) -> String {
    t.wait_for("exit and the tty line", |s| {
        s.contains("EXITED:0") && s.contains("TTY:")
    })
}

/// Waits for the ikigai process to appear in the pane.
pub fn wait_pid(t: &Tmux) -> u32 {
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
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}
