//! The `file_read` tool: returns a text file's contents, or a window of its lines, read in
//! chunks and capped while reading. Refuses directories, binary and special files. Reads
//! the file at exactly the place the path was judged to lead to (`fsutil::place`), or,
//! in the working directory, the text a front end serves there (an editor's unsaved
//! buffer, `fsutil::served`).

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::FILE_READ;
use std::io::{self, Read};
use std::path::Path;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::fsutil::{Need, describe, open_at, place, served};
use super::output::{CappedBuf, Total};
use super::params::Params;
use super::walk;
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use crate::beneath::Kind;

/// How much of the start of a file is checked for NUL bytes.
const SNIFF: usize = 8 * 1024;
const CHUNK: usize = 64 * 1024;

pub(crate) struct FileRead;

/// `file_read`'s arguments, typed.
struct Args {
    path: String,
    /// The first line to read, from 1 (models often count from 0: 0 is the first too).
    offset: u64,
    limit: Option<u64>,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            path: p.non_empty_string("path")?.to_string(),
            offset: p.opt_u64("offset", 0)?.unwrap_or(1).max(1),
            limit: p.opt_u64("limit", 1)?,
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| ToolSchema {
    name: FILE_READ.name.into(),
    description: "Read a text file, or a window of its lines.\n\
            Returns its contents exactly (no line numbers added). \
            For a large file, read a window of lines with `offset` (first line, 1-based) and \
            `limit` (number of lines); a result cut at the size limit says so and gives \
            `next_offset`. Binary files are refused with their size; use list_dir for \
            directories."
        .into(),
    parameters: vec![
        ParamSpec::new(
            "path",
            "string",
            "File to read, relative to the working directory or absolute.",
            true,
        ),
        ParamSpec::new(
            "offset",
            "integer",
            "First line to return, 1-based (0 also means the first line); default 1.",
            false,
        ),
        ParamSpec::new(
            "limit",
            "integer",
            "Most lines to return; default: to the end of the file.",
            false,
        ),
    ],
    json_schema: None,
});

#[async_trait]
impl Tool for FileRead {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&FILE_READ)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args {
            path: shown,
            offset,
            limit,
        } = Args::read(&args)?;
        let cap = ctx.max_output_size;
        let at = ctx.clone();
        if ctx.files.get().is_some() {
            let s = shown.clone();
            let real = match walk::run_blocking(ctx, move |_| place(&at, &s)).await? {
                Ok((_, real)) => real,
                Err(e) => return Ok(ToolOutput::error(e)),
            };
            if let Some(files) = served(ctx, &real, Need::Read) {
                return match files.read(&real).await {
                    Ok(text) => {
                        let size = text.len() as u64;
                        read_from(text.as_bytes(), size, &shown, offset, limit, cap)
                    }
                    Err(why) => Ok(ToolOutput::error(format!("Cannot read {shown}: {why}"))),
                };
            }
        }
        let at = ctx.clone();
        walk::run_blocking(ctx, move |_| match place(&at, &shown) {
            Ok((_, real)) => read(&real, &shown, offset, limit, cap),
            Err(e) => Ok(ToolOutput::error(e)),
        })
        .await?
    }
}

fn read(
    path: &Path,
    shown: &str,
    offset: u64,
    limit: Option<u64>,
    cap: usize,
) -> Result<ToolOutput, ToolError> {
    let opened = match open_at(path, shown) {
        Ok(o) => o,
        Err(e) => return Ok(ToolOutput::error(e)),
    };
    match opened.kind() {
        Kind::File => {}
        Kind::Folder => {
            return Ok(ToolOutput::error(format!(
                "Is a directory: {shown} (use list_dir)"
            )));
        }
        Kind::Link | Kind::Other => return Ok(ToolOutput::error(format!("Not a regular file: {shown}"))),
    }
    let size = opened.len();
    read_from(opened.file, size, shown, offset, limit, cap)
}

