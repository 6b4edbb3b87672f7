//! Syntax highlighting of fenced code blocks with syntect. The default syntax and theme
//! sets are loaded lazily, once per process; without colour, code stays plain.

use std::sync::OnceLock;

use ratatui::style::{Color, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme as SynTheme, ThemeSet};
use syntect::parsing::SyntaxSet;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> Option<&'static SynTheme> {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
        .themes
        .get("base16-ocean.dark")
}

/// Highlights `code` as `lang` (a fence info string such as `rust` or `py`), one span list
/// per line. Unknown languages and `color == false` give plain lines in `fallback`.
pub(crate) fn highlight(code: &str, lang: &str, color: bool, fallback: Style) -> Vec<Vec<Span<'static>>> {
    let plain = || {
        code.lines()
            .map(|l| vec![Span::styled(l.to_string(), fallback)])
            .collect()
    };
    let token = lang.split([',', ' ']).next().unwrap_or("").trim();
    if !color || token.is_empty() {
        return plain();
    }
    let set = syntaxes();
    let (Some(syntax), Some(theme)) = (set.find_syntax_by_token(token), theme()) else {
        return plain();
    };
    let mut h = HighlightLines::new(syntax, theme);
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let Ok(ranges) = h.highlight_line(line, set) else {
            return plain();
        };
        let spans = ranges
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']);
                (!text.is_empty()).then(|| {
                    let c = style.foreground;
                    Span::styled(text.to_string(), Style::new().fg(Color::Rgb(c.r, c.g, c.b)))
                })
            })
            .collect();
        out.push(spans);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_language_gets_colours_and_unknown_stays_plain() {
        let lines = highlight("fn main() {}\nlet x = 1;\n", "rust", true, Style::new());
        assert_eq!(lines.len(), 2);
        assert!(lines[0].len() > 1, "rust is split into tokens");
        assert!(lines[0].iter().all(|s| s.style.fg.is_some()));
        let text: String = lines[0].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "fn main() {}");
        let plain = highlight("x\ny", "no-such-lang", true, Style::new());
        assert_eq!(plain.len(), 2);
        assert_eq!(plain[0][0].style, Style::new());
        let mono = highlight("fn main() {}", "rust", false, Style::new());
        assert_eq!(mono[0].len(), 1);
    }
}
