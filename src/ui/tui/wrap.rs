//! Wrapping styled text to a column width: word wrap with hanging prefixes, display widths
//! from `unicode-width` (wide CJK and emoji take two columns), and terminal-safe text.
//! Pure functions; knows nothing of markdown or the app.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Display width of one char (control chars count as zero).
pub(crate) fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Display width of a string.
pub(crate) fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Makes text safe to put on a terminal: tabs become spaces, other control characters
/// (escape sequences included) and bidirectional controls become visible symbols
/// (`crate::text::visible`). Newlines are kept.
pub(crate) fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    let shown = crate::text::visible(text);
    if !shown.contains('\t') {
        return shown;
    }
    std::borrow::Cow::Owned(shown.replace('\t', "    "))
}

/// How a logical line is broken when it is wider than the width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Break at spaces; words longer than a line are split.
    Words,
    /// Break anywhere (code, tool output): keeps every character, including spaces.
    Chars,
}

/// Wraps one logical line made of `spans` to `width` columns. `first` prefixes the first
/// output line and `rest` every following one (hanging indent). Always returns at least one
/// line.
pub(crate) fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
    mode: Mode,
) -> Vec<Line<'static>> {
    let width = width.max(1);
    let first_w: usize = first.iter().map(|s| str_width(&s.content)).sum();
    let rest_w: usize = rest.iter().map(|s| str_width(&s.content)).sum();
    let mut out: Vec<Line<'static>> = Vec::new();
    // The current line as (char, style) cells, its width and the last break opportunity
    // (index just after a space).
    let mut cur: Vec<(char, Style)> = Vec::new();
    let mut cur_w = 0usize;
    let mut brk: Option<usize> = None;
    let avail = |n: usize| width.saturating_sub(if n == 0 { first_w } else { rest_w }).max(1);

    for span in spans {
        for c in span.content.chars() {
            let w = char_width(c);
            if w > 0 && cur_w + w > avail(out.len()) && !cur.is_empty() {
                if mode == Mode::Words && c == ' ' {
                    // A space at the end of a line is dropped.
                    emit(&mut out, &mut cur, first, rest);
                    cur_w = 0;
                    brk = None;
                    continue;
                }
                match brk.filter(|_| mode == Mode::Words) {
                    Some(at) if at <= cur.len() => {
                        let tail = cur.split_off(at);
                        trim_end(&mut cur);
                        emit(&mut out, &mut cur, first, rest);
                        cur = tail;
                        cur_w = cur.iter().map(|(c, _)| char_width(*c)).sum();
                    }
                    _ => {
                        emit(&mut out, &mut cur, first, rest);
                        cur_w = 0;
                    }
                }
                brk = None;
            }
            if mode == Mode::Words && c == ' ' && cur.is_empty() && !out.is_empty() {
                continue; // no leading space on a wrapped line
            }
            cur.push((c, span.style));
            cur_w += w;
            if mode == Mode::Words && c == ' ' {
                brk = Some(cur.len());
            }
        }
    }
    emit(&mut out, &mut cur, first, rest);
    out
}

/// Wraps plain text (which may hold newlines) in one style.
pub(crate) fn wrap_text(
    text: &str,
    style: Style,
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
    mode: Mode,
) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let span = [Span::styled(line, style)];
        out.extend(wrap(&span, width, if i == 0 { first } else { rest }, rest, mode));
    }
    out
}

fn trim_end(cur: &mut Vec<(char, Style)>) {
    while cur.last().is_some_and(|(c, _)| *c == ' ') {
        cur.pop();
    }
}

fn emit(
    out: &mut Vec<Line<'static>>,
    cur: &mut Vec<(char, Style)>,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) {
    let prefix = if out.is_empty() { first } else { rest };
    let mut spans: Vec<Span<'static>> = prefix.to_vec();
    let mut run = String::new();
    let mut style: Option<Style> = None;
    for (c, s) in cur.drain(..) {
        if style != Some(s) {
            if let Some(st) = style
                && !run.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut run), st));
            }
            style = Some(s);
        }
        run.push(c);
    }
    if let Some(st) = style
        && !run.is_empty()
    {
        spans.push(Span::styled(run, st));
    }
    out.push(Line::from(spans));
}

/// Cuts a string to at most `width` columns, adding `…` when something was cut.
pub(crate) fn truncate(s: &str, width: usize) -> String {
    if str_width(s) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = char_width(c);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// The text of a line, for tests.
#[cfg(test)]
pub(crate) fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// Display width of a line.
#[cfg(test)]
pub(crate) fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| str_width(&s.content)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(line_text).collect()
    }

    fn plain(s: &str, w: usize) -> Vec<String> {
        texts(&wrap_text(s, Style::new(), w, &[], &[], Mode::Words))
    }

    #[test]
    fn words_wrap_at_spaces() {
        assert_eq!(plain("the quick brown fox", 10), ["the quick", "brown fox"]);
        assert_eq!(plain("", 10), [""]);
        assert_eq!(plain("a\nb", 10), ["a", "b"]);
    }

    #[test]
    fn long_words_are_split() {
        assert_eq!(plain("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
    }

    #[test]
    fn wide_chars_take_two_columns() {
        // Six CJK chars are 12 columns: at width 5, two per line (4 columns).
        let lines = plain("日本語テキスト", 5);
        assert_eq!(lines, ["日本", "語テ", "キス", "ト"]);
        for l in &lines {
            assert!(str_width(l) <= 5);
        }
    }

    #[test]
    fn emoji_wrap_by_display_width() {
        let lines = plain("🦀🦀🦀 ok 🦀🦀", 6);
        for l in &lines {
            assert!(str_width(l) <= 6, "{l:?} is too wide");
        }
        assert_eq!(lines.concat().replace(' ', ""), "🦀🦀🦀ok🦀🦀");
        // A zero-width joiner stays with the emoji before it.
        let family = "👩\u{200d}👧";
        let lines = plain(&format!("{family}{family}{family}"), 4);
        assert!(lines.iter().all(|l| !l.starts_with('\u{200d}')), "{lines:?}");
    }

    #[test]
    fn hanging_prefix_indents_continuations() {
        let first = [Span::raw("• ")];
        let rest = [Span::raw("  ")];
        let lines = texts(&wrap(
            &[Span::raw("one two three four")],
            10,
            &first,
            &rest,
            Mode::Words,
        ));
        assert_eq!(lines, ["• one two", "  three", "  four"]);
    }

    #[test]
    fn chars_mode_keeps_spaces() {
        let lines = texts(&wrap(&[Span::raw("ab  cd  ef")], 4, &[], &[], Mode::Chars));
        assert_eq!(lines, ["ab  ", "cd  ", "ef"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let spans = [
            Span::styled("bold ", Style::new().bold()),
            Span::raw("plain words"),
        ];
        let lines = wrap(&spans, 8, &[], &[], Mode::Words);
        assert_eq!(lines[0].spans[0].style, Style::new().bold());
        assert_eq!(texts(&lines), ["bold", "plain", "words"]);
    }

    #[test]
    fn control_chars_are_shown() {
        assert_eq!(sanitize("a\x1b[31mred\tx\r\n"), "a␛[31mred    x\n");
        assert_eq!(sanitize("\u{202E}abc"), "<U+202E>abc");
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("hi", 6), "hi");
    }
}
