//! The inline viewport: the live (still streaming) part of the turn, spinner, queued
//! messages, hints, the input box and the status line. Builds lines from the app state
//! and draws them into a frame; caches the stable part of the streaming markdown.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::{App, Phase};
use super::cells::{Cell, Look};
use super::wrap::{self, str_width};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The rendered live part of the answer, reused while it has not changed (the spinner
/// redraws the viewport ten times a second).
#[derive(Debug, Default)]
pub(crate) struct LiveCache {
    key: Option<(u64, usize, usize, usize)>,
    lines: Vec<Line<'static>>,
}

/// Everything the viewport shows, top to bottom.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    pub live: Vec<Line<'static>>,
    pub below: Vec<Line<'static>>,
    pub input: Vec<Line<'static>>,
    pub status: Line<'static>,
    /// Cursor column and row within `input`.
    pub cursor: (u16, u16),
}

impl Layout {
    pub(crate) fn height(&self) -> usize {
        self.live.len() + self.below.len() + self.input.len() + 1
    }
}

fn spinner_frame(app: &App, now: Instant) -> &'static str {
    let since = app.turn.as_ref().map_or(now, |t| t.started);
    let i = (now.saturating_duration_since(since).as_millis() / 80) as usize % SPINNER.len();
    SPINNER[i]
}

/// Builds the viewport content at `width` columns; the live part keeps at most its last
/// `max_live` lines (the screen cannot show more).
pub(crate) fn layout(app: &App, cache: &mut LiveCache, width: u16, max_live: usize, now: Instant) -> Layout {
    let width = usize::from(width.max(1));
    let t = &app.theme;
    let spin = spinner_frame(app, now);
    let spin_bullet = format!("{spin} ");
    let look = Look {
        theme: t,
        result_lines: app.ctx.config.tool_result_lines,
        spinner: &spin_bullet,
    };
    let mut live: Vec<Line<'static>> = Vec::new();
    // The unfinished line of the answer (or reasoning) shows its last rows, in half the
    // room at most: a terminal narrowed mid-line re-flows these rows into more, and they must
    // still fit on the screen below the viewport's top, or its top rows would be pushed
    // into the scrollback as a stale copy.
    let tail_room = (max_live / 2).max(1);
    if app.reasoning.has_live() {
        let rows = app.reasoning.live(width, t);
        live.extend_from_slice(&rows[rows.len().saturating_sub(tail_room)..]);
    }
    if app.answer.has_live() {
        if !live.is_empty() {
            live.push(Line::default());
        }
        live.extend(live_markdown(app, cache, width, tail_room));
    }
    for tool in &app.tools {
        if !live.is_empty() {
            live.push(Line::default());
        }
        live.extend(Cell::Tool(tool.clone()).lines(width, &look));
    }
    // The gap under the scrollback; the rest of an answer already there continues it
    // (with its own blank line when a new paragraph starts).
    let continues = match app.reasoning.has_live() {
        true => app.reasoning.continued(),
        false => app.answer.has_live() && app.answer.continued(),
    };
    if !live.is_empty() && app.inserted_any() && !continues {
        live.insert(0, Line::default());
    }
    if live.len() > max_live {
        live.drain(..live.len() - max_live);
    }

    let mut below = Vec::new();
    if app.turn.is_some() && !app.plan.is_empty() {
        if !live.is_empty() {
            below.push(Line::default());
        }
        below.extend(super::live::pinned(&app.plan, width, t));
    }
    if let Some(turn) = &app.turn {
        let (label, since) = match (&turn.phase, turn.cancelling) {
            (_, true) => ("Interrupting".to_string(), turn.started),
            _ if app.approval.is_some() => ("Waiting for your answer".to_string(), turn.phase_since),
            (Phase::Waiting, _) => ("Thinking".to_string(), turn.started),
            (Phase::Retrying { attempt, at }, _) => {
                let left = at.saturating_duration_since(now).as_secs_f64().ceil();
                (
                    format!("Retrying in {left:.0}s (attempt {attempt})"),
                    turn.started,
                )
            }
            (Phase::Streaming, _) => ("Responding".to_string(), turn.started),
            (Phase::Tool(name), _) => (format!("Running {name}"), turn.phase_since),
        };
        let secs = now.saturating_duration_since(since).as_secs();
        let text = format!("{label}… {secs}s · Esc to interrupt");
        below.push(Line::from(vec![
            Span::styled(spin_bullet.clone(), t.spinner),
            Span::styled(
                wrap::truncate(&wrap::sanitize(&text), width.saturating_sub(2)),
                t.dim,
            ),
        ]));
    }
    for q in &app.queued {
        let first = q.lines().next().unwrap_or("");
        let more = if q.contains('\n') { " …" } else { "" };
        let text = wrap::truncate(
            &wrap::sanitize(&format!("queued: {first}{more}")),
            width.saturating_sub(2),
        );
        below.push(Line::from(vec![
            Span::styled("↳ ", t.accent),
            Span::styled(text, t.dim),
        ]));
    }
    let hint = match &app.hint {
        Some(h) => wrap::wrap_text(h, t.dim, width, &[], &[], wrap::Mode::Words),
        None => Vec::new(),
    };
    // The question gets what the screen has left under the rows above it and over the
    // hint, the rule, the input and the status line: its top is never pushed off.
    if app.approval.is_some() {
        let input_rows = app
            .editor
            .layout(width.saturating_sub(2).max(1))
            .0
            .len()
            .min((max_live / 2).max(3));
        let taken = below.len() + hint.len() + 1 + input_rows + 1;
        below.extend(app.approval_lines(width, max_live.saturating_sub(taken)));
    }
    below.extend(hint);
    below.push(Line::styled("─".repeat(width), t.dim));

    let text_width = width.saturating_sub(2).max(1);
    let (rows, row, col) = app.editor.layout(text_width);
    // A long input shows a window of rows around the cursor (half the screen at most).
    let max_rows = (max_live / 2).max(3);
    let first = row
        .saturating_sub(max_rows - 1)
        .min(rows.len().saturating_sub(max_rows));
    let row = row - first;
    let mut input: Vec<Line<'static>> = rows
        .into_iter()
        .enumerate()
        .skip(first)
        .take(max_rows)
        .map(|(i, r)| {
            let prompt = if i == 0 {
                Span::styled("› ", t.user)
            } else {
                Span::raw("  ")
            };
            Line::from(vec![prompt, Span::raw(r)])
        })
        .collect();
    if app.editor.is_empty() && !app.busy() {
        input[0].spans.push(Span::styled("Ask anything, or /help", t.dim));
    }
    let cursor = ((col + 2).min(width.saturating_sub(1)) as u16, row as u16);
    Layout {
        live,
        below,
        input,
        status: status_line(app, width),
        cursor,
    }
}

