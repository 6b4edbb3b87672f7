//! Small text helpers shared across the crate, and the one display function for text
//! ikigai does not control (`show`: `visible` for what is read, `exact` for what would run;
//! `json_visible` and `JsonVisible` for JSON): every front end and printing command puts
//! model-, server- and file-controlled text through it. Pure; prints nothing.

/// Characters of `text` once escaped into a JSON string.
pub fn wire_chars(text: &str) -> u64 {
    let escapes = text
        .bytes()
        .filter(|b| matches!(b, b'"' | b'\\' | b'\n' | b'\r' | b'\t'))
        .count();
    (text.len() + escapes) as u64
}

/// At most `max` bytes of `s`, cut at a char boundary (for quoting or capping text).
pub fn shorten(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether `c` is a bidirectional embedding, override or isolate control (U+202A–U+202E,
/// U+2066–U+2069): it reorders the text after it, so it can make shown text differ from
/// what it is.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// How much `show` makes visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strictness {
    /// Anything that could act on a terminal, reorder or hide text: control characters
    /// (but `\n`, `\t`), bidirectional controls and marks, zero-width and other format
    /// characters, line and paragraph separators. The joiners that shape emoji and
    /// scripts (ZWJ, ZWNJ) and the soft hyphen stay.
    Text,
    /// `Text`, and every other character a reader cannot see or tell from a space: the
    /// joiners, the soft hyphen, variation selectors, fillers, blank braille, spaces other
    /// than U+0020, and every `\r` (a `\r\n` line end too). For what will run or be
    /// written (an approval question).
    Exact,
}

/// Format characters (Unicode category Cf): they are not drawn, but change how what
/// follows reads (bidirectional marks and controls) or hide text (tags, zero-width space).
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{0600}'..='\u{0605}' | '\u{061C}' | '\u{06DD}' | '\u{070F}'
        | '\u{0890}'..='\u{0891}' | '\u{08E2}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{110BD}' | '\u{110CD}'
        | '\u{13430}'..='\u{1343F}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0001}' | '\u{E0020}'..='\u{E007F}')
}

/// Characters a reader cannot see, or cannot tell from a space, that are not format
/// characters: non-breaking and other wide or narrow spaces, the combining grapheme
/// joiner, Hangul and Khmer fillers, Mongolian and other variation selectors, blank braille.
fn is_blank_lookalike(c: char) -> bool {
    matches!(c,
        '\u{00A0}' | '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{1680}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180D}' | '\u{180F}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}'
        | '\u{2800}' | '\u{3000}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FFA0}'
        | '\u{E0100}'..='\u{E01EF}')
}

/// Whether `show` replaces `c` at `strictness`.
pub fn is_hidden(c: char, strictness: Strictness) -> bool {
    if c.is_control() {
        return c != '\n' && c != '\t';
    }
    match strictness {
        Strictness::Text => {
            (is_format(c) && !matches!(c, '\u{00AD}' | '\u{200C}' | '\u{200D}'))
                || matches!(c, '\u{2028}' | '\u{2029}')
        }
        Strictness::Exact => is_format(c) || is_blank_lookalike(c) || matches!(c, '\u{2028}' | '\u{2029}'),
    }
}

/// Text made safe to show on a terminal, with nothing hidden: control characters other
/// than `\n` and `\t` become visible symbols (ESC is `␛`, BEL `␇`, DEL `␡`; C1 controls
/// and bidirectional controls read `<U+009B>`, `<U+202E>`), so an escape sequence can
/// neither act on the terminal nor vanish; the `\r` of a `\r\n` line end is dropped.
/// `show(text, Strictness::Text)`: the one function every front end and printing
/// command puts model-, server- and file-controlled text through.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    show(text, Strictness::Text)
}

/// `show(text, Strictness::Exact)`: what will run or be written, every character a
/// reader could miss shown (an approval question).
pub fn exact(text: &str) -> std::borrow::Cow<'_, str> {
    show(text, Strictness::Exact)
}

