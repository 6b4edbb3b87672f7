//! The `glob` tool: finds files whose path under a directory matches a glob pattern,
//! walking like ripgrep (ignore files honoured, `.git` skipped). Sorted, capped output.
//! The directory is the place its path was judged to lead to (`fsutil::place`), and no
//! link is followed beneath it: not on the way to where a pattern's literal start
//! begins the walk, not during the walk.

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::GLOB;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use serde_json::{Map, Value, json};

use super::fsutil::{open_folder, place};
use super::output::SortedCapped;
use super::params::Params;
use super::walk::{self, Stop};
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use crate::beneath::Folder;

pub(crate) struct Glob;

/// `glob`'s arguments, typed.
struct Args {
    pattern: String,
    path: Option<String>,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            pattern: p.non_empty_string("pattern")?.to_string(),
            path: p.opt_string("path")?.map(str::to_string),
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| {
    ToolSchema {
        name: GLOB.name.into(),
        description: "Find files whose path matches a glob pattern.\n\
            Examples: `**/*.rs`, `src/**/test_*.{js,ts}`. `*` and `?` do not cross `/`; `**/` matches any number of directories; `{a,b}` \
            and `[abc]` work as in a shell. The pattern is matched against each file's path \
            relative to `path`. Files ignored by .gitignore/.ignore and the .git directory \
            are skipped. Returns matching paths one per line, sorted, and their count."
            .into(),
        parameters: vec![
            ParamSpec::new(
                "pattern",
                "string",
                "Glob pattern relative to `path`, e.g. `**/*.md`.",
                true,
            ),
            ParamSpec::new(
                "path",
                "string",
                "Directory to search in; default: the working directory.",
                false,
            ),
        ],
        json_schema: None,
    }
});

#[async_trait]
impl Tool for Glob {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&GLOB)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args { pattern, path: given } = Args::read(&args)?;
        let pattern = pattern.as_str();
        let shown = given.clone().unwrap_or_else(|| ".".into());

        if Path::new(pattern).is_absolute() {
            return Ok(ToolOutput::error(format!(
                "Glob pattern must be relative ({pattern}); put the directory in `path`"
            )));
        }
        if pattern.split('/').any(|c| c == "..") {
            return Ok(ToolOutput::error(format!(
                "Glob pattern must not contain `..` ({pattern}); put the directory in `path`"
            )));
        }
        let pattern = pattern.trim_start_matches("./").to_string();
        let matcher = match GlobBuilder::new(&pattern).literal_separator(true).build() {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                return Ok(ToolOutput::error(format!(
                    "Invalid glob pattern {pattern:?}: {e}"
                )));
            }
        };
        let (base, folder) = match place(ctx, &shown)
            .and_then(|(_, real)| open_folder(&real, &shown, "Path").map(|f| (real, f)))
        {
            Ok(at) => at,
            Err(e) => return Ok(ToolOutput::error(e)),
        };

        let cap = ctx.max_output_size;
        let (found, count, stopped) = walk::run_blocking(ctx, move |stop| {
            let (found, count) = search(&base, &folder, given.as_deref(), &pattern, &matcher, cap, stop);
            (found, count, stop.timed_out())
        })
        .await?;
        let capped = found.finish(cap, stopped);
        if stopped {
            return Err(walk::timeout_error(ctx, capped.text));
        }
        let mut result = Map::new();
        result.insert("output".into(), Value::String(capped.text.clone()));
        result.insert("count".into(), json!(count));
        capped.mark(&mut result);
        let summary = if count == 1 {
            "1 file".to_string()
        } else {
            format!("{count} files")
        };
        Ok(ToolOutput::new(Value::Object(result), summary))
    }
}

/// Leading pattern components without glob syntax: the walk can start there.
fn literal_prefix(pattern: &str) -> PathBuf {
    let comps: Vec<&str> = pattern.split('/').collect();
    let mut prefix = PathBuf::new();
    for c in &comps[..comps.len().saturating_sub(1)] {
        if c.is_empty() || c.contains(['*', '?', '[', ']', '{', '}', '\\']) || *c == ".." {
            break;
        }
        prefix.push(c);
    }
    prefix
}

/// How deep a match can be below the base; `None` when `**` allows any depth.
fn max_depth(pattern: &str) -> Option<usize> {
    if pattern.contains("**") {
        None
    } else {
        Some(pattern.split('/').filter(|c| !c.is_empty()).count())
    }
}

fn search(
    base: &Path,
    folder: &Folder,
    given: Option<&str>,
    pattern: &str,
    matcher: &GlobMatcher,
    cap: usize,
    stop: &Stop,
) -> (SortedCapped, u64) {
    let prefix = literal_prefix(pattern);
    let root = base.join(&prefix);
    let found = Mutex::new(SortedCapped::new(cap));
    let count = AtomicU64::new(0);
    // The walk starts at the pattern's literal start: a real folder beneath the base, not
    // one reached through a link (the walk itself follows none).
    if folder.walk(&prefix, false).is_err() {
        return (found.into_inner().unwrap_or_else(|e| e.into_inner()), 0);
    }
    let depth = max_depth(pattern).map(|d| d.saturating_sub(prefix.components().count()));
    walk::builder(&root).max_depth(depth).build_parallel().run(|| {
        let found = &found;
        let count = &count;
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
            if entry.file_type().is_none_or(|t| t.is_dir()) {
                return WalkState::Continue;
            }
            let rel = entry.path().strip_prefix(base).unwrap_or(entry.path());
            if matcher.is_match(rel) {
                count.fetch_add(1, Ordering::Relaxed);
                let shown = walk::display_join(given, rel);
                let line = format!("{shown}\n");
                let len = line.len() as u64;
                if let Ok(mut f) = found.lock() {
                    f.insert(shown, line, len);
                }
            }
            WalkState::Continue
        })
    });
    let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    (found, count.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_and_depth() {
        assert_eq!(literal_prefix("src/**/*.rs"), PathBuf::from("src"));
        assert_eq!(literal_prefix("*.rs"), PathBuf::new());
        assert_eq!(literal_prefix("a/b/c.txt"), PathBuf::from("a/b"));
        assert_eq!(literal_prefix("a/{b,c}/d"), PathBuf::from("a"));
        assert_eq!(max_depth("*.rs"), Some(1));
        assert_eq!(max_depth("a/*/c"), Some(3));
        assert_eq!(max_depth("a/**/c"), None);
    }
}
