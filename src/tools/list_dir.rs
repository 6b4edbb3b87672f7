//! The `list_dir` tool: one directory's entries with type and size, directories first,
//! sorted by name; non-UTF-8 names shown lossily; capped output. Lists the folder at
//! exactly the place the path was judged to lead to (`fsutil::place`), through its
//! descriptor; an entry that is a link is shown as one, never followed.

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::LIST_DIR;
use std::ffi::OsStr;
use std::path::Path;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::fsutil::{describe_place, open_folder, place};
use super::output::CappedBuf;
use super::params::Params;
use super::walk;
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use crate::beneath::{Folder, Kind};

pub(crate) struct ListDir;

/// `list_dir`'s arguments, typed.
struct Args {
    /// The folder, `.` when not given.
    path: String,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            path: p.opt_string("path")?.unwrap_or(".").to_string(),
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| ToolSchema {
    name: LIST_DIR.name.into(),
    description: "List a directory's entries with type and size.\n\
            Not recursive: one entry per line as \
            `type size name`, directories first (with a trailing `/`), then files, each \
            sorted by name. Type is dir, file, link (shown as `name -> target`) or other; \
            size is in bytes. Hidden and ignored files are included."
        .into(),
    parameters: vec![ParamSpec::new(
        "path",
        "string",
        "Directory to list; default: the working directory.",
        false,
    )],
    json_schema: None,
});

#[async_trait]
impl Tool for ListDir {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&LIST_DIR)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args { path: shown } = Args::read(&args)?;
        let cap = ctx.max_output_size;
        let at = ctx.clone();
        walk::run_blocking(ctx, move |_| match place(&at, &shown) {
            Ok((_, real)) => Ok(list(&real, &shown, cap)),
            Err(e) => Ok(ToolOutput::error(e)),
        })
        .await?
    }
}

struct Entry {
    kind: &'static str,
    size: Option<u64>,
    name: String,
}

fn list(path: &Path, shown: &str, cap: usize) -> ToolOutput {
    let folder = match open_folder(path, shown, "Directory") {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(e),
    };
    let names = match folder.names() {
        Ok(n) => n,
        Err(e) => return ToolOutput::error(describe_place(&e, "Directory", shown)),
    };
    let mut entries: Vec<Entry> = names.iter().map(|n| entry(&folder, n)).collect();
    entries.sort_by(|a, b| {
        (a.kind != "dir")
            .cmp(&(b.kind != "dir"))
            .then_with(|| a.name.cmp(&b.name))
    });

    let mut out = CappedBuf::new(cap);
    for e in &entries {
        let size = e.size.map_or_else(String::new, |s| s.to_string());
        out.push(format!("{:<5} {:>10}  {}\n", e.kind, size, e.name).as_bytes());
    }
    let count = entries.len();
    let capped = out.finish().lines();
    let mut result = Map::new();
    result.insert("output".into(), Value::String(capped.text.clone()));
    result.insert("count".into(), json!(count));
    capped.mark(&mut result);
    let summary = if count == 1 {
        "1 entry".to_string()
    } else {
        format!("{count} entries")
    };
    ToolOutput::new(Value::Object(result), summary)
}

fn entry(folder: &Folder, name: &OsStr) -> Entry {
    let shown = name.to_string_lossy().into_owned();
    let Ok(Some(st)) = folder.stat(name) else {
        return Entry {
            kind: "?",
            size: None,
            name: shown,
        };
    };
    match Kind::of(&st) {
        Kind::Folder => Entry {
            kind: "dir",
            size: None,
            name: format!("{shown}/"),
        },
        Kind::File => Entry {
            kind: "file",
            size: u64::try_from(st.st_size).ok(),
            name: shown,
        },
        Kind::Link => {
            let target = folder
                .read_link(name)
                .map_or_else(|_| "?".to_string(), |t| t.to_string_lossy().into_owned());
            Entry {
                kind: "link",
                size: None,
                name: format!("{shown} -> {target}"),
            }
        }
        Kind::Other => Entry {
            kind: "other",
            size: None,
            name: shown,
        },
    }
}
