//! The answer while it streams: its finished lines go into the scrollback as they finish,
//! so the inline viewport only ever holds the unfinished tail (a terminal narrowed mid-answer
//! re-flows only that small area, and it is cleared and redrawn). Owns the answer's text and
//! what of it is committed; renders through `markdown` and never touches the terminal.
//!
//! A line is finished when nothing after it can change how it renders: a code line once it
//! ends, a text line once the next line has begun and cannot turn it into a heading or a
//! table header (`---`, `===`, `|---|`), a table only after the blank line that ends it,
//! a paragraph with `**` or `` ` `` open only once they close.
//! Rows are rendered for a "group" of the text (from a block boundary on) and each commit
//! sends the rows the group gained; were an earlier row ever to render differently (the
//! width changed, or markdown reinterpreted it), the group restarts where the committed
//! text ends (inside a code block with its fence line as context), so nothing is lost or
//! repeated: what is in the scrollback stays as it was drawn.

use ratatui::text::{Line, Span};

use super::markdown;
use super::theme::Theme;
use super::wrap::{self, Mode};

/// Lines of a code block rendered together at most: a longer block goes on in a new group
/// from its fence line (each frame renders the group, highlighting included), at the cost
/// of the highlighter's state across the cut (a string or comment spanning it).
const CODE_GROUP: usize = 200;

/// What an answer hands to the scrollback (the TUI makes it a transcript cell).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Piece {
    /// Finished rows, rendered at the width; `continued` when earlier rows went before.
    Rows {
        rows: Vec<Line<'static>>,
        continued: bool,
    },
    /// A whole reasoning text of which nothing was committed.
    Reasoning(String),
    /// A whole answer of which nothing was committed.
    Assistant(String),
    /// The last part of an answer whose first rows went as `Rows`: rendered when shown.
    Rest(Box<Answer>),
}

/// Reasoning text, dimmed in italics; the first line after `∴ ` when `first`.
pub(crate) fn reasoning_lines(text: &str, width: usize, t: &Theme, first: bool) -> Vec<Line<'static>> {
    let mark = if first {
        Span::styled("∴ ", t.dim)
    } else {
        Span::raw("  ")
    };
    wrap::wrap_text(
        text.trim(),
        t.dim.italic(),
        width,
        &[mark],
        &[Span::raw("  ")],
        Mode::Words,
    )
}

/// The streaming answer and how much of it is in the scrollback.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Answer {
    text: String,
    /// Where the rendering group starts in `text`; it is rendered as `ctx + text[base..]`.
    base: usize,
    /// A code fence's opening line when the group starts inside that block.
    ctx: String,
    /// The group starts a new block: a blank row comes before its first row.
    sep: bool,
    /// The end of the committed text (always at a line start).
    done: usize,
    /// The group's rows committed so far, rendered at `width`.
    rows: Vec<Line<'static>>,
    width: usize,
    /// Rows of this answer are in the scrollback.
    any: bool,
    /// Counts finished answers (the view's cache key).
    generation: u64,
    /// Reasoning text (plain lines after `∴ `) rather than a Markdown answer.
    reasoning: bool,
}

/// What a line of the answer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A code fence's opening or closing line.
    Fence,
    Code,
    Blank,
    Text,
}

/// Fence and table state while reading the answer line by line.
#[derive(Clone, Debug, Default)]
struct Blocks {
    /// The open fence: its character, length and opening line.
    fence: Option<(u8, usize, String)>,
    /// The line before had a `|` (a table's header row, if a delimiter row follows).
    pipe: bool,
    /// In a table (since its delimiter row, until a blank line): held whole, its columns
    /// are sized by all its rows.
    table: bool,
    /// The paragraph so far has an odd number of `*` (and of `` ` ``): emphasis (or code)
    /// may span into the next line, so its lines are held until it closes.
    stars: bool,
    ticks: bool,
}

