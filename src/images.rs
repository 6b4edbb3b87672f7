//! Image files as the model takes them: which files are images (by their first bytes,
//! never their name), the size limit, the file read into a base64 `Image`, and the
//! formats named for people. Shared by `@shot.png` attachments (agent) and MCP tools'
//! image results (tools). Reads the one file it is given; knows nothing of providers or
//! wire formats.

use std::io::Read;
use std::path::Path;

use base64::Engine;

use crate::message::{Image, human_size};

/// The largest image attached (5 MB, before base64).
pub(crate) const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The formats every image-taking vendor accepts, for messages.
pub(crate) const FORMATS: &str = "PNG, JPEG, GIF or WebP";

/// The media type of an image that starts with `head`, from its magic bytes.
pub(crate) fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether the name says image (so content that is none is an error, not text).
pub(crate) fn named_like_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["png", "jpg", "jpeg", "gif", "webp"].contains(&e.to_ascii_lowercase().as_str()))
}

fn too_big(size: u64) -> String {
    format!("the image is {size} bytes; images up to 5 MB ({MAX_IMAGE_BYTES} bytes) are attached")
}

/// The file at `path` as an image when its content is one (`Ok(None)` when it is not);
/// an error when it is larger than `MAX_IMAGE_BYTES` or cannot be read. The second value
/// is the line the user sees (`PNG image, 12.3 KB`).
pub(crate) fn read(path: &Path) -> Result<Option<(Image, String)>, String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot open it ({e})"))?;
    let mut head = [0u8; 12];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(format!("cannot read it ({e})")),
        }
    }
    let Some(mime) = sniff(&head[..got]) else {
        return Ok(None);
    };
    let size = file
        .metadata()
        .map_err(|e| format!("cannot read it ({e})"))?
        .len();
    if size > MAX_IMAGE_BYTES {
        return Err(too_big(size));
    }
    let mut bytes = head[..got].to_vec();
    // One byte more than the limit: a file that grew since is still refused.
    (&mut file)
        .take(MAX_IMAGE_BYTES + 1 - got as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it ({e})"))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    let kind = mime.trim_start_matches("image/").to_ascii_uppercase();
    let line = format!("{kind} image, {}", human_size(bytes.len()));
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    drop(bytes);
    Ok(Some((
        Image {
            mime: mime.to_string(),
            data: data.into(),
        },
        line,
    )))
}

/// `PNG, JPEG or WebP` for media types.
pub(crate) fn names(types: &[&str]) -> String {
    let name = |t: &&str| match *t {
        "image/webp" => "WebP".to_string(),
        t => t.trim_start_matches("image/").to_ascii_uppercase(),
    };
    let all: Vec<String> = types.iter().map(name).collect();
    match all.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => all.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_comes_from_the_content_not_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("shot.txt");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        let (image, line) = read(&png).unwrap().unwrap();
        assert_eq!(image.mime, "image/png");
        assert_eq!(&*image.data, "iVBORw0KGgoAAAANSUhEUg==");
        assert_eq!(line, "PNG image, 16 B");
        let fake = dir.path().join("fake.png");
        std::fs::write(&fake, "not an image").unwrap();
        assert_eq!(read(&fake).unwrap(), None);
        assert!(named_like_image(&fake) && !named_like_image(&png));
        assert_eq!(sniff(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
    }

    #[test]
    fn types_are_named_for_people() {
        assert_eq!(
            names(&["image/png", "image/jpeg", "image/webp"]),
            "PNG, JPEG or WebP"
        );
        assert_eq!(names(&["image/gif"]), "GIF");
    }

    #[test]
    fn an_image_over_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.png");
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.resize(MAX_IMAGE_BYTES as usize + 1, 0);
        std::fs::write(&big, &bytes).unwrap();
        let e = read(&big).unwrap_err();
        assert_eq!(
            e,
            "the image is 5242881 bytes; images up to 5 MB (5242880 bytes) are attached"
        );
    }
}
