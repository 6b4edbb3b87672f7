//! An MCP `CallToolResult` as ikigai's tool output: text content becomes the output text,
//! `structuredContent` is kept as JSON, `isError` makes it a failed result with the
//! server's text, images go to the model as images when it takes them (PNG, JPEG, GIF or
//! WebP by their bytes, up to 5 MB; a line in the text says so), else they and audio
//! become a line naming their type and size, resource links are listed; all capped at
//! `max_output_size`. Works on the JSON of the result, so any content kind the SDK adds
//! later still reads as a line. Pure.

use serde_json::{Map, Value, json};

use base64::Engine;

use crate::images::{FORMATS, MAX_IMAGE_BYTES, names, sniff};
use crate::message::Image;
use crate::tools::ToolOutput;
use crate::tools::output::CappedBuf;

/// Bytes of data that a base64 string of this length holds.
fn decoded_len(b64: &str) -> usize {
    let trimmed = b64.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

/// `1.2 KiB`, `300 B`.
fn size(n: usize) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The image of an `image` block, its media type read from its first bytes; else why it
/// cannot go to the model.
fn image_of(b: &Value, accepted: &[&str]) -> Result<Image, String> {
    let data = str_of(b, "data");
    let head = base64::engine::general_purpose::STANDARD
        .decode(data.get(..16).unwrap_or(data))
        .unwrap_or_default();
    let Some(mime) = sniff(&head) else {
        return Err(format!("not a {FORMATS} image"));
    };
    if !accepted.contains(&mime) {
        return Err(format!("the model takes {} images only", names(accepted)));
    }
    if decoded_len(data) as u64 > MAX_IMAGE_BYTES {
        return Err("larger than 5 MB".into());
    }
    Ok(Image {
        mime: mime.into(),
        data: data.into(),
    })
}

/// One content block as text, and what kind of item it was (for the summary); an image
/// goes to `images` when the model takes them (`Some`).
fn block(b: &Value, images: &mut Option<&mut Vec<Image>>, accepted: &[&str]) -> (String, &'static str) {
    match str_of(b, "type") {
        "text" => (str_of(b, "text").to_string(), "text"),
        "image" => {
            let (mime, n) = (str_of(b, "mimeType"), size(decoded_len(str_of(b, "data"))));
            let taken = match images.as_deref_mut() {
                None => Err("the model takes no images".to_string()),
                Some(list) => image_of(b, accepted).map(|image| {
                    let line = format!("[image: {}, {n}; it follows the tool results]", image.mime);
                    list.push(image);
                    line
                }),
            };
            let line = taken.unwrap_or_else(|why| format!("[image omitted: {mime}, {n}; {why}]"));
            (line, "image")
        }
        "audio" => {
            let (mime, n) = (str_of(b, "mimeType"), size(decoded_len(str_of(b, "data"))));
            (
                format!("[audio omitted: {mime}, {n}; ikigai does not pass audio to the model]"),
                "audio",
            )
        }
        "resource_link" => {
            let mut line = format!("[resource link] {}", str_of(b, "uri"));
            let name = str_of(b, "name");
            if !name.is_empty() {
                line.push_str(&format!(" ({name})"));
            }
            let mime = str_of(b, "mimeType");
            if !mime.is_empty() {
                line.push_str(&format!(" {mime}"));
            }
            let desc = str_of(b, "description");
            if !desc.is_empty() {
                line.push_str(&format!(": {desc}"));
            }
            (line, "resource link")
        }
        "resource" => {
            let r = b.get("resource").unwrap_or(&Value::Null);
            let uri = str_of(r, "uri");
            match r.get("text").and_then(Value::as_str) {
                Some(text) => (format!("[resource] {uri}\n{text}"), "resource"),
                None => {
                    let n = decoded_len(str_of(r, "blob"));
                    let mime = str_of(r, "mimeType");
                    (
                        format!("[resource omitted: {uri}, {mime}, {} of binary data]", size(n)),
                        "resource",
                    )
                }
            }
        }
        other => (format!("[{other} content omitted]"), "other"),
    }
}

/// The output of a call whose result (as JSON) is `result`, capped at `cap` bytes; its
/// images go to the model as images when it takes their type (`accepted`; none: it takes
/// no images).
pub fn convert(result: &Value, cap: usize, accepted: &[&str]) -> ToolOutput {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut found: Vec<Image> = Vec::new();
    let mut sink = (!accepted.is_empty()).then_some(&mut found);
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let mut buf = CappedBuf::new(cap);
    let mut kinds: Vec<&'static str> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let (text, kind) = block(b, &mut sink, accepted);
        if i > 0 {
            buf.push(b"\n");
        }
        buf.push(text.as_bytes());
        kinds.push(kind);
    }
    let text = buf.finish().text;
    if is_error {
        let message = if text.trim().is_empty() {
            "the tool reported an error without text".to_string()
        } else {
            text
        };
        return ToolOutput::error(message);
    }
    let mut out = Map::new();
    out.insert("output".into(), Value::String(text.clone()));
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        let len = structured.to_string().len();
        if len <= cap {
            out.insert("structured_content".into(), structured.clone());
        } else {
            out.insert(
                "structured_content_omitted".into(),
                json!(format!("{len} bytes, more than max_output_size ({cap})")),
            );
        }
    }
    let summary = summarize(&text, &kinds, out.contains_key("structured_content"));
    let mut output = ToolOutput::new(Value::Object(out), summary);
    output.images = found;
    output
}