/// The one display function for text ikigai does not control: every character
/// `is_hidden` at `strictness` becomes visible (C0 controls as their control pictures,
/// `␛`, `␍`; DEL as `␡`; any other as `<U+XXXX>`). `\n` and `\t` pass; so does the `\r`
/// of a `\r\n` line end, which is dropped, except at `Strictness::Exact`.
pub fn show(text: &str, strictness: Strictness) -> std::borrow::Cow<'_, str> {
    let suspicious = text
        .bytes()
        .any(|b| (b < 0x20 && b != b'\n' && b != b'\t') || b >= 0x7f);
    if !suspicious || !text.chars().any(|c| is_hidden(c, strictness)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if strictness == Strictness::Text && chars.peek() == Some(&'\n') => {}
            c if (c as u32) < 0x20 && is_hidden(c, strictness) => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            c if is_hidden(c, strictness) => {
                use std::fmt::Write;
                let _ = write!(out, "<U+{:04X}>", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// JSON text with the characters a terminal could act on escaped as `\uXXXX` (DEL, C1
/// controls, bidirectional and other format characters; serde_json already escapes C0):
/// the same JSON value, safe to print. Such characters only occur inside strings, where
/// the escape is valid.
pub fn json_visible(json: &str) -> std::borrow::Cow<'_, str> {
    // serde_json escapes C0; everything else `visible` would show is escaped here.
    let escape = |c: char| c >= '\u{7f}' && is_hidden(c, Strictness::Text);
    if json.is_ascii() && !json.contains('\u{7f}') || !json.chars().any(escape) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escape(c) {
            // Characters past U+FFFF (tags) are written as their UTF-16 surrogate pair.
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A compact `serde_json` formatter whose strings get `json_visible`'s escapes as they are
/// written: JSON lines (`--json`) that keep every value and that no terminal acts on.
pub struct JsonVisible;

impl serde_json::ser::Formatter for JsonVisible {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        writer.write_all(json_visible(fragment).as_bytes())
    }
}

/// Deepest nesting of arrays and objects ikigai accepts in JSON a model wrote (tool-call
/// arguments, results sent back as JSON). Parsers that recurse overflow the stack on
/// deeper text: sonic-rs (request bodies) aborted ikigai on arguments nested 100,000 deep,
/// and 64 levels overflowed a debug build's 2 MiB thread; vendors and local servers parse
/// arguments too. Deeper text is treated as not JSON, in every wire format.
const JSON_DEPTH_MAX: usize = 32;

/// Whether no array or object in the JSON `text` opens more than `JSON_DEPTH_MAX` deep
/// (brackets inside strings do not count). Only a guard for a parse that follows: it
/// checks nothing else, and it never recurses.
pub fn json_depth_within(text: &str) -> bool {
    depth_within(text, JSON_DEPTH_MAX)
}

/// `json_depth_within` for any limit.
fn depth_within(text: &str, max: usize) -> bool {
    // No more opening brackets than the limit cannot nest deeper: the length settles
    // short texts (most arguments) at once, a count the compiler vectorises nearly all
    // the others (request bodies check every tool result this way), without the
    // byte-by-byte walk below.
    if text.len() <= max || opening_brackets(text.as_bytes(), max) <= max {
        return true;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// How many `[` and `{` `bytes` holds, counted up to just past `max`. `b | 0x20 == b'{'`
/// holds for exactly those two bytes (0x5b, 0x7b); counting into a byte per 255-byte
/// chunk lets the loop run 32 bytes at a time.
fn opening_brackets(bytes: &[u8], max: usize) -> usize {
    let mut n = 0;
    for chunk in bytes.chunks(255) {
        n += usize::from(chunk.iter().fold(0u8, |acc, &b| acc + u8::from(b | 0x20 == b'{')));
        if n > max {
            break;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    #[test]
    fn opening_brackets_are_counted_exactly() {
        let text: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let want = text.iter().filter(|&&b| b == b'[' || b == b'{').count();
        assert_eq!(super::opening_brackets(&text, usize::MAX), want);
        assert_eq!(super::opening_brackets(&[b'['; 600], 10), 255);
    }

    #[test]
    fn json_depth_counts_brackets_outside_strings_only() {
        use super::{depth_within, json_depth_within};
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(json_depth_within(&nest(32)));
        assert!(!json_depth_within(&nest(33)));
        assert!(!json_depth_within(&format!("{{\"a\":{}}}", nest(32))));
        // Brackets in strings, escaped quotes included, are text.
        let quoted = format!("{{\"s\":\"\\\"{}\",\"t\":[1]}}", "[{".repeat(100));
        assert!(depth_within(&quoted, 2));
        assert!(depth_within("", 0) && depth_within("1", 0));
        assert!(!json_depth_within(&nest(100_000)));
    }

    #[test]
    fn json_keeps_its_value_but_not_terminal_controls() {
        let v = serde_json::json!({"d": "a\u{1b}[2J b\u{202E}c\u{9b}d\u{7f} é"});
        let text = serde_json::to_string(&v).unwrap();
        let safe = super::json_visible(&text);
        assert!(
            !safe.chars().any(|c| c.is_control() || super::is_bidi_control(c)),
            "{safe}"
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
    }

    #[test]
    fn control_and_bidi_characters_become_visible() {
        use super::visible;
        assert_eq!(visible("plain\ttext\nnext"), "plain\ttext\nnext");
        assert_eq!(visible("é ü 日本"), "é ü 日本");
        assert_eq!(
            visible("\x1b]0;T\x07 \x1b[2J x\r\ny\rz\x7f"),
            "␛]0;T␇ ␛[2J x\ny␍z␡"
        );
        assert_eq!(visible("a\u{9b}b"), "a<U+009B>b");
        assert_eq!(
            visible("x\u{202E}gnp.exe\u{2066}\u{2069}"),
            "x<U+202E>gnp.exe<U+2066><U+2069>"
        );
        assert!(matches!(visible("ok"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn every_invisible_class_is_shown_and_exact_shows_more() {
        use super::{Strictness, exact, is_hidden, visible};
        // (text, what `visible` shows, what `exact` shows)
        let table = [
            ("a\u{200B}b", "a<U+200B>b", "a<U+200B>b"), // zero-width space
            ("a\u{2060}b\u{FEFF}", "a<U+2060>b<U+FEFF>", "a<U+2060>b<U+FEFF>"), // joiners of words, BOM
            (
                "\u{200F}x\u{200E}\u{061C}",
                "<U+200F>x<U+200E><U+061C>",
                "<U+200F>x<U+200E><U+061C>",
            ),
            ("x\u{2028}y\u{2029}", "x<U+2028>y<U+2029>", "x<U+2028>y<U+2029>"),
            ("\u{E0041}\u{E0042}", "<U+E0041><U+E0042>", "<U+E0041><U+E0042>"), // tag smuggling
            ("ls\rrm -rf x", "ls␍rm -rf x", "ls␍rm -rf x"),
            ("a\r\n", "a\n", "a␍\n"),
            ("\u{0}\u{1b}[2J", "␀␛[2J", "␀␛[2J"),
            // Kept for reading, shown when exact.
            ("👩\u{200D}👧", "👩\u{200D}👧", "👩<U+200D>👧"),
            ("ls\u{00A0}-la", "ls\u{00A0}-la", "ls<U+00A0>-la"),
            (
                "a\u{3000}b\u{2800}c",
                "a\u{3000}b\u{2800}c",
                "a<U+3000>b<U+2800>c",
            ),
            (
                "x\u{FE0F}\u{115F}\u{00AD}",
                "x\u{FE0F}\u{115F}\u{00AD}",
                "x<U+FE0F><U+115F><U+00AD>",
            ),
            ("plain\ttext é 日本", "plain\ttext é 日本", "plain\ttext é 日本"),
        ];
        for (text, shown, exactly) in table {
            assert_eq!(visible(text), shown, "{text:?}");
            assert_eq!(exact(text), exactly, "{text:?}");
        }
        // Whatever is hidden at `Text` is hidden at `Exact` too, and nothing `Text` lets
        // through is a control or a bidirectional character.
        for c in (0..0x11_0000u32).filter_map(char::from_u32) {
            if is_hidden(c, Strictness::Text) {
                assert!(is_hidden(c, Strictness::Exact), "{c:?}");
            }
            if c.is_control() && c != '\n' && c != '\t' {
                assert!(is_hidden(c, Strictness::Text), "{c:?}");
            }
        }
    }

    #[test]
    fn json_escapes_every_hidden_character_as_a_valid_escape() {
        let v = serde_json::json!({"t": "\u{E0041}x\u{200B}\u{2028}"});
        let safe = super::json_visible(&v.to_string()).into_owned();
        assert!(safe.is_ascii(), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
    }

    #[test]
    fn shorten_cuts_at_a_char_boundary() {
        assert_eq!(super::shorten("héllo", 2), "h");
        assert_eq!(super::shorten("abc", 10), "abc");
    }
}
