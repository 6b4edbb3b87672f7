//! Small text helpers shared across the crate.

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

fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// Text made safe to show on a terminal, with nothing hidden: control characters other
/// than `\n` and `\t` become visible symbols (ESC is `␛`, BEL `␇`, DEL `␡`; C1 controls
/// and bidirectional controls read `<U+009B>`, `<U+202E>`), so an escape sequence can
/// neither act on the terminal nor vanish; the `\r` of a `\r\n` line end is dropped.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    let suspicious = text
        .bytes()
        .any(|b| (b < 0x20 && b != b'\n' && b != b'\t') || b >= 0x7f);
    if !suspicious || !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            c if (c as u32) < 0x20 && hidden(c) => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            c if hidden(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// JSON text with the characters a terminal could act on escaped as `\uXXXX` (DEL, C1
/// controls, bidirectional controls; serde_json already escapes C0): the same JSON value,
/// safe to print. Such characters only occur inside strings, where the escape is valid.
pub fn json_visible(json: &str) -> std::borrow::Cow<'_, str> {
    let escape = |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || is_bidi_control(c);
    if json.is_ascii() && !json.contains('\u{7f}') || !json.chars().any(escape) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escape(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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
    fn shorten_cuts_at_a_char_boundary() {
        assert_eq!(super::shorten("héllo", 2), "h");
        assert_eq!(super::shorten("abc", 10), "abc");
    }
}
