//! The approval question in the TUI: what the call will do (a command whole, an edit as
//! its diff, a write as its path, size and first lines, any other tool as its name and
//! arguments), then one key: `y` yes, `n` no (then an optional reason), `a` always for
//! this project, `s` for this session, Esc no. Shift+Tab cycles the approval mode. The
//! agent asks one call at a time; the turn waits meanwhile.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::app::App;
use super::wrap;
use crate::protocol::{Answer, Op};

pub use super::question::Pending;

impl App {
    /// The agent asks about a call.
    pub fn on_approval_requested(&mut self, p: Pending) {
        self.approval = Some(p);
        self.dirty = true;
    }

    /// Shift+Tab: the next approval mode, for this call on.
    pub fn cycle_mode(&mut self) {
        self.mode = self.mode.next();
        self.outbox.push(Op::SetApprovalMode(self.mode));
        self.hint = Some(format!("approval mode: {} (Shift+Tab to change)", self.mode));
    }

    /// A key while a question is open; `true` when it was the question's.
    pub fn approval_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(p) = &mut self.approval else {
            return false;
        };
        // Ctrl+C cancels the turn as always (and with it the question).
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('d')) {
            return false;
        }
        if key.code == KeyCode::BackTab {
            return false;
        }
        self.dirty = true;
        if let Some(text) = &mut p.typing {
            match key.code {
                KeyCode::Enter => {
                    let reason = std::mem::take(text);
                    self.answer(Answer::No(Some(reason)));
                }
                KeyCode::Esc => self.answer(Answer::No(None)),
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !ctrl => text.push(c),
                _ => {}
            }
            return true;
        }
        match key.code {
            KeyCode::Char('y' | 'Y') => self.answer(Answer::Yes),
            KeyCode::Char('n' | 'N') => p.typing = Some(String::new()),
            KeyCode::Esc => self.answer(Answer::No(None)),
            KeyCode::Char('a' | 'A') if !p.always.is_empty() => self.answer(Answer::Always),
            KeyCode::Char('s' | 'S') if !p.always.is_empty() => self.answer(Answer::Session),
            _ => {}
        }
        true
    }

    fn answer(&mut self, answer: Answer) {
        if let Some(p) = self.approval.take() {
            self.outbox.push(Op::Approve { id: p.id, answer });
        }
    }

    /// The question's lines, for the viewport (empty when none is open).
    pub fn approval_lines(&self, width: usize) -> Vec<Line<'static>> {
        let Some(p) = &self.approval else {
            return Vec::new();
        };
        let t = &self.theme;
        let question = if p.outside_sandbox {
            format!("Run {} again OUTSIDE the sandbox? {}", p.name, p.reason)
        } else {
            format!("Allow {}? {}", p.name, p.reason)
        };
        let mut out = wrap::wrap_text(&question, t.warning, width, &[], &[], wrap::Mode::Words);
        let indent = [Span::raw("  ")];
        for (text, style) in what(&p.name, &p.arguments) {
            let style = match style {
                Look::Plain => t.bold,
                Look::Added => t.tool_ok,
                Look::Removed => t.tool_err,
                Look::Dim => t.dim,
            };
            out.extend(wrap::wrap_text(
                &text,
                style,
                width,
                &indent,
                &indent,
                wrap::Mode::Chars,
            ));
        }
        if let Some(text) = &p.typing {
            out.extend(wrap::wrap_text(
                &format!("Reason for the model (Enter to send, Esc for none): {text}"),
                t.accent,
                width,
                &[],
                &[],
                wrap::Mode::Words,
            ));
            return out;
        }
        let mut keys = "y yes · n no (+reason)".to_string();
        if !p.always.is_empty() {
            keys.push_str(&format!(
                " · a always in this project: {} · s this session",
                p.always.join(", ")
            ));
        }
        keys.push_str(" · Esc no");
        out.extend(wrap::wrap_text(
            &keys,
            t.accent,
            width,
            &[],
            &[],
            wrap::Mode::Words,
        ));
        out
    }

    /// The mode as the status line shows it.
    pub fn mode_label(&self) -> String {
        format!("{} mode", self.mode)
    }
}

enum Look {
    Plain,
    Added,
    Removed,
    Dim,
}

/// What the call will do, line by line.
fn what(name: &str, arguments: &str) -> Vec<(String, Look)> {
    if let Some(lines) = crate::ui::diff::preview(name, arguments) {
        use crate::ui::diff::Line as D;
        return lines
            .iter()
            .map(|l| {
                let look = match l {
                    D::Header(_) | D::Content(_) => Look::Plain,
                    D::Added(_) => Look::Added,
                    D::Removed(_) => Look::Removed,
                    D::Context(_) | D::Gap | D::More(_) => Look::Dim,
                };
                (l.text(), look)
            })
            .collect();
    }
    let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
    if name == "bash"
        && let Some(cmd) = args.get("command").and_then(|c| c.as_str())
    {
        // The whole command, every line of it.
        return cmd.lines().map(|l| (format!("$ {l}"), Look::Plain)).collect();
    }
    let pretty = serde_json::to_string_pretty(&args).unwrap_or_else(|_| arguments.to_string());
    let mut out = vec![(name.to_string(), Look::Plain)];
    out.extend(pretty.lines().map(|l| (l.to_string(), Look::Dim)));
    out
}
