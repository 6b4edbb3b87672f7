//! The terminal surface: finished lines go into the terminal's own scrollback with
//! `insert_before`, above an inline viewport whose height follows its content. Never asks
//! the terminal where the cursor is while running (that would race the input reader).

use std::io::{self, Stdout};
use std::time::Instant;

use ratatui::backend::{Backend, ClearType, CrosstermBackend, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::style::Color;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{Terminal, TerminalOptions, Viewport};

use super::TuiError;
use super::app::App;
use super::view::{self, LiveCache};

/// Lines inserted per `insert_before` call (its buffer is at most this tall).
const INSERT_CHUNK: usize = 500;

/// A backend whose cursor position can be told instead of queried.
pub trait Anchor: Backend + Clone {
    /// The cursor is at `pos` (the next position query answers it).
    fn anchor(&mut self, pos: Position);
}

impl Anchor for TestBackend {
    fn anchor(&mut self, pos: Position) {
        let _ = self.set_cursor_position(pos);
    }
}

/// Crossterm on stdout, tracking the cursor itself: the position is queried once at start,
/// then follows every move ratatui makes.
pub struct TrackedBackend {
    inner: CrosstermBackend<Stdout>,
    cursor: Position,
}

impl TrackedBackend {
    /// Asks the terminal for the cursor once (call before the input reader starts).
    pub fn new() -> io::Result<Self> {
        let (x, y) = crossterm::cursor::position().unwrap_or((0, 0));
        Ok(TrackedBackend {
            inner: CrosstermBackend::new(io::stdout()),
            cursor: Position { x, y },
        })
    }
}

impl Clone for TrackedBackend {
    fn clone(&self) -> Self {
        TrackedBackend {
            inner: CrosstermBackend::new(io::stdout()),
            cursor: self.cursor,
        }
    }
}

impl Anchor for TrackedBackend {
    fn anchor(&mut self, pos: Position) {
        self.cursor = pos;
    }
}

impl Backend for TrackedBackend {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let width = self.inner.size()?.width;
        let cells = visible_cells(content);
        // Trailing blanks that reach the right edge become "clear to end of line", so the
        // terminal does not see full-width lines (they would reflow badly on a resize).
        let mut start = 0;
        while start < cells.len() {
            let y = cells[start].1;
            let end = cells[start..]
                .iter()
                .position(|c| c.1 != y)
                .map_or(cells.len(), |n| start + n);
            let row = &cells[start..end];
            let mut keep = row.len();
            if row.last().is_some_and(|c| c.0 + 1 == width) {
                while keep > 0
                    && is_blank(row[keep - 1].2)
                    && (keep < 2 || row[keep - 2].0 + 1 == row[keep - 1].0)
                {
                    keep -= 1;
                }
            }
            self.inner.draw(row[..keep].iter().copied())?;
            if keep < row.len() {
                let x = row[keep].0;
                crossterm::queue!(
                    io::stdout(),
                    crossterm::style::SetAttribute(crossterm::style::Attribute::Reset),
                    crossterm::style::ResetColor,
                    crossterm::cursor::MoveTo(x, y),
                    crossterm::terminal::Clear(crossterm::terminal::ClearType::UntilNewLine)
                )?;
            }
            start = end;
        }
        Ok(())
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        let h = self.inner.size()?.height;
        self.cursor.y = self.cursor.y.saturating_add(n).min(h.saturating_sub(1));
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(self.cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let p = position.into();
        self.cursor = p;
        self.inner.set_cursor_position(p)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }
}

/// The cells to write: those hidden behind a wide char are dropped (`insert_before` draws
/// every cell, and writing those would shift the rest of the line right).
fn visible_cells<'a>(content: impl Iterator<Item = (u16, u16, &'a Cell)>) -> Vec<(u16, u16, &'a Cell)> {
    let mut covered: Option<(u16, u16)> = None;
    content
        .filter(|(x, y, cell)| {
            if let Some((cy, end)) = covered
                && *y == cy
                && *x < end
            {
                return false;
            }
            let w = super::wrap::str_width(cell.symbol());
            covered = (w > 1).then(|| (*y, x.saturating_add(w as u16)));
            true
        })
        .collect()
}

fn is_blank(c: &Cell) -> bool {
    c.symbol() == " " && c.fg == Color::Reset && c.bg == Color::Reset && c.modifier.is_empty()
}

fn term_err<E: std::fmt::Display>(e: E) -> TuiError {
    TuiError::Terminal(e.to_string())
}

