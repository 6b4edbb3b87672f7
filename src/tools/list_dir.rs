//! The `list_dir` tool: one directory's entries with type and size, directories first,
//! sorted by name; non-UTF-8 names shown lossily; capped output.

use std::fs;
use std::path::Path;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::fsutil::{describe, resolve};
use super::output::CappedBuf;
use super::params::Params;
use super::walk;
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};

pub(crate) struct ListDir;

#[async_trait]
impl Tool for ListDir {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "list_dir".into(),
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
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let schema = self.schema();
        let p = Params::new(&args, &schema)?;
        let shown = p.opt_string("path")?.unwrap_or(".").to_string();
        let path = resolve(ctx, &shown);
        let cap = ctx.max_output_size;
        walk::run_blocking(ctx, move |_| Ok(list(&path, &shown, cap))).await?
    }
}

struct Entry {
    kind: &'static str,
    size: Option<u64>,
    name: String,
}

fn list(path: &Path, shown: &str, cap: usize) -> ToolOutput {
    match fs::metadata(path) {
        Err(e) => return ToolOutput::error(describe(&e, "Directory", shown)),
        Ok(m) if !m.is_dir() => return ToolOutput::error(format!("Not a directory: {shown}")),
        Ok(_) => {}
    }
    let reader = match fs::read_dir(path) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(describe(&e, "Directory", shown)),
    };
    let mut entries: Vec<Entry> = reader.filter_map(Result::ok).map(|e| entry(&e)).collect();
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

fn entry(e: &fs::DirEntry) -> Entry {
    let name = e.file_name().to_string_lossy().into_owned();
    match e.metadata() {
        Ok(m) if m.is_dir() => Entry {
            kind: "dir",
            size: None,
            name: format!("{name}/"),
        },
        Ok(m) if m.is_file() => Entry {
            kind: "file",
            size: Some(m.len()),
            name,
        },
        Ok(m) if m.file_type().is_symlink() => {
            let target = fs::read_link(e.path())
                .map_or_else(|_| "?".to_string(), |t| t.to_string_lossy().into_owned());
            Entry {
                kind: "link",
                size: None,
                name: format!("{name} -> {target}"),
            }
        }
        Ok(_) => Entry {
            kind: "other",
            size: None,
            name,
        },
        Err(_) => Entry {
            kind: "?",
            size: None,
            name,
        },
    }
}
