//! The approval question in the TUI: what the call will do (a command whole, an edit as
//! its diff, a write as its path, size and lines, any other tool as its name and
//! arguments; every character a reader could miss shown, see `question`), then one key:
//! `y` yes, `n` no (then an optional reason), `a` always for this project, `s` for this
//! session, Esc no. What does not fit is never cut from the top: the question shows its
//! first lines, how many more there are, and scrolls (↑ ↓ PgUp PgDn Home End). Shift+Tab
//! cycles the approval mode. The agent asks one call at a time; the turn waits meanwhile.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::app::App;
use super::question::Look;
use super::wrap;
use crate::protocol::{Answer, Op};

pub use super::question::Pending;

/// The fewest rows of what the call does that a question shows, however small the screen.
const MIN_BODY_ROWS: usize = 1;
/// The most rows the question's first line (the tool and why it asks) takes.
const HEAD_ROWS: usize = 2;

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
        let page = p.page() as isize;
        match key.code {
            KeyCode::Char('y' | 'Y') => self.answer(Answer::Yes),
            KeyCode::Char('n' | 'N') => p.typing = Some(String::new()),
            KeyCode::Esc => self.answer(Answer::No(None)),
            KeyCode::Char('a' | 'A') if !p.always.is_empty() => self.answer(Answer::Always),
            KeyCode::Char('s' | 'S') if !p.always.is_empty() => self.answer(Answer::Session),
            KeyCode::Down | KeyCode::Char('j') => p.scroll_by(1),
            KeyCode::Up | KeyCode::Char('k') => p.scroll_by(-1),
            KeyCode::PageDown | KeyCode::Char(' ') => p.scroll_by(page),
            KeyCode::PageUp => p.scroll_by(-page),
            KeyCode::Home => p.scroll_to_end(false),
            KeyCode::End => p.scroll_to_end(true),
            _ => {}
        }
        true
    }

    fn answer(&mut self, answer: Answer) {
        if let Some(p) = self.approval.take() {
            self.outbox.push(Op::Approve { id: p.id, answer });
        }
    }

    /// The question's lines, for the viewport, in at most `max_rows` rows (empty when none
    /// is open). Its head, its size, the keys and where it has scrolled to are always
    /// shown; what the call does gets the rows left, from its first line down.
    pub fn approval_lines(&self, width: usize, max_rows: usize) -> Vec<Line<'static>> {
        let Some(p) = &self.approval else {
            return Vec::new();
        };
        let t = &self.theme;
        let name = crate::text::exact(&p.name);
        // The reason may quote the call (a whole command): on one line, in a few rows;
        // the call itself is shown whole below.
        let reason = crate::text::exact(&p.reason).replace('\n', "⏎");
        let question = if p.outside_sandbox {
            format!("Run {name} again OUTSIDE the sandbox? {reason}")
        } else {
            format!("Allow {name}? {reason}")
        };
        let mut head = wrap::wrap_text(&question, t.warning, width, &[], &[], wrap::Mode::Words);
        if head.len() > HEAD_ROWS {
            head.truncate(HEAD_ROWS);
            if let Some(last) = head.last_mut() {
                let text: String = last.spans.iter().map(|s| s.content.as_ref()).collect();
                *last = Line::styled(wrap::truncate(&format!("{text} …"), width), t.warning);
            }
        }
        if let Some(size) = &p.size {
            head.extend(wrap::wrap_text(size, t.dim, width, &[], &[], wrap::Mode::Words));
        }
        let indent = [Span::raw("  ")];
        let body: Vec<Line<'static>> = p
            .body
            .iter()
            .flat_map(|(text, look)| {
                let style = match look {
                    Look::Plain => t.bold,
                    Look::Added => t.tool_ok,
                    Look::Removed => t.tool_err,
                    Look::Dim => t.dim,
                };
                wrap::wrap_text(text, style, width, &indent, &indent, wrap::Mode::Chars)
            })
            .collect();
        let keys = self.approval_keys(p, width);
        let fixed = head.len() + keys.len();
        let mut out = head;
        if fixed + body.len() <= max_rows {
            p.limits.set((0, body.len().max(1)));
            out.extend(body);
        } else {
            // One row says where the reader is; the rest shows what the call does.
            let room = max_rows.saturating_sub(fixed + 1).max(MIN_BODY_ROWS);
            let last = body.len() - room.min(body.len());
            p.limits.set((last, room));
            let from = p.scroll.min(last);
            let to = (from + room).min(body.len());
            out.extend(body[from..to].iter().cloned());
            let below = body.len() - to;
            let note = if from == 0 {
                format!("… {below} more lines below · ↓ PgDn to read on, End for the last")
            } else {
                format!(
                    "lines {}–{to} of {} · {below} more below · ↑ ↓ PgUp PgDn Home End",
                    from + 1,
                    body.len()
                )
            };
            out.extend(wrap::wrap_text(
                &note,
                t.accent,
                width,
                &indent,
                &indent,
                wrap::Mode::Words,
            ));
        }
        out.extend(keys);
        out
    }

    /// The keys line (or, after `n`, the reason being typed).
    fn approval_keys(&self, p: &Pending, width: usize) -> Vec<Line<'static>> {
        let t = &self.theme;
        if let Some(text) = &p.typing {
            return wrap::wrap_text(
                &format!("Reason for the model (Enter to send, Esc for none): {text}"),
                t.accent,
                width,
                &[],
                &[],
                wrap::Mode::Words,
            );
        }
        let mut keys = "y yes · n no (+reason)".to_string();
        if !p.always.is_empty() {
            keys.push_str(&format!(
                " · a always in this project: {} · s this session",
                crate::text::exact(&p.always.join(", "))
            ));
        }
        keys.push_str(" · Esc no");
        wrap::wrap_text(&keys, t.accent, width, &[], &[], wrap::Mode::Words)
    }

    /// The mode as the status line shows it.
    pub fn mode_label(&self) -> String {
        format!("{} mode", self.mode)
    }
}
