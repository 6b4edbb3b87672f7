//! What `web_fetch` makes of a response body: which content types it shows (HTML as
//! Markdown, other text as it is) and which it refuses (images, archives, anything
//! binary), the HTML-to-Markdown conversion (scripts, styles and other non-text elements
//! dropped), and the window of lines returned under the output cap with `next_offset` to
//! read on. Pure: no network, no files.

use serde_json::{Map, Value, json};

use super::output::{Total, content_limit, notice, utf8_floor};

/// How much of a body without a content type is checked for NUL bytes.
const SNIFF: usize = 8 * 1024;

/// How a body is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Converted to Markdown.
    Html,
    /// Shown as it is (plain text, JSON, XML, source code…).
    Text,
}

/// The kind a `Content-Type` names: `Ok(None)` when there is none (decided by looking at
/// the body, `sniff`), `Err(mime)` for a type that is not text.
pub(crate) fn kind_of(content_type: Option<&str>) -> Result<Option<Kind>, String> {
    let Some(ct) = content_type else {
        return Ok(None);
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let text_apps = [
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/toml",
        "application/yaml",
        "application/x-yaml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
    ];
    Ok(Some(match mime.as_str() {
        "" => return Ok(None),
        "text/html" | "application/xhtml+xml" => Kind::Html,
        m if m.starts_with("text/") => Kind::Text,
        m if text_apps.contains(&m) || m.ends_with("+json") || m.ends_with("+xml") => Kind::Text,
        _ => return Err(mime),
    }))
}

/// The kind of a body that came without a content type; `None`: binary (a NUL byte in
/// its start).
pub(crate) fn sniff(body: &[u8]) -> Option<Kind> {
    let start = &body[..body.len().min(SNIFF)];
    if start.contains(&0) {
        return None;
    }
    let head = String::from_utf8_lossy(&start[..start.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    Some(
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            Kind::Html
        } else {
            Kind::Text
        },
    )
}

/// The body as text: decoded from the charset the `Content-Type` names, else the one an
/// HTML page declares in its first KiB (`<meta charset=…>`), else UTF-8. `true` when bytes
/// could not be decoded and were replaced with U+FFFD.
pub(crate) fn decode(body: &[u8], content_type: Option<&str>, kind: Kind) -> (String, bool) {
    let label = content_type
        .and_then(charset_param)
        .or_else(|| (kind == Kind::Html).then(|| meta_charset(body)).flatten());
    let encoding = label
        .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _, lossy) = encoding.decode(body);
    (text.into_owned(), lossy)
}

/// `charset=…` of a content type.
fn charset_param(ct: &str) -> Option<String> {
    ct.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// The charset an HTML page declares near its start.
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let label: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!label.is_empty()).then_some(label)
}

/// Elements that are not text a reader wants.
const SKIPPED: [&str; 12] = [
    "head", "script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed", "link",
    "meta",
];

/// An HTML document as Markdown, without scripts, styles and the like, in bounded work
/// (`html_markdown`): nesting past its depth is flattened, and it stops at `stop`.
pub(crate) fn markdown(html: &str, stop: super::html_markdown::Stop<'_>) -> super::html_markdown::Converted {
    super::html_markdown::convert(html, &SKIPPED, stop)
}

