//! The `file_edit` tool: replaces an exact string in a file (once, or everywhere with
//! `replace_all`) and writes the result atomically. Changes nothing unless the match count
//! is what was asked for. The file is read and written back in the one folder the path
//! was judged to lead to (`fsutil::place`, `fsutil::open_at`), opened once; or, in the
//! working directory, when a front end serves the text (an editor's unsaved buffer,
//! `fsutil::served`), read from it and written back to it, after the same checks.

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::FILE_EDIT;
use std::io::Read;
use std::path::Path;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::fsutil::{Need, WriteError, WriteTarget, describe, open_at, place, write_target};
use super::params::Params;
use super::walk;
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use crate::beneath::{Keep, Kind};

/// Largest file file_edit loads into memory.
const MAX_EDIT_SIZE: u64 = 64 * 1024 * 1024;

pub(crate) struct FileEdit;

/// `file_edit`'s arguments, typed.
struct Args {
    path: String,
    old_string: String,
    new_string: String,
    replace_all: bool,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            path: p.non_empty_string("path")?.to_string(),
            old_string: p.non_empty_string("old_string")?.to_string(),
            new_string: p.string("new_string")?.to_string(),
            replace_all: p.opt_bool("replace_all")?.unwrap_or(false),
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| ToolSchema {
    name: FILE_EDIT.name.into(),
    description: "Replace an exact piece of text in a file.\n\
            `old_string` must match the \
            file exactly, including whitespace and indentation, and exactly once unless \
            `replace_all` is true; include a few surrounding lines to make it unique. When it \
            matches zero or several times nothing is changed and the error says how many \
            times it matched. The write is atomic."
        .into(),
    parameters: vec![
        ParamSpec::new(
            "path",
            "string",
            "File to edit, relative to the working directory or absolute.",
            true,
        ),
        ParamSpec::new(
            "old_string",
            "string",
            "The exact text to replace (not empty).",
            true,
        ),
        ParamSpec::new("new_string", "string", "The text to put in its place.", true),
        ParamSpec::new(
            "replace_all",
            "boolean",
            "Replace every occurrence instead of requiring exactly one; default false.",
            false,
        ),
    ],
    json_schema: None,
});

#[async_trait]
impl Tool for FileEdit {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&FILE_EDIT)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args {
            path: shown,
            old_string: old,
            new_string: new,
            replace_all: all,
        } = Args::read(&args)?;
        match write_target(ctx, &shown, Need::Edit).await? {
            WriteTarget::Served(files, real) => {
                return Ok(edit_served(&*files, &real, &shown, &old, &new, all).await);
            }
            WriteTarget::Refused(answer) => return Ok(answer),
            WriteTarget::Disk => {}
        }
        let sandbox = ctx.clone();
        walk::run_blocking(ctx, move |_| {
            let (given, real) = match place(&sandbox, &shown) {
                Ok(p) => p,
                Err(e) => return Ok(ToolOutput::error(e)),
            };
            if let Err(why) = sandbox.may_write(&real, &given) {
                return Ok(ToolOutput::sandbox_denied(why));
            }
            Ok(edit(&real, &shown, &old, &new, all))
        })
        .await?
    }
}

/// The edit of a text a front end serves: read there, changed, written back there.
async fn edit_served(
    files: &dyn super::TextFiles,
    real: &Path,
    shown: &str,
    old: &str,
    new: &str,
    all: bool,
) -> ToolOutput {
    if old == new {
        return ToolOutput::error(IDENTICAL);
    }
    let text = match files.read(real).await {
        Ok(t) => t,
        Err(why) => return ToolOutput::error(format!("Cannot read {shown}: {why}")),
    };
    let (out, k) = match replaced(text.as_bytes(), shown, old, new, all) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    // Text with text put in it stays text.
    let out = String::from_utf8_lossy(&out);
    match files.write(real, &out).await {
        Ok(()) => edited(shown, k),
        Err(why) => ToolOutput::error(format!("Cannot write {shown}: {why}")),
    }
}

const IDENTICAL: &str = "old_string and new_string are identical; nothing to change";

