//! The `file_write` tool: writes a whole file atomically (temporary file + rename), creating
//! parent directories and keeping an existing file's permissions; at exactly the place
//! the path was judged to lead to (`fsutil::place`), or nowhere. In the working directory,
//! when a front end serves the text (an editor's buffers, `fsutil::served`), the content
//! goes to it instead, after the same checks.

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::FILE_WRITE;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::fsutil::{Need, WriteTarget, place, write_at, write_target};
use super::params::Params;
use super::walk;
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};

pub(crate) struct FileWrite;

/// `file_write`'s arguments, typed.
struct Args {
    path: String,
    content: String,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            path: p.non_empty_string("path")?.to_string(),
            content: p.string("content")?.to_string(),
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| ToolSchema {
    name: FILE_WRITE.name.into(),
    description: "Write a whole file, creating or replacing it.\n\
            Creates \
            missing parent directories. The write is atomic: the file holds either the old or \
            the new content, never a mix. Prefer file_edit for changing part of a file."
        .into(),
    parameters: vec![
        ParamSpec::new(
            "path",
            "string",
            "File to write, relative to the working directory or absolute.",
            true,
        ),
        ParamSpec::new("content", "string", "The complete new content of the file.", true),
    ],
    json_schema: None,
});

#[async_trait]
impl Tool for FileWrite {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&FILE_WRITE)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args { path: shown, content } = Args::read(&args)?;
        match write_target(ctx, &shown, Need::Write).await? {
            WriteTarget::Served(files, real) => {
                return Ok(match files.write(&real, &content).await {
                    Ok(()) => wrote(&shown, content.len()),
                    Err(why) => ToolOutput::error(format!("Cannot write {shown}: {why}")),
                });
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
            let n = content.len();
            Ok(match write_at(&real, &shown, content.as_bytes()) {
                Ok(()) => wrote(&shown, n),
                Err(e) => ToolOutput::error(e.to_string()),
            })
        })
        .await?
    }
}

/// The result of writing `n` bytes to `shown`.
fn wrote(shown: &str, n: usize) -> ToolOutput {
    ToolOutput::new(
        json!({"output": format!("Wrote {n} bytes to {shown}"), "bytes": n}),
        format!("wrote {n} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::tools::launcher::Confinement;

    #[tokio::test]
    async fn under_a_sandbox_it_writes_only_beneath_the_writable_roots() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (proj, out) = (base.join("proj"), base.join("out"));
        std::fs::create_dir(&proj).unwrap();
        std::fs::create_dir(&out).unwrap();
        let c = Confinement {
            mode: "workspace-write".into(),
            writable: vec![proj.clone()],
            ..Confinement::default()
        };
        let ctx =
            ToolContext::new(proj.clone(), 4096, Duration::from_secs(5)).with_sandbox(Some(Arc::new(c)));
        let outside = out.join("x.txt");
        let args = json!({ "path": outside, "content": "x" });
        let denied = FileWrite.call(args.clone(), &ctx).await.unwrap();
        assert!(!denied.is_success(), "{:?}", denied.result);
        let why = denied.result["sandbox"].as_str().unwrap();
        assert!(
            why.starts_with("sandbox: write outside the workspace denied: "),
            "{why}"
        );
        assert_eq!(denied.result["error"], why);
        assert!(!outside.exists());

        let inside = FileWrite
            .call(json!({ "path": "in.txt", "content": "in" }), &ctx)
            .await
            .unwrap();
        assert!(inside.is_success(), "{:?}", inside.result);
        assert_eq!(std::fs::read_to_string(proj.join("in.txt")).unwrap(), "in");

        // Served text (an editor's) is asked only after the sandbox allowed the write, and
        // only for the working directory.
        let served = Arc::new(Recorder::default());
        let ctx = ctx.with_files(crate::tools::FileSeam::default());
        ctx.files.set(Some(served.clone()));
        let denied = FileWrite.call(args.clone(), &ctx).await.unwrap();
        assert!(denied.result["sandbox"].is_string(), "{:?}", denied.result);
        let inside = FileWrite
            .call(json!({ "path": "buf.txt", "content": "b" }), &ctx)
            .await
            .unwrap();
        assert!(inside.is_success(), "{:?}", inside.result);
        assert!(!proj.join("buf.txt").exists());
        assert_eq!(
            *served.writes.lock().unwrap(),
            vec![(proj.join("buf.txt"), "b".to_string())]
        );

        // Approved to run outside the sandbox: the same call writes (to the disk: outside
        // the working directory).
        let free = FileWrite.call(args, &ctx.with_sandbox(None)).await.unwrap();
        assert!(free.is_success(), "{:?}", free.result);
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "x");
        assert_eq!(served.writes.lock().unwrap().len(), 1);
    }

    /// Text files that keep what they are given (the editor's side is the front end's).
    #[derive(Default)]
    struct Recorder {
        writes: std::sync::Mutex<Vec<(std::path::PathBuf, String)>>,
    }

    #[async_trait]
    impl crate::tools::TextFiles for Recorder {
        fn reads(&self) -> bool {
            true
        }
        fn writes(&self) -> bool {
            true
        }
        async fn read(&self, _: &std::path::Path) -> Result<String, String> {
            Err("not held".into())
        }
        async fn write(&self, path: &std::path::Path, text: &str) -> Result<(), String> {
            self.writes
                .lock()
                .unwrap()
                .push((path.to_path_buf(), text.to_string()));
            Ok(())
        }
    }
}