fn live_markdown(app: &App, cache: &mut LiveCache, width: usize, max: usize) -> Vec<Line<'static>> {
    let key = app.answer.key(width);
    if cache.key != Some(key) {
        cache.key = Some(key);
        cache.lines = app.answer.live(width, &app.theme);
    }
    // Only the lines the screen can show are copied.
    let from = cache.lines.len().saturating_sub(max);
    cache.lines[from..].to_vec()
}

/// `provider/model · session · cwd · tokens · cost · tools n/max`, dropping the least useful
/// parts first when narrow.
pub(crate) fn status_line(app: &App, width: usize) -> Line<'static> {
    let t = &app.theme;
    let model = format!("{}/{}", app.provider.name, app.model);
    let session = app.session_id.as_deref().map(super::app::short_id);
    let cached = (app.cached > 0).then(|| format!("{} cached", human(app.cached)));
    let tokens = match (app.context_pct, cached) {
        (Some(p), Some(c)) => format!("{} tok ({c}, {p}% ctx)", human(app.tokens)),
        (Some(p), None) => format!("{} tok ({p}% ctx)", human(app.tokens)),
        (None, Some(c)) => format!("{} tok ({c})", human(app.tokens)),
        (None, None) => format!("{} tok", human(app.tokens)),
    };
    let tools = format!("tools {}/{}", app.tool_calls, app.ctx.config.max_tool_turns);
    // (text, priority: lower is dropped first)
    let mut parts: Vec<(String, u8)> = vec![(model, 9)];
    if let Some(s) = session {
        parts.push((s, 2));
    }
    parts.push((app.cwd_display.clone(), 1));
    parts.push((tokens, 5));
    // Only a known price gives a cost; a local or unknown model shows tokens alone.
    if let Some(c) = app.cost {
        parts.push((crate::spend::dollars(c), 6));
    }
    parts.push((tools, 4));
    parts.push((app.mode_label(), 8));
    let total = |p: &[(String, u8)]| {
        p.iter().map(|(s, _)| str_width(s)).sum::<usize>() + 3 * p.len().saturating_sub(1)
    };
    while total(&parts) > width && parts.len() > 1 {
        let Some(i) = parts
            .iter()
            .enumerate()
            .min_by_key(|(_, (_, p))| *p)
            .map(|(i, _)| i)
        else {
            break;
        };
        parts.remove(i);
    }
    let text = parts.into_iter().map(|(s, _)| s).collect::<Vec<_>>().join(" · ");
    Line::styled(wrap::truncate(&wrap::sanitize(&text), width), t.status)
}

fn human(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Draws the layout into `area`; when it is taller, the live part shows its tail.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, layout: &Layout) {
    let fixed = layout.below.len() + layout.input.len() + 1;
    let h = usize::from(area.height);
    let live_room = h.saturating_sub(fixed);
    let skip = layout.live.len().saturating_sub(live_room);
    let mut lines: Vec<Line<'static>> = layout.live[skip..].to_vec();
    let input_top = lines.len() + layout.below.len();
    lines.extend(layout.below.iter().cloned());
    lines.extend(layout.input.iter().cloned());
    lines.push(layout.status.clone());
    // If even the fixed part does not fit, keep the bottom (input and status).
    let drop = lines.len().saturating_sub(h);
    let lines = lines.split_off(drop.min(lines.len()));
    frame.render_widget(Paragraph::new(lines).style(Style::new()), area);
    // The caret is drawn, not the terminal's cursor: that one stays parked at the
    // viewport's top-left corner (see `screen`), hidden.
    let y = (input_top + usize::from(layout.cursor.1)).saturating_sub(drop);
    if y < h
        && let Some(cell) = frame
            .buffer_mut()
            .cell_mut((area.x + layout.cursor.0, area.y + y as u16))
    {
        cell.modifier.insert(ratatui::style::Modifier::REVERSED);
    }
}
