//! Markdown to wrapped, styled lines: headings, emphasis, lists, quotes, links, inline code,
//! tables and fenced code blocks (highlighted). Pure: text and width in, lines out.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight;
use super::theme::Theme;
use super::wrap::{self, Mode, str_width};

/// Renders markdown `text` to lines no wider than `width`.
pub(crate) fn render(text: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        width: width.max(1),
        out: Vec::new(),
        inline: Vec::new(),
        styles: vec![Style::new()],
        containers: Vec::new(),
        code: None,
        links: Vec::new(),
        pending_blank: false,
        table_row: Vec::new(),
        table: None,
    };
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let text = output_blocks(text);
    for ev in Parser::new_ext(&text, opts) {
        r.event(ev);
    }
    r.flush();
    r.out
}

enum Container {
    Quote,
    List { next: Option<u64> },
    Item { marker: String, used: bool },
}

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    out: Vec<Line<'static>>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    code: Option<(String, String)>,
    links: Vec<(String, usize)>,
    pending_blank: bool,
    table_row: Vec<String>,
    /// The table being read: column alignments and rows (the first is the header).
    table: Option<(Vec<pulldown_cmark::Alignment>, Vec<Vec<String>>)>,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    /// Prefixes for the next line: (first line, continuation lines).
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        let quote = self.theme.quote.remove_modifier(Modifier::ITALIC);
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    first.push(Span::styled("│ ", quote));
                    rest.push(Span::styled("│ ", quote));
                }
                Container::List { .. } => {}
                Container::Item { marker, used } => {
                    let pad = " ".repeat(str_width(marker));
                    if *used {
                        first.push(Span::raw(pad.clone()));
                    } else {
                        first.push(Span::styled(marker.clone(), self.theme.accent));
                        *used = true;
                    }
                    rest.push(Span::raw(pad));
                }
            }
        }
        (first, rest)
    }

    fn blank(&mut self) {
        let quote = self.theme.quote.remove_modifier(Modifier::ITALIC);
        let bars = self
            .containers
            .iter()
            .filter(|c| matches!(c, Container::Quote))
            .map(|_| Span::styled("│", quote))
            .collect::<Vec<_>>();
        self.out.push(Line::from(bars));
    }

    fn block_start(&mut self) {
        self.flush();
        if self.pending_blank && !self.out.is_empty() {
            self.blank();
        }
        self.pending_blank = false;
    }

    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes();
        self.out
            .extend(wrap::wrap(&spans, self.width, &first, &rest, Mode::Words));
    }

    fn text(&mut self, t: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(t);
            return;
        }
        let t = wrap::sanitize(t).into_owned();
        self.inline.push(Span::styled(t, self.style()));
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let t = wrap::sanitize(&t).into_owned();
                self.inline.push(Span::styled(t, self.theme.code));
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => self.text(&t),
            Event::Html(t) | Event::InlineHtml(t) => self.text(t.trim_end_matches('\n')),
            Event::FootnoteReference(t) => self.text(&format!("[^{t}]")),
            // A single newline in the model's text stays a line break, as in other
            // terminal agents (models write line-per-item text without list markers).
            Event::SoftBreak => self.flush(),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_start();
                let n = self.width.min(40);
                self.out.push(Line::styled("─".repeat(n), self.theme.dim));
                self.pending_blank = true;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                let theme = self.theme.heading;
                self.push_style(|_| match level {
                    HeadingLevel::H1 => theme.add_modifier(Modifier::UNDERLINED),
                    _ => theme,
                });
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.containers.push(Container::Quote);
                let q = self.theme.quote;
                self.push_style(|s| s.patch(q));
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                let nested = self
                    .containers
                    .iter()
                    .any(|c| matches!(c, Container::Item { .. }));
                if nested {
                    self.flush();
                    self.pending_blank = false;
                } else {
                    self.block_start();
                }
                self.containers.push(Container::List { next: start });
            }
            Tag::Item => {
                self.flush();
                let depth = self
                    .containers
                    .iter()
                    .filter(|c| matches!(c, Container::List { .. }))
                    .count();
                let marker = match self.containers.last_mut() {
                    Some(Container::List { next: Some(n) }) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => match depth {
                        0 | 1 => "• ".to_string(),
                        2 => "◦ ".to_string(),
                        _ => "▪ ".to_string(),
                    },
                };
                self.containers.push(Container::Item { marker, used: false });
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                let at = self.inline.len();
                self.links.push((dest_url.to_string(), at));
                let l = self.theme.link;
                self.push_style(|s| s.patch(l));
            }
            Tag::Table(align) => {
                self.block_start();
                self.table = Some((align, Vec::new()));
            }
            Tag::TableHead | Tag::TableRow => self.table_row.clear(),
            Tag::TableCell => self.flush_cell_start(),
            _ => {}
        }
    }

    fn flush_cell_start(&mut self) {
        // Cells collect their inline text; TableCell end moves it to the row.
        self.inline.clear();
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.pending_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
                self.pending_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.pop_style();
                self.containers.pop();
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::List(_) => {
                self.flush();
                self.containers.pop();
                let nested = self
                    .containers
                    .iter()
                    .any(|c| matches!(c, Container::Item { .. }));
                self.pending_blank = !nested;
            }
            TagEnd::Item => {
                self.flush();
                if let Some(Container::Item { used: false, .. }) = self.containers.last() {
                    // An empty item still shows its marker.
                    let (first, _) = self.prefixes();
                    self.out.push(Line::from(first));
                }
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                self.pop_style();
                if let Some((url, at)) = self.links.pop() {
                    let shown: String = self.inline[at.min(self.inline.len())..]
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    if !url.is_empty() && shown != url && !url.starts_with('#') {
                        let url = url.strip_prefix("mailto:").unwrap_or(&url).to_string();
                        if shown != url {
                            self.inline
                                .push(Span::styled(format!(" ({url})"), self.theme.dim));
                        }
                    }
                }
            }
            TagEnd::TableCell => {
                let cell: String = self.inline.drain(..).map(|s| s.content.into_owned()).collect();
                self.table_row.push(cell);
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                let row = std::mem::take(&mut self.table_row);
                if let Some((_, rows)) = &mut self.table {
                    rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some((align, rows)) = self.table.take() {
                    self.end_table(&align, rows);
                }
                self.pending_blank = true;
            }
            _ => {}
        }
    }

    /// A table with its columns aligned (`│` between them, a rule under the header). When
    /// it cannot fit the width, each row is one wrapped line instead.
    fn end_table(&mut self, align: &[pulldown_cmark::Alignment], rows: Vec<Vec<String>>) {
        use pulldown_cmark::Alignment;
        let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; cols];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(str_width(cell));
            }
        }
        let (first, _) = self.prefixes();
        let indent: usize = first.iter().map(|s| str_width(&s.content)).sum();
        let total = indent + widths.iter().sum::<usize>() + 3 * cols.saturating_sub(1);
        let dim = self.theme.dim;
        for (i, row) in rows.iter().enumerate() {
            let style = if i == 0 { self.theme.bold } else { Style::new() };
            if total > self.width {
                self.inline.push(Span::styled(row.join(" │ "), style));
                self.flush();
                continue;
            }
            let mut spans: Vec<Span<'static>> = Vec::new();
            for (c, w) in widths.iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(" │ ", dim));
                }
                let cell = row.get(c).map_or("", String::as_str);
                let pad = w - str_width(cell);
                let (l, r) = match align.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                let last = c + 1 == cols;
                let r = if last { 0 } else { r };
                spans.push(Span::styled(
                    format!("{}{cell}{}", " ".repeat(l), " ".repeat(r)),
                    style,
                ));
            }
            let (first, _) = self.prefixes();
            let mut line = first;
            line.extend(spans);
            self.out.push(Line::from(line));
            if i == 0 && rows.len() > 1 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let (first, _) = self.prefixes();
                let mut line = first;
                line.push(Span::styled(rule.join("─┼─"), dim));
                self.out.push(Line::from(line));
            }
        }
    }

    fn end_code(&mut self) {
        let Some((lang, code)) = self.code.take() else {
            return;
        };
        let (first, rest) = self.prefixes();
        let lines = highlight::highlight(&code, &lang, self.theme.color, self.theme.code);
        for (i, spans) in lines.iter().enumerate() {
            let f = if i == 0 { &first } else { &rest };
            self.out
                .extend(wrap::wrap(spans, self.width, f, &rest, Mode::Chars));
        }
        self.pending_blank = true;
    }
}