/// The window asked of a text of `size` bytes read from `file` (a file opened at its
/// place, or a front end's text), refused when it is binary.
fn read_from(
    mut file: impl Read,
    size: u64,
    shown: &str,
    offset: u64,
    limit: Option<u64>,
    cap: usize,
) -> Result<ToolOutput, ToolError> {
    let fail = |e: io::Error| Ok(ToolOutput::error(describe(&e, "File", shown)));
    let mut chunk = vec![0u8; CHUNK];
    let mut filled = 0;
    // The first read may be short; fill the sniff window before deciding.
    while filled < SNIFF {
        match file.read(&mut chunk[filled..SNIFF]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return fail(e),
        }
    }
    if chunk[..filled].contains(&0) {
        return Ok(ToolOutput::error(format!(
            "Binary file: {shown} ({size} bytes); file_read shows text files only"
        )));
    }

    let mut window = Window::new(offset, limit, cap);
    let mut more = window.feed(&chunk[..filled]);
    while more {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return fail(e),
        };
        more = window.feed(&chunk[..n]);
    }
    let stopped_early = !more;
    if offset > 1 && window.out.total() == 0 {
        let lines = if window.at_line_start {
            window.line - 1
        } else {
            window.line
        };
        return Ok(ToolOutput::error(format!(
            "offset {offset} is past the end of {shown} ({lines} lines)"
        )));
    }
    // A line longer than the whole cap: show its start and move on past it, so that
    // reading on from next_offset always progresses.
    let long_line = window.out.is_full() && window.kept_newlines() == 0;
    let next_line = offset + window.kept_newlines().max(u64::from(long_line));
    let whole_file = offset == 1 && limit.is_none();
    let total = if whole_file {
        Total::Exact(size)
    } else if stopped_early && window.out.is_full() {
        Total::AtLeast(window.out.total())
    } else {
        Total::Exact(window.out.total())
    };
    let capped = window.out.finish_with(total);
    let shown_lines = next_line - offset;
    let mut notes: Vec<String> = Vec::new();
    if long_line {
        long_line_note(&mut notes, offset, cap);
    }
    let mut result = Map::new();
    result.insert("output".into(), Value::String(capped.text.clone()));
    capped.mark(&mut result);
    let mut summary = if shown_lines == 1 {
        "1 line".to_string()
    } else {
        format!("{shown_lines} lines")
    };
    if capped.truncated {
        result.insert("next_offset".into(), json!(next_line));
        summary.push_str(" (truncated)");
    }
    if capped.lossy {
        notes.push("The file is not valid UTF-8; invalid bytes are shown as U+FFFD.".into());
        summary.push_str(" (not UTF-8)");
    }
    if long_line {
        summary.push_str(" (line longer than the cap)");
    }
    if !notes.is_empty() {
        result.insert("note".into(), json!(notes.join(" ")));
    }
    Ok(ToolOutput::new(Value::Object(result), summary))
}

fn long_line_note(notes: &mut Vec<String>, line: u64, cap: usize) {
    notes.push(format!(
        "Line {line} alone is longer than the output limit ({cap} bytes): only its start is \
         shown; next_offset skips the rest of it (use grep or bash to see more of that line)."
    ));
}

/// Picks the requested lines out of a stream of chunks into a capped buffer.
struct Window {
    offset: u64,
    /// One past the last line wanted.
    end: Option<u64>,
    /// The line the next byte belongs to.
    line: u64,
    at_line_start: bool,
    out: CappedBuf,
}

impl Window {
    fn new(offset: u64, limit: Option<u64>, cap: usize) -> Self {
        Window {
            offset,
            end: limit.map(|l| offset.saturating_add(l)),
            line: 1,
            at_line_start: true,
            out: CappedBuf::new(cap),
        }
    }

    /// Takes the next chunk; returns false when nothing more is wanted.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.end.is_some_and(|e| self.line >= e) {
                return false;
            }
            let (piece, rest, ends_line) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..=i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            if self.line >= self.offset && !self.out.push(piece) {
                return false;
            }
            self.at_line_start = ends_line;
            if ends_line {
                self.line += 1;
            }
            bytes = rest;
        }
        self.end.is_none_or(|e| self.line < e)
    }

    /// Newlines among the kept bytes (a cut partial line is read again from `next_offset`).
    fn kept_newlines(&self) -> u64 {
        let kept = self.out.kept();
        let n = kept.iter().filter(|&&b| b == b'\n').count() as u64;
        if !kept.is_empty() && !kept.ends_with(b"\n") && !self.out.is_full() {
            n + 1
        } else {
            n
        }
    }
}