/// The lines from `offset` (1-based) of `text`, cut to fit `cap` bytes with the usual
/// notice, into `result` (`output`, and `truncated` with `next_offset` when cut). Returns
/// the number of lines shown, or the error for an offset past the end.
pub(crate) fn window(
    text: &str,
    offset: u64,
    cap: usize,
    result: &mut Map<String, Value>,
) -> Result<u64, String> {
    let mut start = 0;
    let mut line = 1;
    while line < offset {
        match text[start..].find('\n') {
            Some(i) => {
                start += i + 1;
                line += 1;
            }
            None => {
                start = text.len();
                break;
            }
        }
    }
    let rest = &text[start..];
    if offset > 1 && (line < offset || rest.is_empty()) {
        let lines = text.lines().count();
        return Err(format!(
            "offset {offset} is past the end of the page ({lines} lines)"
        ));
    }
    let limit = content_limit(cap);
    if rest.len() <= limit {
        result.insert("output".into(), Value::String(rest.to_string()));
        return Ok(rest.lines().count() as u64);
    }
    let cut = utf8_floor(&rest.as_bytes()[..limit]);
    let (kept, lines, long_line) = match rest[..cut].rfind('\n') {
        Some(i) => (&rest[..=i], rest[..=i].matches('\n').count() as u64, false),
        // One line longer than the cap: its start, and reading on skips past it.
        None => (&rest[..cut], 1, true),
    };
    let next = offset + lines;
    let mut shown = kept.to_string();
    if !shown.ends_with('\n') {
        shown.push('\n');
    }
    shown.push_str(&notice(kept.len() as u64, Total::Exact(rest.len() as u64)));
    result.insert("output".into(), Value::String(shown));
    result.insert("truncated".into(), Value::Bool(true));
    result.insert("next_offset".into(), json!(next));
    let mut note = format!(
        "The page is longer than the output limit ({cap} bytes): call web_fetch again with \
         the same url and offset {next} to read on."
    );
    if long_line {
        note.push_str(&format!(
            " Line {offset} alone is longer than the limit: only its start is shown."
        ));
    }
    result.insert("note".into(), Value::String(note));
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_sorted_into_markdown_text_and_refused() {
        assert_eq!(kind_of(Some("text/html; charset=utf-8")), Ok(Some(Kind::Html)));
        assert_eq!(kind_of(Some("Application/XHTML+XML")), Ok(Some(Kind::Html)));
        for t in [
            "text/plain",
            "application/json",
            "application/ld+json",
            "text/css",
        ] {
            assert_eq!(kind_of(Some(t)), Ok(Some(Kind::Text)), "{t}");
        }
        for t in [
            "image/png",
            "application/octet-stream",
            "application/pdf",
            "video/mp4",
        ] {
            assert_eq!(kind_of(Some(t)), Err(t.to_string()));
        }
        assert_eq!(kind_of(None), Ok(None));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0"), None);
        assert_eq!(sniff(b"  <!DOCTYPE html><p>x"), Some(Kind::Html));
        assert_eq!(sniff(b"{\"a\": 1}"), Some(Kind::Text));
    }

    #[test]
    fn bodies_are_decoded_from_their_charset() {
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode(latin1, Some("text/plain; charset=ISO-8859-1"), Kind::Text),
            ("café".to_string(), false)
        );
        let page = b"<html><head><meta charset=\"windows-1252\"></head><p>\x93q\x94</p>";
        let (text, lossy) = decode(page, Some("text/html"), Kind::Html);
        assert!(text.contains("\u{201c}q\u{201d}") && !lossy, "{text}");
        assert_eq!(decode("é".as_bytes(), None, Kind::Text), ("é".to_string(), false));
        assert_eq!(
            decode(latin1, Some("text/plain"), Kind::Text),
            ("caf\u{fffd}".to_string(), true)
        );
    }

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let flag = std::sync::atomic::AtomicBool::new(false);
        let stop = super::super::html_markdown::Stop {
            flag: &flag,
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(3600),
        };
        let md = markdown(
            "<html><head><title>T</title><style>p{color:red}</style></head><body>\
             <h1>Title</h1><script>alert('x')</script><p>Some <b>bold</b> \
             <a href=\"https://example.com/\">link</a>.</p><ul><li>one</li></ul></body></html>",
            stop,
        )
        .markdown;
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(md.contains("[link](https://example.com/)"), "{md}");
        assert!(md.contains("one"), "{md}");
        assert!(!md.contains("alert") && !md.contains("color:red"), "{md}");
    }

    #[test]
    fn a_long_text_is_cut_at_a_line_and_read_on_from_next_offset() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let mut r = Map::new();
        let shown = window(&text, 1, 400, &mut r).unwrap();
        let out = r["output"].as_str().unwrap();
        assert!(
            out.starts_with("line 1\n") && out.contains("[output truncated:"),
            "{out}"
        );
        assert_eq!(r["truncated"], true);
        let next = r["next_offset"].as_u64().unwrap();
        assert_eq!(next, shown + 1);
        assert!(out.contains(&format!("line {}\n", next - 1)), "{out}");
        assert!(!out.contains(&format!("line {next}\n")), "{out}");
        let mut r2 = Map::new();
        window(&text, next, 100_000, &mut r2).unwrap();
        assert!(
            r2["output"]
                .as_str()
                .unwrap()
                .starts_with(&format!("line {next}\n"))
        );
        assert!(r2.get("truncated").is_none());
        let err = window(&text, 500, 400, &mut Map::new()).unwrap_err();
        assert!(err.contains("past the end") && err.contains("100 lines"), "{err}");
        // A line longer than the cap: its start, and reading on moves past it.
        let long = format!("{}\nafter\n", "x".repeat(5000));
        let mut r3 = Map::new();
        window(&long, 1, 400, &mut r3).unwrap();
        assert_eq!(r3["next_offset"], 2);
    }
}
