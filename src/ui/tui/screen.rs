//! The terminal surface: finished lines go into the terminal's own scrollback (printed as
//! text above an inline viewport whose height follows its content; see `backend` for why
//! every move is relative to the cursor).
//!
//! Resizes: a terminal moves its content when resized (it pushes top rows into its
//! scrollback when shrinking, pulls them back when growing, re-wraps long rows when
//! narrowing), and tmux does so up to 250 ms before it tells the program. Between frames the
//! terminal's cursor is parked, hidden, at the viewport's top-left corner (the caret in the
//! input box is drawn): a terminal keeps the cursor's row on the screen when shrinking
//! (removing rows below it first) and moves it with the content, so the parked cursor always
//! marks where the viewport starts and nothing above it is the viewport's. Frames are drawn
//! relative to it (`backend`), so one drawn for the old size still lands on the viewport's
//! own rows; after the resize event the cursor is asked for once (only then, when the input
//! reader is idle: see `event_loop`), and the viewport is rebuilt from there down at the
//! new size. Nothing above the parked cursor is ever written.

use std::time::Instant;

use ratatui::backend::{Backend, ClearType};
use ratatui::layout::{Position, Size};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{Terminal, TerminalOptions, Viewport};

use super::TuiError;
use super::app::App;
pub use super::backend::{Anchor, TrackedBackend};
use super::view::{self, LiveCache};

/// Lines inserted per `insert_before` call (its buffer is at most this tall).
const INSERT_CHUNK: usize = 500;

/// The most rows the viewport takes: two thirds of the screen, so that rows of the
/// conversation stay above it. A terminal narrowed while a long answer streams re-wraps the
/// viewport's rows into more rows and pushes the screen's top rows into its scrollback; with
/// room above, those are conversation rows (already there), never a copy of the viewport.
pub fn viewport_room(height: u16) -> u16 {
    height.saturating_sub(height / 3).max(1)
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
    /// When a frame first saw a size change that no resize event has handled yet.
    resize_seen: Option<Instant>,
}

/// How long a frame waits for the resize event after seeing a new terminal size.
const RESIZE_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

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
        let size = self.term.backend().screen_size().map_err(term_err)?;
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
        let room = viewport_room(size.height);
        let layout = view::layout(app, &mut self.cache, width, usize::from(room), now);
        let want = u16::try_from(layout.height()).unwrap_or(u16::MAX).clamp(1, room);
        // Shrink before inserting (so the inserted lines end right above the viewport),
        // grow after.
        if want < self.height {
            self.set_height(want)?;
        }
        self.insert(lines)?;
        if want > self.height {
            self.set_height(want)?;
        }
        self.park()?;
        self.term
            .draw(|f| view::draw(f, f.area(), &layout))
            .map_err(term_err)?;
        app.mark_drawn();
        Ok(())
    }

    /// Puts lines into the scrollback above the viewport: printed as text from the
    /// viewport's top row (the terminal wraps and scrolls them), the viewport following.
    pub fn insert(&mut self, lines: Vec<Line<'static>>) -> Result<(), TuiError> {
        if lines.is_empty() {
            return Ok(());
        }
        let top = self.term.get_frame().area().y;
        let b = self.term.backend_mut();
        b.set_cursor_position(Position { x: 0, y: top })
            .map_err(term_err)?;
        b.clear_region(ClearType::AfterCursor).map_err(term_err)?;
        if b.print_lines(&lines).map_err(term_err)? {
            let at = b.get_cursor_position().map_err(term_err)?;
            return self.rebuild(at.y, self.height);
        }
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
    /// unknown): the parked cursor is the viewport's top row; the viewport is rebuilt from
    /// there at the new size and only from there down is cleared. When it no longer fits
    /// below, the rows above scroll into the scrollback (never overwritten). Without a
    /// cursor the viewport keeps its old top row (the last row at most).
    pub fn resized(&mut self, cursor: Option<Position>) -> Result<(), TuiError> {
        let size = self.term.backend().screen_size().map_err(term_err)?;
        let area = self.term.get_frame().area();
        let height = area.height.min(size.height).max(1);
        let top = match cursor {
            Some(c) => c.y,
            None => {
                // Unknown: the cursor is still parked at the viewport's top, and a terminal
                // keeps the cursor on its screen (no move: the cursor is already there).
                let top = area.y.min(size.height.saturating_sub(1));
                self.term.backend_mut().anchor(Position { x: 0, y: top });
                top
            }
        };
        self.size = size;
        self.resize_seen = None;
        self.term.backend_mut().lay_out_for(size);
        self.rebuild(top, height)
    }

    /// Moves the (hidden) cursor to the viewport's top-left corner.
    fn park(&mut self) -> Result<(), TuiError> {
        let top = self.term.get_frame().area().y;
        self.term
            .backend_mut()
            .set_cursor_position(Position { x: 0, y: top })
            .map_err(term_err)
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
        Backend::flush(b).map_err(term_err)?;
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
        self.park()?;
        Backend::flush(self.term.backend_mut()).map_err(term_err)
    }

    /// At exit: flushes what is left to the scrollback and clears the viewport so the
    /// shell prompt follows the conversation.
    pub fn finish(&mut self, app: &mut App) -> Result<(), TuiError> {
        let width = self.term.backend().screen_size().map_err(term_err)?.width.max(1);
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
