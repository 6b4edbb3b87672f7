//! The terminal backend under the inline viewport: every cursor move is made relative to
//! where the cursor is, never to absolute screen rows.
//!
//! Why relative: a terminal moves its content (and the cursor with it) when it is resized,
//! and some tell the program much later than they move it (tmux passes a resize on up to
//! 250 ms after resizing its own grid). A frame drawn in between, for the old size, lands
//! where the content now is when it is placed relative to the cursor; placed at absolute
//! rows it would land on history the terminal has just pulled back onto the screen and
//! overwrite it. Outside frames, up is "cursor up" and down a line feed (which scrolls at
//! the bottom, keeping rows and content in step); within a frame every run is placed from
//! the frame's saved starting point with "cursor up/down", which never scroll. The viewport
//! is drawn with auto-wrap off, so a row wider than a narrowed screen cannot wrap and
//! scroll; history lines are printed as text with auto-wrap on, so the terminal wraps (and
//! later re-flows) them itself and no text is lost. Every text it writes goes through
//! `crate::text::visible` last: only the escapes made here reach the terminal.

use std::io::{self, Write};

use crossterm::cursor::{Hide, MoveDown, MoveToColumn, MoveUp, RestorePosition, SavePosition, Show};
use crossterm::style::{Attribute, Colors, Print, SetAttribute, SetColors};
use crossterm::terminal::{Clear, ClearType as C, DisableLineWrap, EnableLineWrap};
use ratatui::backend::{Backend, ClearType, IntoCrossterm, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

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

    /// Prints `lines` from the cursor on as plain terminal text, each ending with a line
    /// break, so the terminal wraps and scrolls them itself. `false` when this backend
    /// cannot (then ratatui's `insert_before` places them).
    fn print_lines(&mut self, lines: &[Line<'_>]) -> io::Result<bool>;

    /// The terminal's size now (which may differ from the size frames are laid out for).
    fn screen_size(&self) -> io::Result<Size>;

    /// Frames are laid out for `size` from now on: what `Backend::size` answers, so that
    /// ratatui never re-places the viewport on its own when the terminal changes size.
    fn lay_out_for(&mut self, size: Size);
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

    fn print_lines(&mut self, _lines: &[Line<'_>]) -> io::Result<bool> {
        Ok(false)
    }

    fn screen_size(&self) -> io::Result<Size> {
        match Backend::size(self) {
            Ok(s) => Ok(s),
            Err(never) => match never {},
        }
    }

    fn lay_out_for(&mut self, _size: Size) {}
}

/// Crossterm escapes for stdout, written at each flush, with the cursor tracked here: it is
/// queried once at start, then follows every move made.
pub struct TrackedBackend {
    out: Vec<u8>,
    cursor: Position,
    /// The size frames are laid out for (see `Anchor::lay_out_for`).
    size: Size,
    /// Where flushed bytes go instead of stdout (tests of what reaches the terminal).
    captured: Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>,
}

impl TrackedBackend {
    /// Asks the terminal for the cursor once (call before the input reader starts).
    pub fn new() -> io::Result<Self> {
        let (x, y) = crossterm::cursor::position().unwrap_or((0, 0));
        let (width, height) = crossterm::terminal::size()?;
        Ok(TrackedBackend {
            out: Vec::with_capacity(16 * 1024),
            cursor: Position { x, y },
            size: Size { width, height },
            captured: None,
        })
    }

    /// Moves the cursor to `p` relative to where it is: "up" for rows above, line feeds for
    /// rows below, then the column.
    fn move_to(&mut self, p: Position) -> io::Result<()> {
        if p.y < self.cursor.y {
            crossterm::queue!(self.out, MoveUp(self.cursor.y - p.y))?;
        }
        for _ in self.cursor.y..p.y {
            self.out.push(b'\n');
        }
        crossterm::queue!(self.out, MoveToColumn(p.x))?;
        self.cursor = p;
        Ok(())
    }

    /// Within a frame: back to the frame's start (DECRC), then down or up to row `p.y`
    /// ("cursor down" stops at the screen's bottom and never scrolls), then the column.
    /// The saved state has the default style.
    fn move_from(&mut self, start: Position, p: Position) -> io::Result<()> {
        crossterm::queue!(self.out, RestorePosition)?;
        if p.y > start.y {
            crossterm::queue!(self.out, MoveDown(p.y - start.y))?;
        } else if p.y < start.y {
            crossterm::queue!(self.out, MoveUp(start.y - p.y))?;
        }
        crossterm::queue!(self.out, MoveToColumn(p.x))
    }

    /// Sets the style for what follows, from a plain state (attributes and colours reset).
    fn set_style(&mut self, fg: Color, bg: Color, modifier: Modifier) -> io::Result<()> {
        crossterm::queue!(self.out, SetAttribute(Attribute::Reset))?;
        for (m, a) in ATTRIBUTES {
            if modifier.contains(m) {
                crossterm::queue!(self.out, SetAttribute(a))?;
            }
        }
        crossterm::queue!(
            self.out,
            SetColors(Colors::new(fg.into_crossterm(), bg.into_crossterm()))
        )
    }
}

const ATTRIBUTES: [(Modifier, Attribute); 9] = [
    (Modifier::BOLD, Attribute::Bold),
    (Modifier::DIM, Attribute::Dim),
    (Modifier::ITALIC, Attribute::Italic),
    (Modifier::UNDERLINED, Attribute::Underlined),
    (Modifier::SLOW_BLINK, Attribute::SlowBlink),
    (Modifier::RAPID_BLINK, Attribute::RapidBlink),
    (Modifier::REVERSED, Attribute::Reverse),
    (Modifier::HIDDEN, Attribute::Hidden),
    (Modifier::CROSSED_OUT, Attribute::CrossedOut),
];

#[cfg(test)]
impl TrackedBackend {
    /// A backend of `width` x `height` with its cursor at the top whose flushed bytes go
    /// to `captured` instead of stdout (tests of what reaches the terminal).
    pub(crate) fn capturing(
        width: u16,
        height: u16,
        captured: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    ) -> Self {
        TrackedBackend {
            out: Vec::new(),
            cursor: Position { x: 0, y: 0 },
            size: Size { width, height },
            captured: Some(captured),
        }
    }
}

impl Clone for TrackedBackend {
    /// The copy starts with nothing queued: flush before cloning.
    fn clone(&self) -> Self {
        TrackedBackend {
            out: Vec::with_capacity(16 * 1024),
            cursor: self.cursor,
            size: self.size,
            captured: self.captured.clone(),
        }
    }
}

impl Drop for TrackedBackend {
    fn drop(&mut self) {
        let _ = Backend::flush(self);
    }
}

impl Anchor for TrackedBackend {
    const LOCATE_ON_RESIZE: bool = true;

    fn anchor(&mut self, pos: Position) {
        self.cursor = pos;
    }

    fn locate(&mut self) -> Option<Position> {
        Backend::flush(self).ok()?;
        let (x, y) = crossterm::cursor::position().ok()?;
        self.cursor = Position { x, y };
        Some(self.cursor)
    }

    fn screen_size(&self) -> io::Result<Size> {
        let (width, height) = crossterm::terminal::size()?;
        Ok(Size { width, height })
    }

    fn lay_out_for(&mut self, size: Size) {
        self.size = size;
    }

    fn print_lines(&mut self, lines: &[Line<'_>]) -> io::Result<bool> {
        let height = self.size.height;
        crossterm::queue!(self.out, MoveToColumn(0))?;
        for line in lines {
            // Cleared first, not after: "clear to end of line" after a line that fills the
            // row would erase its last character on terminals that keep the cursor there.
            crossterm::queue!(self.out, Clear(C::CurrentLine))?;
            for span in &line.spans {
                let style: Style = line.style.patch(span.style);
                // The last guard: whatever a cell forgot to make visible is shown, never
                // performed (`crate::text::visible`).
                let content = crate::text::visible(&span.content);
                if style == Style::default() {
                    crossterm::queue!(self.out, Print(&content))?;
                } else {
                    let styled = crossterm::style::StyledContent::new(style.into_crossterm(), &content);
                    crossterm::queue!(self.out, crossterm::style::PrintStyledContent(styled))?;
                }
            }
            crossterm::queue!(self.out, Print("\r\n"))?;
        }
        let rows = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        self.cursor = Position {
            x: 0,
            y: self.cursor.y.saturating_add(rows).min(height.saturating_sub(1)),
        };
        Ok(true)
    }
}

impl Backend for TrackedBackend {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let width = self.size.width;
        let cells = visible_cells(content);
        if cells.is_empty() {
            return Ok(());
        }
        // Every run starts from the frame's starting point (the parked cursor), restored
        // with DECRC: a move that stopped at a shrunk screen's edge cannot shift the rest.
        let start = self.cursor;
        let plain = (Color::Reset, Color::Reset, Modifier::empty());
        crossterm::queue!(
            self.out,
            SetAttribute(Attribute::Reset),
            SetColors(Colors::new(
                crossterm::style::Color::Reset,
                crossterm::style::Color::Reset
            )),
            DisableLineWrap,
            SavePosition
        )?;
        let mut style = plain;
        let mut i = 0;
        while i < cells.len() {
            let y = cells[i].1;
            let end = cells[i..]
                .iter()
                .position(|c| c.1 != y)
                .map_or(cells.len(), |n| i + n);
            let row = &cells[i..end];
            // Trailing blanks that reach the right edge become "clear to end of line", so
            // the terminal does not see full-width lines (they would reflow on a resize).
            let mut keep = row.len();
            if row.last().is_some_and(|c| c.0 + 1 == width) {
                while keep > 0
                    && is_blank(row[keep - 1].2)
                    && (keep < 2 || row[keep - 2].0 + 1 == row[keep - 1].0)
                {
                    keep -= 1;
                }
            }
            let mut next: Option<u16> = None;
            for &(x, y, cell) in &row[..keep] {
                if next != Some(x) {
                    self.move_from(start, Position { x, y })?;
                    style = plain;
                }
                let want = (cell.fg, cell.bg, cell.modifier);
                if want != style {
                    self.set_style(cell.fg, cell.bg, cell.modifier)?;
                    style = want;
                }
                // A symbol holding a character that could act on the terminal is shown.
                crossterm::queue!(self.out, Print(crate::text::visible(cell.symbol())))?;
                next = Some(x.saturating_add(super::wrap::str_width(cell.symbol()).max(1) as u16));
            }
            if keep < row.len() {
                self.move_from(start, Position { x: row[keep].0, y })?;
                style = plain;
                crossterm::queue!(self.out, Clear(C::UntilNewLine))?;
            }
            i = end;
        }
        crossterm::queue!(
            self.out,
            RestorePosition,
            SetAttribute(Attribute::Reset),
            SetColors(Colors::new(
                crossterm::style::Color::Reset,
                crossterm::style::Color::Reset
            )),
            EnableLineWrap
        )?;
        self.cursor = start;
        Ok(())
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        let h = self.size.height;
        for _ in 0..n {
            self.out.push(b'\n');
        }
        self.cursor.y = self.cursor.y.saturating_add(n).min(h.saturating_sub(1));
        Ok(())
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        crossterm::queue!(self.out, Hide)
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        crossterm::queue!(self.out, Show)
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(self.cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.move_to(position.into())
    }

    fn clear(&mut self) -> io::Result<()> {
        crossterm::queue!(self.out, Clear(C::All))
    }

    /// "Clear below the cursor" never starts in the first column: a terminal may push the
    /// whole screen into its scrollback when cleared from the top-left corner (tmux's
    /// `scroll-on-clear`), which would leave a copy of the viewport in the history. (It
    /// does not move down row by row either: past a shrunk screen's bottom that scrolls.)
    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        let kind = match clear_type {
            ClearType::AfterCursor => {
                if self.cursor.x == 0 {
                    crossterm::queue!(
                        self.out,
                        Clear(C::CurrentLine),
                        MoveToColumn(1),
                        Clear(C::FromCursorDown),
                        MoveToColumn(0)
                    )?;
                    return Ok(());
                }
                C::FromCursorDown
            }
            ClearType::All => C::All,
            ClearType::BeforeCursor => C::FromCursorUp,
            ClearType::CurrentLine => C::CurrentLine,
            ClearType::UntilNewLine => C::UntilNewLine,
        };
        crossterm::queue!(self.out, Clear(kind))
    }

    fn size(&self) -> io::Result<Size> {
        Ok(self.size)
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        let w = crossterm::terminal::window_size()?;
        Ok(WindowSize {
            columns_rows: Size {
                width: w.columns,
                height: w.rows,
            },
            pixels: Size {
                width: w.width,
                height: w.height,
            },
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        if let Some(captured) = &self.captured {
            if let Ok(mut c) = captured.lock() {
                c.extend_from_slice(&self.out);
            }
            self.out.clear();
            return Ok(());
        }
        let mut stdout = io::stdout().lock();
        let r = stdout.write_all(&self.out).and_then(|()| stdout.flush());
        self.out.clear();
        r
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

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Stylize;

    fn backend(x: u16, y: u16) -> TrackedBackend {
        TrackedBackend {
            out: Vec::new(),
            cursor: Position { x, y },
            size: Size {
                width: 20,
                height: 10,
            },
            captured: None,
        }
    }

    /// The bytes queued so far (and nothing left to reach the test's stdout on drop).
    fn take(b: &mut TrackedBackend) -> String {
        String::from_utf8(std::mem::take(&mut b.out)).unwrap()
    }

    /// Absolute positioning (`CSI row;col H`) or a scroll inside a frame would land a frame
    /// drawn for an old size on the wrong rows of a resized terminal.
    fn absolute(s: &str) -> bool {
        s.split('\x1b').any(|part| {
            part.strip_prefix('[')
                .is_some_and(|p| p.ends_with('H') || p.contains(";") && p.contains('H'))
        })
    }

    #[test]
    fn a_frame_is_placed_from_its_start_and_never_scrolls_or_wraps() {
        let mut b = backend(0, 5);
        let a = Cell::new("a");
        let mut c = Cell::new("c");
        c.set_style(Style::new().bold());
        let cells = [(0u16, 5u16, &a), (3, 7, &c), (4, 7, &a), (2, 3, &a)];
        b.draw(cells.into_iter()).unwrap();
        let s = take(&mut b);
        assert!(!absolute(&s), "{s:?}");
        assert!(!s.contains('\n'), "no line feed in a frame: {s:?}");
        assert!(s.contains("\x1b[?7l\x1b7"), "auto-wrap off, start saved: {s:?}");
        assert!(s.contains("\x1b8\x1b[1Ga"), "row 5 from the start: {s:?}");
        assert!(
            s.contains("\x1b8\x1b[2B\x1b[4G"),
            "two rows down, column 4: {s:?}"
        );
        assert!(
            s.contains("\x1b[1m\x1b[39;49mc\x1b[0m"),
            "bold c, then plain: {s:?}"
        );
        assert!(s.contains("\x1b8\x1b[2A\x1b[3Ga"), "two rows up: {s:?}");
        assert!(s.ends_with("\x1b[?7h"), "auto-wrap back on: {s:?}");
        let back = s.rfind("\x1b8").unwrap();
        assert!(back > s.rfind("a").unwrap(), "ends back at the start: {s:?}");
        assert_eq!(b.cursor, Position { x: 0, y: 5 });
    }

    #[test]
    fn moves_between_frames_are_relative_and_down_is_a_line_feed() {
        let mut b = backend(0, 5);
        b.set_cursor_position(Position { x: 2, y: 8 }).unwrap();
        assert_eq!(take(&mut b), "\n\n\n\x1b[3G");
        b.set_cursor_position(Position { x: 0, y: 2 }).unwrap();
        assert_eq!(take(&mut b), "\x1b[6A\x1b[1G");
        b.append_lines(20).unwrap();
        assert_eq!(take(&mut b), "\n".repeat(20));
        assert_eq!(
            b.cursor.y, 9,
            "the screen scrolled: the cursor stays on the last row"
        );
    }

    #[test]
    fn clearing_below_never_starts_in_the_first_column() {
        let mut b = backend(0, 0);
        b.clear_region(ClearType::AfterCursor).unwrap();
        // tmux's scroll-on-clear pushes the whole screen into the history when "clear
        // below" starts at the top-left corner.
        assert_eq!(take(&mut b), "\x1b[2K\x1b[2G\x1b[J\x1b[1G");
        let mut b = backend(4, 3);
        b.clear_region(ClearType::AfterCursor).unwrap();
        assert_eq!(take(&mut b), "\x1b[J");
    }

    #[test]
    fn history_lines_are_printed_as_text_the_terminal_wraps() {
        let mut b = backend(0, 7);
        let lines = [Line::from("plain"), Line::from(vec!["x".into(), "bold".bold()])];
        assert!(b.print_lines(&lines).unwrap());
        let s = take(&mut b);
        assert!(!absolute(&s), "{s:?}");
        assert!(s.starts_with("\x1b[1G\x1b[2Kplain\r\n\x1b[2Kx"), "{s:?}");
        assert!(s.contains("bold"), "{s:?}");
        assert!(s.ends_with("\r\n"), "{s:?}");
        assert_eq!(b.cursor, Position { x: 0, y: 9 });
    }
}