fn summarize(text: &str, kinds: &[&str], structured: bool) -> String {
    let mut parts = Vec::new();
    if kinds.contains(&"text") {
        let n = text.lines().count();
        parts.push(if n == 1 {
            "1 line".to_string()
        } else {
            format!("{n} lines")
        });
    }
    for kind in ["image", "audio", "resource link", "resource"] {
        let c = kinds.iter().filter(|k| **k == kind).count();
        if c > 0 {
            parts.push(if c == 1 {
                format!("1 {kind}")
            } else {
                format!("{c} {kind}s")
            });
        }
    }
    if structured {
        parts.push("structured content".into());
    }
    if parts.is_empty() {
        "no content".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_images_links_and_structured_content() {
        let r = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"},
                {"type": "resource", "resource": {"uri": "mem://x", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "mem://b", "blob": "AAAA", "mimeType": "application/zip"}}
            ],
            "structuredContent": {"t": 1}
        });
        let out = convert(&r, 10_000, &[]);
        let text = out.result["output"].as_str().unwrap();
        assert!(
            text.starts_with("hello\n[image omitted: image/png, 3 B;"),
            "{text}"
        );
        assert!(text.contains("[audio omitted: audio/wav, 6 B;"), "{text}");
        assert!(
            text.contains("[resource link] file:///a.txt (a) text/plain"),
            "{text}"
        );
        assert!(text.contains("[resource] mem://x\ninside"), "{text}");
        assert!(
            text.contains("[resource omitted: mem://b, application/zip, 3 B"),
            "{text}"
        );
        assert_eq!(out.result["structured_content"], json!({"t": 1}));
        assert!(out.is_success());
        assert!(
            out.summary.contains("1 image") && out.summary.contains("structured content"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn images_go_to_the_model_when_it_takes_them_and_only_real_ones() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
        let r = json!({"content": [
            // Declared JPEG, is a PNG: the bytes decide.
            {"type": "image", "data": png, "mimeType": "image/jpeg"},
            {"type": "image", "data": "AAAAAAAA", "mimeType": "image/png"},
        ]});
        let out = convert(&r, 10_000, &["image/png", "image/jpeg"]);
        let text = out.result["output"].as_str().unwrap();
        assert!(
            text.starts_with("[image: image/png, 70 B; it follows the tool results]\n"),
            "{text}"
        );
        assert!(
            text.ends_with("[image omitted: image/png, 6 B; not a PNG, JPEG, GIF or WebP image]"),
            "{text}"
        );
        assert_eq!(out.images.len(), 1);
        assert_eq!(
            (out.images[0].mime.as_str(), &*out.images[0].data),
            ("image/png", png)
        );
        let out = convert(&r, 10_000, &["image/jpeg"]);
        assert!(out.images.is_empty());
        assert!(
            out.result["output"]
                .as_str()
                .unwrap()
                .contains("image/jpeg, 70 B; the model takes JPEG images only]")
        );
        let out = convert(&r, 10_000, &[]);
        assert!(out.images.is_empty());
        assert!(
            out.result["output"]
                .as_str()
                .unwrap()
                .contains("image/jpeg, 70 B; the model takes no images]")
        );
    }

    #[test]
    fn is_error_is_a_failed_result_with_the_servers_text() {
        let out = convert(
            &json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}),
            1000,
            &[],
        );
        assert!(!out.is_success());
        assert_eq!(out.result["error"], "no such city");
        let out = convert(&json!({"content": [], "isError": true}), 1000, &[]);
        assert!(out.result["error"].as_str().unwrap().contains("without text"));
    }

    #[test]
    fn output_is_capped() {
        let big = "x".repeat(50_000);
        let out = convert(
            &json!({"content": [{"type": "text", "text": big}], "structuredContent": {"big": big}}),
            4096,
            &[],
        );
        let text = out.result["output"].as_str().unwrap();
        assert!(text.len() <= 4096, "{}", text.len());
        assert!(text.contains("bytes shown"), "{}", &text[text.len() - 100..]);
        assert!(out.result.get("structured_content").is_none());
        assert!(
            out.result["structured_content_omitted"]
                .as_str()
                .unwrap()
                .contains("max_output_size")
        );
    }
}
