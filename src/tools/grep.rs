//! The `grep` tool: searches file contents with a regex like ripgrep does (grep-searcher,
//! grep-regex, the `ignore` walker): ignored and binary files are skipped, results are
//! `path:line: text`, sorted by path, capped while collected. The file or directory is
//! the place its path was judged to lead to (`fsutil::place`); every file it reads is
//! opened beneath it without following a link, so what it reads is what lies there. Files
//! a `file_read` deny rule covers are not searched.

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::GREP;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkState;
use serde_json::{Map, Value, json};

use super::fsutil::{open_at, place};
use super::output::{SortedCapped, content_limit};
use super::params::Params;
use super::walk::{self, Stop};
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use crate::beneath::{Folder, Kind};
use crate::permissions::unreadable::Unreadable;

/// Longest line shown; the rest of a longer line (minified code) is elided.
const MAX_LINE: usize = 1000;

pub(crate) struct Grep;

/// `grep`'s arguments, typed.
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    case_insensitive: bool,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            pattern: p.non_empty_string("pattern")?.to_string(),
            path: p.opt_string("path")?.map(str::to_string),
            glob: p.opt_string("glob")?.map(str::to_string),
            case_insensitive: p.opt_bool("case_insensitive")?.unwrap_or(false),
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| ToolSchema {
    name: GREP.name.into(),
    description: "Search file contents with a regular expression, like ripgrep.\n\
            Rust regex syntax. Returns matching lines as `path:line: text`, sorted by path, and the \
            number of matching lines. Searches `path` recursively (a file or a directory), \
            skipping binary files, files ignored by .gitignore/.ignore and the .git \
            directory. Lines longer than 1000 bytes are shortened."
        .into(),
    parameters: vec![
        ParamSpec::new(
            "pattern",
            "string",
            "Regular expression, e.g. `fn\\s+main` or `TODO|FIXME`.",
            true,
        ),
        ParamSpec::new(
            "path",
            "string",
            "File or directory to search; default: the working directory.",
            false,
        ),
        ParamSpec::new(
            "glob",
            "string",
            "Only search files matching this glob, e.g. `*.rs` (matched against the file \
                 name) or `src/**/*.ts` (matched against the path under `path`).",
            false,
        ),
        ParamSpec::new(
            "case_insensitive",
            "boolean",
            "Ignore case; default false.",
            false,
        ),
    ],
    json_schema: None,
});

#[async_trait]
impl Tool for Grep {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&GREP)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args {
            pattern,
            path: given,
            glob: file_glob,
            case_insensitive,
        } = Args::read(&args)?;
        let named = given.clone();
        let shown = given.clone().unwrap_or_else(|| ".".into());

        let matcher = match RegexMatcherBuilder::new()
            .case_insensitive(case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&pattern)
        {
            Ok(m) => m,
            Err(e) => return Ok(ToolOutput::error(format!("Invalid regex {pattern:?}: {e}"))),
        };
        let filter = match file_glob.as_deref().map(FileFilter::new).transpose() {
            Ok(f) => f,
            Err(e) => return Ok(ToolOutput::error(e)),
        };
        let base = match place(ctx, &shown) {
            Ok((_, real)) => real,
            Err(e) => return Ok(ToolOutput::error(e)),
        };
        let opened = match open_at(&base, &shown) {
            Ok(o) => o,
            Err(e) => {
                return Ok(ToolOutput::error(e.replacen(
                    "File not found",
                    "Path not found",
                    1,
                )));
            }
        };
        // A FIFO, a socket or a device (`/dev/tty`) could block the read forever, past the
        // timeout (a walk skips them; a path given by name is refused, as file_read does).
        let is_dir = match opened.kind() {
            Kind::Folder => true,
            Kind::File => false,
            Kind::Link | Kind::Other => return Ok(ToolOutput::error(format!("Not a regular file: {shown}"))),
        };
        // A `file_read` deny rule keeps a file from the model: not searched.
        let unreadable = ctx.unreadable.clone();
        if !is_dir && unreadable.as_ref().is_some_and(|u| u.covers_real(&base)) {
            return Ok(ToolOutput::error(format!(
                "Not searched: {shown} is covered by a file_read deny rule"
            )));
        }
        let folder = if is_dir {
            match super::fsutil::open_folder(&base, &shown, "Path") {
                Ok(f) => Some(f),
                Err(e) => return Ok(ToolOutput::error(e)),
            }
        } else {
            None
        };

        let cap = ctx.max_output_size;
        let (found, totals, stopped, text_file) = walk::run_blocking(ctx, move |stop| {
            let job = Job {
                matcher,
                filter,
                unreadable,
                cap,
                found: Mutex::new(SortedCapped::new(cap)),
                lines: AtomicU64::new(0),
                files: AtomicU64::new(0),
            };
            let mut text_file = true;
            match &folder {
                Some(folder) => job.walk(&base, folder, given.as_deref(), stop),
                None => text_file = job.search_file(&mut searcher(), &opened.file, shown.clone()),
            }
            let totals = (
                job.lines.load(Ordering::Relaxed),
                job.files.load(Ordering::Relaxed),
            );
            let found = job.found.into_inner().unwrap_or_else(|e| e.into_inner());
            (found, totals, stop.timed_out(), text_file)
        })
        .await?;
        if !text_file {
            let shown = named.as_deref().unwrap_or(".");
            return Ok(ToolOutput::error(format!(
                "Binary file: {shown} (grep searches text files only)"
            )));
        }
        let capped = found.finish(cap, stopped);
        if stopped {
            return Err(walk::timeout_error(ctx, capped.text));
        }
        let (lines, files) = totals;
        let mut result = Map::new();
        result.insert("output".into(), Value::String(capped.text.clone()));
        result.insert("count".into(), json!(lines));
        capped.mark(&mut result);
        let summary = match (lines, files) {
            (0, _) => "no matches".to_string(),
            (1, _) => "1 match".to_string(),
            (n, 1) => format!("{n} matches in 1 file"),
            (n, f) => format!("{n} matches in {f} files"),
        };
        Ok(ToolOutput::new(Value::Object(result), summary))
    }
}

