//! The multi-line input editor: a text buffer with a cursor, the editing keys, and its
//! layout at a given width. Knows nothing of history, commands or the agent.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::wrap::char_width;

/// What an editing key did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// The text or cursor changed (or the key was consumed).
    Changed,
    /// Up on the first line: the caller may recall older input.
    UpAtTop,
    /// Down on the last line: the caller may recall newer input.
    DownAtBottom,
    /// Not an editing key.
    Ignored,
}

/// The input buffer. `cursor` is a byte index on a char boundary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Editor {
    text: String,
    cursor: usize,
}

impl Editor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
    }

    /// Empties the buffer and returns what it held.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Replaces `range` (bytes) with `with` and puts the cursor after it.
    pub fn replace_range(&mut self, range: std::ops::Range<usize>, with: &str) {
        let start = range.start.min(self.text.len());
        let end = range.end.clamp(start, self.text.len());
        self.text.replace_range(start..end, with);
        self.cursor = start + with.len();
    }

    /// Inserts text at the cursor (paste: newlines kept, `\r\n` and `\r` become `\n`).
    pub fn insert_str(&mut self, s: &str) {
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        let s: String = s
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .filter(|c| *c == '\n' || !c.is_control())
            .collect();
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    fn prev_boundary(&self, i: usize) -> usize {
        self.text[..i].char_indices().next_back().map_or(0, |(j, _)| j)
    }

    fn next_boundary(&self, i: usize) -> usize {
        self.text[i..].chars().next().map_or(i, |c| i + c.len_utf8())
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Start of the word before the cursor (skipping spaces first).
    fn word_left(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_');
        trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| !c.is_alphanumeric() && *c != '_')
            .map_or(0, |(i, c)| i + c.len_utf8())
    }

    /// End of the word after the cursor.
    fn word_right(&self) -> usize {
        let after = &self.text[self.cursor..];
        let skip = after.len()
            - after
                .trim_start_matches(|c: char| !c.is_alphanumeric() && c != '_')
                .len();
        let rest = &after[skip..];
        let word = rest
            .find(|c: char| !c.is_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        self.cursor + skip + word
    }

    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves up or down one logical line, keeping the display column.
    fn vertical(&mut self, up: bool) {
        let col: usize = self.text[self.line_start()..self.cursor]
            .chars()
            .map(char_width)
            .sum();
        let target_start = if up {
            let ls = self.line_start();
            self.text[..ls.saturating_sub(1)].rfind('\n').map_or(0, |i| i + 1)
        } else {
            self.line_end() + 1
        };
        let line_end = self.text[target_start..]
            .find('\n')
            .map_or(self.text.len(), |i| target_start + i);
        let mut pos = target_start;
        let mut w = 0;
        for (i, c) in self.text[target_start..line_end].char_indices() {
            if w + char_width(c) > col {
                break;
            }
            w += char_width(c);
            pos = target_start + i + c.len_utf8();
        }
        self.cursor = pos;
    }

    /// Applies an editing key. Enter, Tab, Esc, Ctrl+C and Ctrl+D are the caller's.
    pub fn handle_key(&mut self, key: KeyEvent) -> Edit {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT | KeyModifiers::CONTROL) =>
            {
                self.insert_char('\n')
            }
            KeyCode::Char('j') if ctrl => self.insert_char('\n'),
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(),
            KeyCode::Char('b') if ctrl => self.cursor = self.prev_boundary(self.cursor),
            KeyCode::Char('f') if ctrl => self.cursor = self.next_boundary(self.cursor),
            KeyCode::Char('b') if alt => self.cursor = self.word_left(),
            KeyCode::Char('f') if alt => self.cursor = self.word_right(),
            KeyCode::Char('k') if ctrl => {
                let end = self.line_end();
                let end = if end == self.cursor && end < self.text.len() {
                    end + 1
                } else {
                    end
                };
                self.text.replace_range(self.cursor..end, "");
            }
            KeyCode::Char('u') if ctrl => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            KeyCode::Char('w') if ctrl => self.delete_word_left(),
            KeyCode::Backspace if alt || ctrl => self.delete_word_left(),
            KeyCode::Char('d') if alt => {
                let end = self.word_right();
                self.text.replace_range(self.cursor..end, "");
            }
            KeyCode::Char(c) if !ctrl && !alt => self.insert_char(c),
            KeyCode::Backspace => {
                if self.cursor > 0 {
                    let p = self.prev_boundary(self.cursor);
                    self.text.replace_range(p..self.cursor, "");
                    self.cursor = p;
                }
            }
            KeyCode::Delete => self.delete_forward(),
            KeyCode::Left if ctrl || alt => self.cursor = self.word_left(),
            KeyCode::Right if ctrl || alt => self.cursor = self.word_right(),
            KeyCode::Left => self.cursor = self.prev_boundary(self.cursor),
            KeyCode::Right => self.cursor = self.next_boundary(self.cursor),
            KeyCode::Home if ctrl => self.cursor = 0,
            KeyCode::End if ctrl => self.cursor = self.text.len(),
            KeyCode::Home => self.cursor = self.line_start(),
            KeyCode::End => self.cursor = self.line_end(),
            KeyCode::Up => {
                if self.on_first_line() {
                    return Edit::UpAtTop;
                }
                self.vertical(true);
            }
            KeyCode::Down => {
                if self.on_last_line() {
                    return Edit::DownAtBottom;
                }
                self.vertical(false);
            }
            _ => return Edit::Ignored,
        }
        Edit::Changed
    }

    /// Deletes the char under the cursor (Delete, or Ctrl+D on a non-empty prompt).
    pub fn delete_forward(&mut self) {
        let n = self.next_boundary(self.cursor);
        self.text.replace_range(self.cursor..n, "");
    }

    fn delete_word_left(&mut self) {
        let start = self.word_left();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Splits the text into display rows of at most `width` columns (after the prompt) and
    /// finds the cursor: returns (rows, cursor row, cursor column).
    pub fn layout(&self, width: usize) -> (Vec<String>, usize, usize) {
        let width = width.max(2);
        let mut rows = vec![String::new()];
        let mut w = 0;
        let mut cur = (0, 0);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cur = (rows.len() - 1, w);
            }
            if c == '\n' {
                rows.push(String::new());
                w = 0;
                continue;
            }
            let cw = char_width(c);
            if w + cw > width {
                rows.push(String::new());
                w = 0;
                if i == self.cursor {
                    cur = (rows.len() - 1, 0);
                }
            }
            if let Some(r) = rows.last_mut() {
                r.push(c);
            }
            w += cw;
        }
        if self.cursor >= self.text.len() {
            if w >= width {
                rows.push(String::new());
                w = 0;
            }
            cur = (rows.len() - 1, w);
        }
        (rows, cur.0, cur.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    fn typed(s: &str) -> Editor {
        let mut e = Editor::new();
        for c in s.chars() {
            e.handle_key(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        e
    }

    #[test]
    fn typing_and_backspace_handle_multibyte_chars() {
        let mut e = typed("héllo🦀");
        assert_eq!(e.text(), "héllo🦀");
        e.handle_key(key(KeyCode::Backspace, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::Left, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::Left, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::Left, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::Backspace, KeyModifiers::NONE));
        assert_eq!(e.text(), "hllo");
    }

    #[test]
    fn newline_keys_insert_newlines() {
        let mut e = typed("a");
        e.handle_key(key(KeyCode::Enter, KeyModifiers::SHIFT));
        e.handle_key(key(KeyCode::Enter, KeyModifiers::ALT));
        e.handle_key(key(KeyCode::Char('j'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "a\n\n\n");
        assert_eq!(
            e.handle_key(key(KeyCode::Enter, KeyModifiers::NONE)),
            Edit::Ignored
        );
    }

    #[test]
    fn emacs_line_keys() {
        let mut e = typed("hello world");
        e.handle_key(key(KeyCode::Char('a'), KeyModifiers::CONTROL));
        assert_eq!(e.cursor(), 0);
        e.handle_key(key(KeyCode::Char('e'), KeyModifiers::CONTROL));
        assert_eq!(e.cursor(), 11);
        e.handle_key(key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "hello ");
        e.handle_key(key(KeyCode::Home, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::Char('k'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "");
        let mut e = typed("abc def");
        e.handle_key(key(KeyCode::Left, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "f");
    }

    #[test]
    fn ctrl_k_at_line_end_joins_lines() {
        let mut e = Editor::new();
        e.set_text("one\ntwo");
        e.handle_key(key(KeyCode::Up, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::End, KeyModifiers::NONE));
        e.handle_key(key(KeyCode::Char('k'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "onetwo");
    }

    #[test]
    fn word_moves() {
        let mut e = typed("foo bar_baz  qux");
        e.handle_key(key(KeyCode::Left, KeyModifiers::CONTROL));
        assert_eq!(&e.text()[e.cursor()..], "qux");
        e.handle_key(key(KeyCode::Char('b'), KeyModifiers::ALT));
        assert_eq!(&e.text()[e.cursor()..], "bar_baz  qux");
        e.handle_key(key(KeyCode::Char('f'), KeyModifiers::ALT));
        assert_eq!(&e.text()[e.cursor()..], "  qux");
        e.handle_key(key(KeyCode::Right, KeyModifiers::ALT));
        assert_eq!(e.cursor(), e.text().len());
    }

    #[test]
    fn up_and_down_move_between_lines_then_report_edges() {
        let mut e = Editor::new();
        e.set_text("first line\nab\nthird");
        assert_eq!(
            e.handle_key(key(KeyCode::Down, KeyModifiers::NONE)),
            Edit::DownAtBottom
        );
        e.handle_key(key(KeyCode::Up, KeyModifiers::NONE));
        // column 5 of "third" clamps to the end of "ab"
        assert_eq!(&e.text()[..e.cursor()], "first line\nab");
        e.handle_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(&e.text()[..e.cursor()], "fi");
        assert_eq!(e.handle_key(key(KeyCode::Up, KeyModifiers::NONE)), Edit::UpAtTop);
    }

    #[test]
    fn paste_normalises_line_endings_and_controls() {
        let mut e = Editor::new();
        e.insert_str("a\r\nb\rc\td\x1b[0m");
        assert_eq!(e.text(), "a\nb\nc d[0m");
    }

    #[test]
    fn layout_wraps_and_places_cursor() {
        let mut e = Editor::new();
        e.set_text("abcdef\n日本語");
        let (rows, r, c) = e.layout(4);
        assert_eq!(rows, ["abcd", "ef", "日本", "語"]);
        assert_eq!((r, c), (3, 2));
        e.handle_key(key(KeyCode::Home, KeyModifiers::NONE));
        let (_, r, c) = e.layout(4);
        assert_eq!((r, c), (2, 0));
        e.set_text("abcd");
        let (rows, r, c) = e.layout(4);
        assert_eq!(rows, ["abcd", ""]);
        assert_eq!((r, c), (1, 0));
    }
}