/// A `<||SYSTEM.OUTPUT>…<SYSTEM.OUTPUT||>` block the model wrote itself (imitating the
/// text protocol's output) shown as a code block, never as raw tags. Tags inside a code
/// block the model wrote are left as they are.
fn output_blocks(text: &str) -> std::borrow::Cow<'_, str> {
    use crate::provider::text_protocol::tags::{OUTPUT_CLOSE, OUTPUT_OPEN};
    if !text.contains("SYSTEM.OUTPUT") {
        return std::borrow::Cow::Borrowed(text);
    }
    let (mut out, mut fence, mut block) = (String::with_capacity(text.len() + 16), false, false);
    for line in text.split_inclusive('\n') {
        if !block && line.trim_start().starts_with("```") {
            fence = !fence;
        }
        if fence {
            out.push_str(line);
            continue;
        }
        let mut line = line.to_string();
        if !block && line.contains(OUTPUT_OPEN) {
            line = line.replacen(OUTPUT_OPEN, "\n```\n", 1);
            block = true;
        }
        if block && line.contains(OUTPUT_CLOSE) {
            line = line.replacen(OUTPUT_CLOSE, "\n```\n", 1);
            block = false;
        }
        out.push_str(&line);
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::tui::wrap::line_text;

    fn text_of(md: &str, width: usize) -> Vec<String> {
        render(md, width, &Theme::new(false))
            .iter()
            .map(line_text)
            .collect()
    }

    #[test]
    fn blocks_are_separated_and_lists_marked() {
        let md =
            "# Title\n\nSome *em* and **strong** text.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n";
        assert_eq!(
            text_of(md, 40),
            [
                "Title",
                "",
                "Some em and strong text.",
                "",
                "• one",
                "• two",
                "  ◦ nested",
                "",
                "1. first",
                "2. second"
            ]
        );
    }

    #[test]
    fn a_single_newline_starts_a_new_line() {
        assert_eq!(
            text_of("Lorem ipsum sit amet\nParagraph 1: first\n- item\n  more", 40),
            [
                "Lorem ipsum sit amet",
                "Paragraph 1: first",
                "",
                "• item",
                "  more"
            ]
        );
    }

    #[test]
    fn an_output_block_the_model_wrote_is_shown_as_code_without_its_tags() {
        let t = text_of("Ran it:\n<||SYSTEM.OUTPUT>\na.rs\n<SYSTEM.OUTPUT||>\nDone.", 40);
        assert!(t.iter().all(|l| !l.contains("SYSTEM.OUTPUT")), "{t:?}");
        assert!(
            t.contains(&"a.rs".to_string()) && t.contains(&"Done.".to_string()),
            "{t:?}"
        );
        // Quoted in a code block (explaining the protocol): left as written.
        let t = text_of("```\n<||SYSTEM.OUTPUT>\n```", 40);
        assert_eq!(t, ["<||SYSTEM.OUTPUT>"]);
    }

    #[test]
    fn list_items_wrap_with_hanging_indent() {
        assert_eq!(
            text_of("- alpha beta gamma delta", 12),
            ["• alpha beta", "  gamma", "  delta"]
        );
    }

    #[test]
    fn quotes_links_and_inline_code() {
        let md = "> quoted words here\n\nsee [docs](https://x.dev) and `cargo test`";
        assert_eq!(
            text_of(md, 40),
            [
                "│ quoted words here",
                "",
                "see docs (https://x.dev) and cargo test"
            ]
        );
        let lines = render("use `x`", 40, &Theme::new(true));
        assert_eq!(lines[0].spans.last().unwrap().style, Theme::new(true).code);
    }

    #[test]
    fn code_blocks_keep_spacing_and_highlight() {
        let md = "```rust\nfn main() {\n    println!(\"hi\");\n}\n```\nafter";
        let t = text_of(md, 40);
        assert_eq!(t, ["fn main() {", "    println!(\"hi\");", "}", "", "after"]);
        let coloured = render(md, 40, &Theme::new(true));
        assert!(coloured[0].spans.len() > 1);
    }

    #[test]
    fn unfinished_code_fence_still_renders() {
        assert_eq!(text_of("```py\nx = 1\n", 40), ["x = 1"]);
    }

    #[test]
    fn wide_text_wraps_to_width() {
        let md = "中文字符测试一下换行 and 🎉🎉🎉 party";
        for line in render(md, 10, &Theme::new(false)) {
            assert!(wrap::line_width(&line) <= 10, "{:?}", line_text(&line));
        }
    }

    #[test]
    fn tables_are_aligned() {
        let md = "| name | n | note |\n|:---|---:|:---:|\n| alpha | 1 | x |\n| b | 12345 | wide |\n";
        assert_eq!(
            text_of(md, 40),
            [
                "name  │     n │ note",
                "──────┼───────┼─────",
                "alpha │     1 │  x",
                "b     │ 12345 │ wide"
            ]
        );
        // Too wide for the screen: one wrapped line per row.
        let t = text_of(md, 12);
        assert!(t.iter().all(|l| str_width(l) <= 12), "{t:?}");
        assert!(t.join(" ").contains("alpha │ 1 │ x"), "{t:?}");
    }

    #[test]
    fn strikethrough_is_crossed_out() {
        for md in ["~~gone~~ kept", "~gone~ kept"] {
            let lines = render(md, 40, &Theme::new(true));
            let gone = lines[0].spans.iter().find(|s| s.content == "gone").unwrap();
            assert!(gone.style.add_modifier.contains(Modifier::CROSSED_OUT), "{md}");
            let kept = lines[0]
                .spans
                .iter()
                .find(|s| s.content.contains("kept"))
                .unwrap();
            assert!(!kept.style.add_modifier.contains(Modifier::CROSSED_OUT), "{md}");
        }
    }
}