impl Blocks {
    fn line(&mut self, line: &str) -> Kind {
        let t = line.trim_start();
        let b = t.as_bytes();
        let run = |c: u8| b.iter().take_while(|&&x| x == c).count();
        match &self.fence {
            Some((c, n, _)) => {
                if run(*c) >= *n && t[run(*c)..].trim().is_empty() {
                    self.fence = None;
                    return Kind::Fence;
                }
                Kind::Code
            }
            None => {
                if let Some(&c) = b.first().filter(|c| **c == b'`' || **c == b'~') {
                    let n = run(c);
                    if n >= 3 && !(c == b'`' && t[n..].contains('`')) {
                        let open = t.trim_end_matches(['\n', '\r']);
                        self.fence = Some((c, n, format!("{open}\n")));
                        (self.pipe, self.table, self.stars, self.ticks) = (false, false, false, false);
                        return Kind::Fence;
                    }
                }
                if line.trim().is_empty() {
                    (self.pipe, self.table, self.stars, self.ticks) = (false, false, false, false);
                    return Kind::Blank;
                }
                let pipe = line.contains('|');
                if self.pipe && pipe && t.contains('-') && may_underline(t.trim_end()) {
                    self.table = true;
                }
                self.pipe = pipe;
                // A list item's `* ` marker is no emphasis.
                let body = t.strip_prefix("* ").unwrap_or(t);
                // Runs of the character (`**` opens once).
                let odd = |c: char| {
                    let runs = body.split(|x| x != c).filter(|r| !r.is_empty()).count();
                    runs % 2 == 1
                };
                self.stars ^= odd('*');
                self.ticks ^= odd('`');
                Kind::Text
            }
        }
    }
}

/// A line begun with only these characters may still become `---`, `===` or `|---|`,
/// which would change the line above it.
fn may_underline(partial: &str) -> bool {
    partial
        .chars()
        .all(|c| matches!(c, '-' | '=' | '|' | ':' | ' ' | '\t'))
}

/// A block after a blank line that cannot belong to the block before it (not indented,
/// not a list item).
fn starts_block(partial: &str) -> bool {
    partial
        .bytes()
        .next()
        .is_some_and(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'-' | b'*' | b'+' | b'0'..=b'9'))
}

/// Where the answer may be committed up to, after `from`: the committable line ends and,
/// among them, the block boundaries (a new group may start there).
fn scan(text: &str, from: usize) -> (usize, Vec<usize>) {
    let mut blocks = Blocks::default();
    let (mut ready, mut starts) = (from, Vec::new());
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        let kind = blocks.line(line);
        end += line.len();
        if end <= from {
            continue;
        }
        let next = text[end..].split('\n').next().unwrap_or("");
        let ok = match kind {
            Kind::Fence | Kind::Code => true,
            _ if blocks.table || blocks.stars || blocks.ticks => false,
            Kind::Blank => true,
            Kind::Text => !next.is_empty() && !may_underline(next),
        };
        if ok {
            ready = end;
            if kind == Kind::Blank && starts_block(next) {
                starts.push(end);
            }
        }
    }
    (ready, starts)
}

/// The context a group starting at `at` needs: the open fence's line, and whether `at`
/// follows a blank line outside code (a block boundary).
fn context_at(text: &str, at: usize) -> (String, bool) {
    let mut blocks = Blocks::default();
    let mut kind = Kind::Text;
    for line in text[..at].split_inclusive('\n') {
        kind = blocks.line(line);
    }
    let ctx = blocks.fence.map(|(_, _, open)| open).unwrap_or_default();
    (ctx, at > 0 && kind == Kind::Blank)
}

impl Answer {
    /// The model's reasoning, streaming: plain lines, each finished at its newline.
    pub(crate) fn reasoning() -> Self {
        Answer {
            reasoning: true,
            ..Answer::default()
        }
    }

    /// Takes more of the answer.
    pub(crate) fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Something is still to be shown live (or flushed).
    pub(crate) fn has_live(&self) -> bool {
        !self.text[self.done..].trim().is_empty()
    }

    /// Rows of this answer are in the scrollback already (the live rows continue them).
    pub(crate) fn continued(&self) -> bool {
        self.any
    }

    /// What identifies the live rows at `width` (for the view's cache).
    pub(crate) fn key(&self, width: usize) -> (u64, usize, usize, usize) {
        (self.generation, width, self.text.len(), self.done)
    }

    fn render(&self, end: usize, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        if self.reasoning {
            let first = self.text[..self.base].trim().is_empty();
            return reasoning_lines(&self.text[self.base..end], width, theme, first);
        }
        let src = format!("{}{}", self.ctx, &self.text[self.base..end]);
        markdown::render(&src, width, theme)
    }