fn edit(path: &Path, shown: &str, old: &str, new: &str, all: bool) -> ToolOutput {
    if old == new {
        return ToolOutput::error(IDENTICAL);
    }
    let mut opened = match open_at(path, shown) {
        Ok(o) => o,
        Err(e) => return ToolOutput::error(e),
    };
    match opened.kind() {
        Kind::File => {}
        Kind::Folder => return ToolOutput::error(format!("Is a directory: {shown}")),
        Kind::Link | Kind::Other => return ToolOutput::error(format!("Not a regular file: {shown}")),
    }
    if opened.len() > MAX_EDIT_SIZE {
        return ToolOutput::error(format!(
            "{shown} is {} bytes; file_edit handles files up to {MAX_EDIT_SIZE} bytes",
            opened.len()
        ));
    }
    let mut bytes = Vec::new();
    if let Err(e) = (&mut opened.file).take(MAX_EDIT_SIZE + 1).read_to_end(&mut bytes) {
        return ToolOutput::error(describe(&e, "File", shown));
    }
    if bytes.len() as u64 > MAX_EDIT_SIZE {
        // It grew since it was looked at: editing a cut copy would lose its end.
        return ToolOutput::error(format!(
            "{shown} is over {MAX_EDIT_SIZE} bytes; file_edit handles files up to {MAX_EDIT_SIZE} bytes"
        ));
    }
    let (out, k) = match replaced(&bytes, shown, old, new, all) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    // Back in the folder it was read from, as the file it was (less set-ID bits, which
    // the kernel too drops when a file is written).
    let keep = Keep {
        mode: Some(crate::beneath::permissions(&opened.stat) & 0o1777),
        owner: Some((opened.stat.st_uid, opened.stat.st_gid)),
    };
    if let Err(source) = opened.folder.replace(&opened.name, &out, keep) {
        let e = WriteError::Write {
            path: shown.to_string(),
            source,
        };
        return ToolOutput::error(e.to_string());
    }
    edited(shown, k)
}

/// The result of `k` replacements in `shown`.
fn edited(shown: &str, k: usize) -> ToolOutput {
    let noun = if k == 1 { "occurrence" } else { "occurrences" };
    ToolOutput::new(
        json!({"output": format!("Replaced {k} {noun} in {shown}"), "replacements": k}),
        format!("{k} {noun} replaced"),
    )
}

/// `bytes` with `old` replaced by `new` (once, or everywhere with `all`), and how many
/// times; `Err`: why nothing changes (no match, several).
fn replaced(bytes: &[u8], shown: &str, old: &str, new: &str, all: bool) -> Result<(Vec<u8>, usize), String> {
    let starts = find_all(bytes, old.as_bytes());
    let k = starts.len();
    if k == 0 {
        return Err(format!(
            "old_string not found in {shown} (0 matches); it must match the file exactly, \
             including whitespace and indentation. Nothing was changed."
        ));
    }
    if k > 1 && !all {
        return Err(format!(
            "old_string matches {k} times in {shown}; include more surrounding text to make it \
             unique, or set replace_all to true. Nothing was changed."
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() + k * new.len());
    let mut at = 0;
    for s in &starts {
        out.extend_from_slice(&bytes[at..*s]);
        out.extend_from_slice(new.as_bytes());
        at = s + old.len();
    }
    out.extend_from_slice(&bytes[at..]);
    Ok((out, k))
}

/// Starts of the non-overlapping occurrences of `needle`, left to right.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    if let (Ok(h), Ok(n)) = (std::str::from_utf8(hay), std::str::from_utf8(needle)) {
        return h.match_indices(n).map(|(i, _)| i).collect();
    }
    let mut starts = Vec::new();
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if hay[i..].starts_with(needle) {
            starts.push(i);
            i += needle.len();
        } else {
            i += 1;
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_non_overlapping_matches_in_text_and_bytes() {
        assert_eq!(find_all(b"aaaa", b"aa"), vec![0, 2]);
        assert_eq!(find_all(b"xyz", b"q"), Vec::<usize>::new());
        assert_eq!(find_all(b"\xffab\xffab", b"ab"), vec![1, 4]);
    }

    #[tokio::test]
    async fn under_a_read_only_sandbox_the_file_is_left_as_it_was() {
        use crate::tools::launcher::Confinement;
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (proj, out) = (base.join("proj"), base.join("out"));
        std::fs::create_dir(&proj).unwrap();
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("x"), "a").unwrap();
        std::fs::write(proj.join("x"), "a").unwrap();
        let c = Confinement {
            mode: "read-only".into(),
            writable: vec![out.join("private")],
            ..Confinement::default()
        };
        let ctx = ToolContext::new(proj.clone(), 4096, std::time::Duration::from_secs(5))
            .with_sandbox(Some(std::sync::Arc::new(c)));
        let args = json!({ "path": "x", "old_string": "a", "new_string": "b" });
        let denied = FileEdit.call(args.clone(), &ctx).await.unwrap();
        let why = denied.result["sandbox"].as_str().unwrap();
        assert!(
            why.starts_with("sandbox: write denied (read-only sandbox): "),
            "{why}"
        );
        assert_eq!(std::fs::read_to_string(proj.join("x")).unwrap(), "a");
        let free = FileEdit.call(args, &ctx.with_sandbox(None)).await.unwrap();
        assert!(free.is_success(), "{:?}", free.result);
        assert_eq!(std::fs::read_to_string(proj.join("x")).unwrap(), "b");
    }
}