/// The scrollback plus the inline viewport.
pub struct Screen<B: Anchor> {
    term: Terminal<B>,
    height: u16,
    cache: LiveCache,
}

impl<B: Anchor> Screen<B> {
    /// An inline viewport of `height` rows at the cursor.
    pub fn new(backend: B, height: u16) -> Result<Self, TuiError> {
        let mut term = Terminal::with_options(
            backend,
            TerminalOptions {
                viewport: Viewport::Inline(height.max(1)),
            },
        )
        .map_err(term_err)?;
        let height = term.get_frame().area().height;
        Ok(Screen {
            term,
            height,
            cache: LiveCache::default(),
        })
    }

    pub fn backend(&self) -> &B {
        self.term.backend()
    }

    pub fn backend_mut(&mut self) -> &mut B {
        self.term.backend_mut()
    }

    pub fn viewport_height(&self) -> u16 {
        self.height
    }

    /// Moves finished cells into the scrollback and redraws the viewport.
    pub fn render(&mut self, app: &mut App, now: Instant) -> Result<(), TuiError> {
        let size = self.term.size().map_err(term_err)?;
        let area = self.term.get_frame().area();
        if area.width != size.width || area.bottom() > size.height {
            self.relayout(size)?;
        }
        let width = size.width.max(1);
        let lines = app.take_scrollback(usize::from(width));
        let layout = view::layout(app, &mut self.cache, width, usize::from(size.height), now);
        let want = u16::try_from(layout.height())
            .unwrap_or(u16::MAX)
            .clamp(1, size.height.max(1));
        // Shrink before inserting (so the inserted lines end right above the viewport),
        // grow after.
        if want < self.height {
            self.set_height(want)?;
        }
        self.insert(lines)?;
        if want > self.height {
            self.set_height(want)?;
        }
        self.term
            .draw(|f| view::draw(f, f.area(), &layout))
            .map_err(term_err)?;
        app.mark_drawn();
        Ok(())
    }

    /// Puts lines into the scrollback above the viewport.
    pub fn insert(&mut self, lines: Vec<Line<'static>>) -> Result<(), TuiError> {
        for chunk in lines.chunks(INSERT_CHUNK) {
            let h = chunk.len() as u16;
            let chunk = chunk.to_vec();
            self.term
                .insert_before(h, |buf| Paragraph::new(chunk).render(buf.area, buf))
                .map_err(term_err)?;
        }
        Ok(())
    }

    /// After a terminal resize: keeps the viewport's top row when it still fits (else moves
    /// it up to fit) instead of clearing the whole screen, so what is above stays.
    fn relayout(&mut self, size: Size) -> Result<(), TuiError> {
        let area = self.term.get_frame().area();
        let height = area.height.min(size.height).max(1);
        let top = area.y.min(size.height.saturating_sub(height));
        self.rebuild(top, height)
    }

    /// Rebuilds the inline viewport with a new height at the same top row.
    fn set_height(&mut self, height: u16) -> Result<(), TuiError> {
        let top = self.term.get_frame().area().y;
        self.rebuild(top, height)
    }

    fn rebuild(&mut self, top: u16, height: u16) -> Result<(), TuiError> {
        let top = Position { x: 0, y: top };
        let b = self.term.backend_mut();
        b.set_cursor_position(top).map_err(term_err)?;
        b.clear_region(ClearType::AfterCursor).map_err(term_err)?;
        let mut backend = self.term.backend().clone();
        backend.anchor(top);
        self.term = Terminal::with_options(
            backend,
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )
        .map_err(term_err)?;
        self.height = self.term.get_frame().area().height;
        Ok(())
    }

    /// At exit: flushes what is left to the scrollback and clears the viewport so the
    /// shell prompt follows the conversation.
    pub fn finish(&mut self, app: &mut App) -> Result<(), TuiError> {
        let width = self.term.size().map_err(term_err)?.width.max(1);
        let lines = app.take_scrollback(usize::from(width));
        self.insert(lines)?;
        let area = self.term.get_frame().area();
        let b = self.term.backend_mut();
        b.set_cursor_position(Position { x: 0, y: area.y })
            .map_err(term_err)?;
        b.clear_region(ClearType::AfterCursor).map_err(term_err)?;
        b.show_cursor().map_err(term_err)?;
        Backend::flush(b).map_err(term_err)?;
        Ok(())
    }
}