/// The `glob` parameter: a pattern with a `/` is matched against the path under the base,
/// one without against the file name (as `rg -g` does).
struct FileFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl FileFilter {
    fn new(glob: &str) -> Result<Self, String> {
        let glob = glob.trim_start_matches("./");
        let g = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("Invalid glob {glob:?}: {e}"))?;
        Ok(FileFilter {
            matcher: g.compile_matcher(),
            whole_path: glob.contains('/'),
        })
    }

    fn accepts(&self, rel: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            rel.file_name().is_some_and(|n| self.matcher.is_match(n))
        }
    }
}

fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

struct Job {
    matcher: RegexMatcher,
    filter: Option<FileFilter>,
    /// Files a `file_read` deny rule covers.
    unreadable: Option<Arc<Unreadable>>,
    cap: usize,
    found: Mutex<SortedCapped>,
    lines: AtomicU64,
    files: AtomicU64,
}

impl Job {
    fn walk(&self, base: &Path, folder: &Folder, given: Option<&str>, stop: &Stop) {
        walk::builder(base).build_parallel().run(|| {
            let mut searcher = searcher();
            // The folder the last file was in (files of one folder come together).
            let mut last: Option<(PathBuf, Folder)> = None;
            Box::new(move |entry| {
                if stop.should_stop() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if walk::is_git_dir(&entry) {
                    return WalkState::Skip;
                }
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let rel = entry.path().strip_prefix(base).unwrap_or(entry.path());
                if self.filter.as_ref().is_some_and(|f| !f.accepts(rel)) {
                    return WalkState::Continue;
                }
                if self
                    .unreadable
                    .as_ref()
                    .is_some_and(|u| u.covers_real(&base.join(rel)))
                {
                    return WalkState::Continue;
                }
                // Read beneath the base, never through a link: a folder the walk listed that
                // became a link since is not followed.
                if let Some(file) = open_beneath(folder, rel, &mut last) {
                    let _ = self.search_file(&mut searcher, &file, walk::display_join(given, rel));
                }
                WalkState::Continue
            })
        });
    }

    /// Searches one file; returns false when it turned out to be binary.
    fn search_file(&self, searcher: &mut Searcher, file: &std::fs::File, shown: String) -> bool {
        let mut sink = Collect {
            shown: &shown,
            text: String::new(),
            limit: content_limit(self.cap),
            total: 0,
            count: 0,
            binary: false,
        };
        // Unreadable files are skipped, as ripgrep does when walking.
        if searcher.search_file(&self.matcher, file, &mut sink).is_err() || sink.binary || sink.count == 0 {
            return !sink.binary;
        }
        self.lines.fetch_add(sink.count, Ordering::Relaxed);
        self.files.fetch_add(1, Ordering::Relaxed);
        let (text, total) = (sink.text, sink.total);
        if let Ok(mut found) = self.found.lock() {
            found.insert(shown, text, total);
        }
        true
    }
}

/// Opens file `rel` beneath `base` for reading, every folder on the way opened from the
/// one above without following a link (`last` keeps the folder of the previous file);
/// `None` for what cannot be read so, or is not a regular file.
fn open_beneath(base: &Folder, rel: &Path, last: &mut Option<(PathBuf, Folder)>) -> Option<std::fs::File> {
    let (parent, name) = (rel.parent()?, rel.file_name()?);
    if last.as_ref().is_none_or(|(p, _)| p != parent) {
        *last = Some((parent.to_path_buf(), base.walk(parent, false).ok()?));
    }
    let (_, folder) = last.as_ref()?;
    match folder.open_read(name) {
        Ok(Some((file, st))) if Kind::of(&st) == Kind::File => Some(file),
        _ => None,
    }
}

/// Collects one file's matches as `path:line: text` lines, up to the output limit.
struct Collect<'a> {
    shown: &'a str,
    text: String,
    limit: usize,
    total: u64,
    count: u64,
    binary: bool,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        let mut line = mat.bytes();
        while let [rest @ .., b'\n' | b'\r'] = line {
            line = rest;
        }
        let number = mat.line_number().unwrap_or(0);
        let cut = if line.len() > MAX_LINE {
            super::output::utf8_floor(&line[..MAX_LINE])
        } else {
            line.len()
        };
        let elided = if cut < line.len() {
            format!(" […{} more bytes]", line.len() - cut)
        } else {
            String::new()
        };
        let len = self.shown.len() + digits(number) + 3 + cut + elided.len() + 1;
        self.total += len as u64;
        if self.text.len() < self.limit {
            self.text.push_str(self.shown);
            self.text.push(':');
            self.text.push_str(&number.to_string());
            self.text.push_str(": ");
            self.text.push_str(&String::from_utf8_lossy(&line[..cut]));
            self.text.push_str(&elided);
            self.text.push('\n');
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_filter_matches_names_or_paths() {
        let f = FileFilter::new("*.rs").unwrap();
        assert!(f.accepts(Path::new("src/deep/a.rs")));
        assert!(!f.accepts(Path::new("src/a.txt")));
        let f = FileFilter::new("src/*.rs").unwrap();
        assert!(f.accepts(Path::new("src/a.rs")));
        assert!(!f.accepts(Path::new("src/deep/a.rs")));
        assert!(FileFilter::new("a[").is_err());
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(10), 2);
    }
}