    /// Starts the group over at the committed end.
    fn regroup(&mut self) {
        let (ctx, sep) = match self.reasoning {
            true => (String::new(), self.text[..self.done].ends_with("\n\n")),
            false => context_at(&self.text, self.done),
        };
        self.base = self.done;
        self.ctx = ctx;
        self.sep = sep;
        self.rows.clear();
    }

    /// The group's rows up to `end` at `width` that are not committed yet, with the blank
    /// row that separates a new group; commits them.
    fn commit_to(&mut self, end: usize, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        if width != self.width && !self.rows.is_empty() {
            self.regroup();
        }
        self.width = width;
        let mut all = self.render(end, width, theme);
        if !all.starts_with(&self.rows) {
            self.regroup();
            all = self.render(end, width, theme);
        }
        let mut out = all[self.rows.len()..].to_vec();
        if self.rows.is_empty() && self.sep && self.any && !out.is_empty() {
            out.insert(0, Line::default());
        }
        self.rows = all;
        self.done = end;
        self.any |= !out.is_empty();
        out
    }

    /// The finished rows not yet in the scrollback, at `width`.
    pub(crate) fn commit(&mut self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let (ready, starts) = if self.reasoning {
            let end = self.text.rfind('\n').map_or(0, |i| i + 1);
            (end.max(self.done), Vec::new())
        } else {
            scan(&self.text, self.done)
        };
        let mut out = Vec::new();
        for at in starts {
            out.extend(self.commit_to(at, width, theme));
            // A new block: the next group starts here.
            self.base = at;
            self.ctx.clear();
            self.sep = true;
            self.rows.clear();
        }
        if ready > self.done {
            out.extend(self.commit_to(ready, width, theme));
            let long = self.text[self.base..self.done].matches('\n').count() > CODE_GROUP;
            if long && !self.reasoning && !context_at(&self.text, self.done).0.is_empty() {
                self.regroup();
            }
        }
        out
    }

    /// The finished rows not yet in the scrollback, at `width`.
    pub(crate) fn commit_rows(&mut self, width: usize, theme: &Theme) -> Option<Piece> {
        let continued = self.any;
        let rows = self.commit(width, theme);
        (!rows.is_empty()).then_some(Piece::Rows { rows, continued })
    }

