//! The terminal surface: finished lines go into the terminal's own scrollback with
//! `insert_before`, above an inline viewport whose height follows its content.
//!
//! Resizes: a terminal moves its content when resized (it pushes top rows into its
//! scrollback when shrinking, pulls them back when growing, re-wraps long rows when
//! narrowing), so the viewport's old row means nothing afterwards. The cursor moves with
//! the content, so after a resize the cursor is asked for once (only then, when the input
//! reader is idle: see `event_loop`) and the viewport is put back where its rows now are:
//! the cursor row minus the viewport rows above it, re-wrapped at the new width. Only the
//! viewport's own rows are cleared; nothing above them is touched.

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
    /// True when a size change must wait for the resize event (and its `locate`) before the
    /// next frame: a real terminal has moved its content by then.
    const LOCATE_ON_RESIZE: bool;

    /// The cursor is at `pos` (the next position query answers it).
    fn anchor(&mut self, pos: Position);

    /// Asks where the cursor really is (after a resize); `None` when the terminal does not
    /// answer. Only call it while nothing else reads the terminal's input.
    fn locate(&mut self) -> Option<Position>;
}

impl Anchor for TestBackend {
    const LOCATE_ON_RESIZE: bool = false;

    fn anchor(&mut self, pos: Position) {
        let _ = self.set_cursor_position(pos);
    }

    /// A `TestBackend` never moves its content on a resize: the viewport keeps its row.
    fn locate(&mut self) -> Option<Position> {
        None
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
    const LOCATE_ON_RESIZE: bool = true;

    fn anchor(&mut self, pos: Position) {
        self.cursor = pos;
    }

    fn locate(&mut self) -> Option<Position> {
        let (x, y) = crossterm::cursor::position().ok()?;
        self.cursor = Position { x, y };
        Some(self.cursor)
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

    /// "Clear below the cursor" goes row by row: a terminal may push the whole screen into
    /// its scrollback when cleared from the top-left corner (tmux's `scroll-on-clear`),
    /// which would leave a copy of the viewport in the history.
    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        if clear_type != ClearType::AfterCursor {
            return self.inner.clear_region(clear_type);
        }
        use crossterm::terminal::{Clear, ClearType as C};
        let h = self.inner.size()?.height;
        let at = self.cursor;
        let mut out = io::stdout();
        crossterm::queue!(out, Clear(C::UntilNewLine))?;
        for y in at.y.saturating_add(1)..h {
            crossterm::queue!(out, crossterm::cursor::MoveTo(0, y), Clear(C::CurrentLine))?;
        }
        crossterm::queue!(out, crossterm::cursor::MoveTo(at.x, at.y))
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
    /// The terminal size the viewport is laid out for.
    size: Size,
    /// The last frame as the terminal holds it (for finding it again after a resize).
    drawn: Drawn,
    /// When a frame first saw a size change that no resize event has handled yet.
    resize_seen: Option<Instant>,
}

/// How long a frame waits for the resize event after seeing a new terminal size.
const RESIZE_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

/// What the last frame left on the terminal, relative to the viewport's top.
#[derive(Clone, Debug, Default)]
struct Drawn {
    width: u16,
    /// Text width of each viewport row.
    rows: Vec<u16>,
    /// The cursor's column and row within the viewport.
    cursor: (u16, u16),
}

impl Drawn {
    /// Terminal rows between the viewport's top and the cursor once the terminal re-wraps
    /// to `width` columns (rows longer than the new width become several; nothing joins,
    /// since no row is ever continued onto the next one).
    fn rows_above_cursor(&self, width: u16) -> u16 {
        let width = width.max(1);
        let (cx, cy) = self.cursor;
        if width >= self.width {
            return cy;
        }
        let above: u16 = self
            .rows
            .iter()
            .take(usize::from(cy))
            .map(|w| w.div_ceil(width).max(1))
            .fold(0u16, |a, b| a.saturating_add(b));
        let pad = usize::from(cy).saturating_sub(self.rows.len()) as u16;
        above.saturating_add(pad).saturating_add(cx / width)
    }
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
        let size = term.size().map_err(term_err)?;
        Ok(Screen {
            term,
            height,
            cache: LiveCache::default(),
            size,
            drawn: Drawn::default(),
            resize_seen: None,
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
        if size != self.size {
            // The resize event comes next and its `resized` finds the viewport again; if it
            // never does, the viewport keeps its row after a short wait.
            let since = *self.resize_seen.get_or_insert(now);
            if B::LOCATE_ON_RESIZE && now.saturating_duration_since(since) < RESIZE_WAIT {
                return Ok(());
            }
            // Asking the terminal here could race the input reader: keep the row.
            self.resized(None)?;
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
        let mut rows = Vec::new();
        self.term
            .draw(|f| rows = view::draw(f, f.area(), &layout))
            .map_err(term_err)?;
        let top = self.term.get_frame().area().y;
        let cursor = self.term.get_cursor_position().map_err(term_err)?;
        self.drawn = Drawn {
            width: size.width,
            rows,
            cursor: (cursor.x, cursor.y.saturating_sub(top)),
        };
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

    /// After a terminal resize, with the cursor where the terminal now has it (`None` when
    /// unknown): puts the viewport back on its own rows and clears only from there down.
    /// When it no longer fits below, the rows above scroll into the scrollback (never
    /// overwritten). Without a cursor the viewport keeps its old top row.
    pub fn resized(&mut self, cursor: Option<Position>) -> Result<(), TuiError> {
        let size = self.term.size().map_err(term_err)?;
        let area = self.term.get_frame().area();
        let height = area.height.min(size.height).max(1);
        let top = match cursor {
            Some(c) => c.y.saturating_sub(self.drawn.rows_above_cursor(size.width)),
            None => area.y.min(size.height.saturating_sub(height)),
        };
        self.size = size;
        self.resize_seen = None;
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

#[cfg(test)]
mod tests {
    use super::Drawn;

    #[test]
    fn rows_above_the_cursor_follow_a_reflow() {
        // separator (100), input row with the cursor at column 2, status below.
        let d = Drawn {
            width: 100,
            rows: vec![40, 100, 2, 60],
            cursor: (2, 2),
        };
        assert_eq!(d.rows_above_cursor(100), 2);
        assert_eq!(d.rows_above_cursor(120), 2, "nothing joins when widening");
        assert_eq!(d.rows_above_cursor(60), 3, "the full-width row wraps in two");
        assert_eq!(d.rows_above_cursor(30), 2 + 4);
        let d = Drawn { cursor: (70, 2), ..d };
        assert_eq!(d.rows_above_cursor(60), 4, "the cursor's own row wrapped too");
    }
}
