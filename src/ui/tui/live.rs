//! What the TUI shows of running work besides the transcript: the last lines a running
//! command printed (its tool block's window: at most `TAIL_LINES` lines, each kept short;
//! `\r` starts the line over, as progress bars expect), and the model's plan pinned above
//! the input while a turn runs. Keeps bounded state only; draws nothing into the scrollback.

use std::collections::VecDeque;

use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap;
use crate::protocol::{PlanStep, StepStatus};

/// Lines of a running command's output shown under its call.
pub(crate) const TAIL_LINES: usize = 5;
/// Bytes kept of one output line (the screen shows less).
const MAX_LINE: usize = 512;
/// Steps of the pinned plan shown at most (a window around the current one).
const PLAN_LINES: usize = 6;

/// The last lines a running command printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tail {
    lines: VecDeque<String>,
    /// The line being printed (no newline yet).
    open: String,
    /// A `\r` came: the next text replaces the open line.
    restart: bool,
}

impl Tail {
    /// Takes more output.
    pub fn push(&mut self, text: &str) {
        for piece in text.split_inclusive('\n') {
            let (body, newline) = match piece.strip_suffix('\n') {
                Some(b) => (b.strip_suffix('\r').unwrap_or(b), true),
                None => (piece, false),
            };
            for (i, part) in body.split('\r').enumerate() {
                if i > 0 {
                    self.restart = true;
                }
                if part.is_empty() {
                    continue;
                }
                if std::mem::take(&mut self.restart) {
                    self.open.clear();
                }
                let room = MAX_LINE.saturating_sub(self.open.len());
                let mut end = part.len().min(room);
                while !part.is_char_boundary(end) {
                    end -= 1;
                }
                self.open.push_str(&part[..end]);
            }
            if newline {
                self.restart = false;
                self.lines.push_back(std::mem::take(&mut self.open));
                if self.lines.len() > TAIL_LINES {
                    self.lines.pop_front();
                }
            }
        }
    }

    /// The lines to show, oldest first (at most `TAIL_LINES`).
    pub fn shown(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        if !self.open.is_empty() {
            all.push(&self.open);
        }
        let skip = all.len().saturating_sub(TAIL_LINES);
        all.split_off(skip)
    }

    /// The tail's lines at `width`: dim, one screen row each.
    pub(crate) fn lines(&self, width: usize, t: &Theme) -> Vec<Line<'static>> {
        self.shown()
            .into_iter()
            .map(|l| {
                let text = wrap::sanitize(l);
                Line::from(vec![
                    Span::styled("  │ ", t.dim),
                    Span::styled(wrap::truncate(&text, width.saturating_sub(4)), t.dim),
                ])
            })
            .collect()
    }
}

/// The plan as lines: its heading, then a window of at most `max` steps around the first
/// one not done (`None`: all steps, as the scrollback shows it).
pub(crate) fn plan_lines(
    steps: &[PlanStep],
    width: usize,
    t: &Theme,
    max: Option<usize>,
) -> Vec<Line<'static>> {
    let heading = crate::ui::plan::heading(steps);
    let mut out = vec![Line::from(Span::styled(
        wrap::truncate(&heading, width),
        t.accent,
    ))];
    let (from, to) = match max {
        Some(max) if steps.len() > max => {
            let current = steps
                .iter()
                .position(|s| s.status != StepStatus::Done)
                .unwrap_or(steps.len());
            let from = current.saturating_sub(1).min(steps.len() - max);
            (from, from + max)
        }
        _ => (0, steps.len()),
    };
    for s in &steps[from..to] {
        let style = match s.status {
            StepStatus::Done => t.dim,
            StepStatus::InProgress => t.tool,
            StepStatus::Pending => ratatui::style::Style::new(),
        };
        let text = format!("{} {}", crate::ui::plan::mark(s.status), wrap::sanitize(&s.step));
        out.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(wrap::truncate(&text, width.saturating_sub(2)), style),
        ]));
    }
    let hidden = steps.len() - (to - from);
    if hidden > 0 {
        out.push(Line::styled(format!("  … {hidden} more"), t.dim));
    }
    out
}

/// The pinned plan: a window of the steps (see `plan_lines`).
pub(crate) fn pinned(steps: &[PlanStep], width: usize, t: &Theme) -> Vec<Line<'static>> {
    plan_lines(steps, width, t, Some(PLAN_LINES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_and_restarts_a_line_on_cr() {
        let mut t = Tail::default();
        for i in 1..=20 {
            t.push(&format!("line {i}\n"));
        }
        assert_eq!(t.shown(), ["line 16", "line 17", "line 18", "line 19", "line 20"]);
        t.push("progress 10%\rprogress 5");
        t.push("0%\r");
        assert_eq!(t.shown().last(), Some(&"progress 50%"));
        t.push("progress 100%\r\ndone");
        assert_eq!(t.shown()[3..], ["progress 100%", "done"]);
        t.push(&"x".repeat(10_000));
        assert!(t.shown().last().unwrap().len() <= MAX_LINE);
    }

    #[test]
    fn a_long_plan_pins_a_window_around_the_current_step() {
        let steps: Vec<PlanStep> = (0..10)
            .map(|i| PlanStep {
                step: format!("step {i}"),
                status: if i < 7 {
                    StepStatus::Done
                } else {
                    StepStatus::Pending
                },
            })
            .collect();
        let theme = Theme::new(false);
        let text: Vec<String> = pinned(&steps, 40, &theme)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text[0], "Plan (7/10 done)");
        assert_eq!(text[1], "  ✓ step 4");
        assert_eq!(text[6], "  ○ step 9");
        assert_eq!(text[7], "  … 4 more");
    }
}