    /// The rows of the part not committed yet, at `width`.
    pub(crate) fn live(&self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        if !self.has_live() {
            return Vec::new();
        }
        let blank = |rows: &mut Vec<Line<'static>>, sep: bool| {
            if sep && self.any && !rows.is_empty() {
                rows.insert(0, Line::default());
            }
        };
        if width == self.width || self.rows.is_empty() {
            let all = self.render(self.text.len(), width, theme);
            if all.starts_with(&self.rows) {
                let mut rows = all[self.rows.len()..].to_vec();
                blank(&mut rows, self.rows.is_empty() && self.sep);
                return rows;
            }
        }
        // Redrawn at another width, or the tail changes a committed row: the tail alone.
        let mut rest = self.clone();
        rest.regroup();
        let mut rows = rest.render(rest.text.len(), width, theme);
        blank(&mut rows, rest.sep);
        rows
    }

    /// Ends the answer: what is left of it for the scrollback (the whole answer when
    /// nothing of it was committed), and a fresh answer in its place.
    pub(crate) fn finish(&mut self) -> Option<Piece> {
        let done = std::mem::replace(
            self,
            Answer {
                generation: self.generation + 1,
                reasoning: self.reasoning,
                ..Answer::default()
            },
        );
        if !done.any {
            let text = done.text.trim_end();
            return (!text.is_empty()).then(|| match done.reasoning {
                true => Piece::Reasoning(text.to_string()),
                false => Piece::Assistant(text.to_string()),
            });
        }
        done.has_live().then(|| Piece::Rest(Box::new(done)))
    }

    /// The rows of a finished answer's last part (see `finish`) at `width`.
    pub(crate) fn rest(&self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let mut a = self.clone();
        let len = a.text.trim_end().len();
        a.text.truncate(len);
        if a.done >= len {
            return Vec::new();
        }
        a.commit_to(len, width, theme)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::tui::wrap::line_text;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(line_text).collect()
    }

    /// Streams `md` in pieces of `step` bytes, committing after each at the width
    /// `width(i)`; returns the scrollback rows and the last live rows seen.
    fn stream(md: &str, step: usize, width: impl Fn(usize) -> usize) -> (Vec<String>, Vec<String>) {
        stream_into(Answer::default(), md, step, width)
    }

    fn stream_into(
        mut a: Answer,
        md: &str,
        step: usize,
        width: impl Fn(usize) -> usize,
    ) -> (Vec<String>, Vec<String>) {
        let theme = Theme::new(false);
        let mut out = Vec::new();
        let mut live = Vec::new();
        let mut i = 0;
        let mut at = 0;
        while at < md.len() {
            let mut end = (at + step).min(md.len());
            while !md.is_char_boundary(end) {
                end += 1;
            }
            a.push(&md[at..end]);
            at = end;
            out.extend(texts(&a.commit(width(i), &theme)));
            live = texts(&a.live(width(i), &theme));
            i += 1;
        }
        let last = width(i);
        match a.finish() {
            Some(Piece::Rest(rest)) => out.extend(texts(&rest.rest(last, &theme))),
            Some(Piece::Assistant(text)) => out.extend(texts(&markdown::render(&text, last, &theme))),
            Some(Piece::Reasoning(text)) => out.extend(texts(&reasoning_lines(&text, last, &theme, true))),
            other => assert!(other.is_none(), "{other:?}"),
        }
        (out, live)
    }

    fn whole(md: &str, width: usize) -> Vec<String> {
        texts(&markdown::render(md.trim_end(), width, &Theme::new(false)))
    }

    const DOCS: [&str; 8] = [
        "Paragraph 1: one\nParagraph 2: two\nParagraph 3: three\n\nNext paragraph.\n",
        "# Title\n\nIntro line\n\n- item one\n- item two\n  continued\n- item three\n\nAfter the list.",
        "Code:\n\n```rust\nfn main() {\n    let x = 1;\n\n    println!(\"{x}\");\n}\n```\n\nDone.",
        "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nBelow the table.\n",
        "> quoted line\n> second\n\n1. first\n2. second\n   continued\n3. third\n\nEnd.",
        "Setext title\n============\nText under it.\n\n---\n\nAfter the rule.",
        "Steps:\n\n1. **Step one**: do it\n\n2. **Step two**: then this\n\n   with details\n\n3. Done\n\nBye.",
        "Nested:\n\n- outer\n  - inner one\n  - inner two\n- outer two\n\n~~~\ncode ``` here\n~~~\nend",
    ];

    /// Markdown that reads earlier lines again once later ones come (a list turned loose by
    /// a blank line, emphasis over two lines, a paragraph turned heading): the scrollback
    /// keeps those rows as drawn, and still holds every word once.
    const REREAD: [&str; 3] = [
        "1. first\n2. second\n\n   inner paragraph\n3. third\n\nEnd.",
        "Some **bold\ntext** here\nand more",
        "Para one\nPara two\n---\nafter",
    ];

    #[test]
    fn streamed_in_any_pieces_the_scrollback_gets_the_whole_rendering_once() {
        for md in DOCS {
            for step in [1, 3, 7, 64, 1000] {
                let (out, _) = stream(md, step, |_| 40);
                assert_eq!(out, whole(md, 40), "{md:?} in pieces of {step}");
            }
        }
    }

    #[test]
    fn a_long_code_block_streams_in_groups_and_looks_as_the_whole() {
        let code: String = (1..=450).map(|i| format!("    line({i});\n")).collect();
        let md = format!("Code:\n\n```\n{code}```\n\nDone.");
        let (out, _) = stream(&md, 97, |_| 40);
        assert_eq!(out, whole(&md, 40));
        let mut a = Answer::default();
        a.push(&md[..md.find("line(300)").unwrap()]);
        a.commit(40, &Theme::new(false));
        assert_eq!(a.ctx, "```\n", "a new group inside the block, from its fence");
        assert!(a.rows.is_empty() && a.base == a.done);
    }

    #[test]
    fn finished_lines_leave_the_live_part_as_they_finish() {
        let theme = Theme::new(false);
        let mut a = Answer::default();
        a.push("Para 1\nPara 2\nPa");
        assert_eq!(texts(&a.commit(40, &theme)), ["Para 1", "Para 2"]);
        assert_eq!(texts(&a.live(40, &theme)), ["Pa"]);
        // A line that may turn the one above into a heading holds it back.
        a.push("ra 3\n--");
        assert!(a.commit(40, &theme).is_empty());
        a.push("-\nNext\n");
        assert_eq!(texts(&a.commit(40, &theme)), ["Para 3"]);
        assert!(
            a.commit(40, &theme).is_empty(),
            "the line after `Next` has not begun"
        );
        a.push("x");
        assert_eq!(texts(&a.commit(40, &theme)), ["", "Next"]);
        // A table is held until the blank line after it; a `|` in a sentence holds nothing.
        a.push("\na | b in the shell\nmore");
        assert_eq!(texts(&a.commit(40, &theme)), ["x", "a | b in the shell"]);
        a.push("\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(texts(&a.commit(40, &theme)), ["more"]);
        a.push("\nafter");
        assert_eq!(texts(&a.commit(40, &theme)), ["", "a │ b", "──┼──", "1 │ 2"]);
        assert_eq!(texts(&a.live(40, &theme)), ["", "after"]);
    }

    #[test]
    fn a_width_change_mid_answer_repeats_and_loses_nothing() {
        for md in DOCS.iter().chain(&REREAD) {
            for step in [1, 5, 64] {
                // Wide for the first pieces, then narrow, then wide again.
                let (out, _) = stream(md, step, |i| match i {
                    0..4 => 60,
                    4..9 => 24,
                    _ => 50,
                });
                let squash = |rows: &[String]| -> String {
                    rows.concat()
                        .chars()
                        .filter(|c| !c.is_whitespace() && !"•◦▪".contains(*c))
                        .collect()
                };
                assert_eq!(
                    squash(&out),
                    squash(&whole(md, 60)),
                    "{md:?} in pieces of {step}:\n{out:#?}"
                );
            }
        }
    }

    #[test]
    fn code_after_a_width_change_stays_code() {
        let theme = Theme::new(false);
        let mut a = Answer::default();
        a.push("```\nfirst()\n    indented()\n");
        assert_eq!(texts(&a.commit(60, &theme)), ["first()", "    indented()"]);
        a.push("    more()\n```\nafter\n");
        // Narrower now: the block goes on from its fence, its indentation kept.
        let rows = texts(&a.commit(30, &theme));
        assert_eq!(rows[0], "    more()");
        let rest = match a.finish() {
            Some(Piece::Rest(r)) => texts(&r.rest(30, &theme)),
            other => panic!("{other:?}"),
        };
        assert_eq!([rows, rest].concat(), ["    more()", "", "after"]);
    }

    #[test]
    fn an_answer_never_committed_is_flushed_whole() {
        let mut a = Answer::default();
        a.push("short answer\n\n");
        assert_eq!(a.finish(), Some(Piece::Assistant("short answer".into())));
        assert!(!a.has_live() && a.finish().is_none());
    }

    #[test]
    fn reasoning_lines_go_up_as_they_end_and_look_as_the_whole() {
        let theme = Theme::new(false);
        let md = "First, read the code.\nThen think about why it fails,\n\nand what a fix looks like.";
        let whole = texts(&reasoning_lines(md, 24, &theme, true));
        for step in [1, 4, 100] {
            let (out, _) = stream_into(Answer::reasoning(), md, step, |_| 24);
            assert_eq!(out, whole, "in pieces of {step}");
        }
        let mut a = Answer::reasoning();
        a.push("First line\nsecond li");
        assert_eq!(texts(&a.commit(40, &theme)), ["∴ First line"]);
        assert_eq!(texts(&a.live(40, &theme)), ["  second li"]);
        // Narrower: what follows goes on, indented under the mark, nothing repeated.
        a.push("ne\nthird");
        assert_eq!(texts(&a.commit(12, &theme)), ["  second", "  line"]);
        assert_eq!(texts(&a.live(12, &theme)), ["  third"]);
    }
}
