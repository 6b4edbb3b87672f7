//! The `file_write` tool: writes a whole file atomically (temporary file + rename), creating
//! parent directories and keeping an existing file's permissions.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::fsutil::{atomic_write, resolve};
use super::params::Params;
use super::walk;
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};

pub(crate) struct FileWrite;

#[async_trait]
impl Tool for FileWrite {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "file_write".into(),
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
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let schema = self.schema();
        let p = Params::new(&args, &schema)?;
        let shown = p.non_empty_string("path")?.to_string();
        let content = p.string("content")?.to_string();
        let path = resolve(ctx, &shown);
        let sandbox = ctx.clone();
        walk::run_blocking(ctx, move |_| {
            if let Err(why) = sandbox.may_write(&path) {
                return Ok(ToolOutput::sandbox_denied(why));
            }
            let n = content.len();
            Ok(match atomic_write(&path, &shown, content.as_bytes()) {
                Ok(()) => ToolOutput::new(
                    json!({"output": format!("Wrote {n} bytes to {shown}"), "bytes": n}),
                    format!("wrote {n} bytes"),
                ),
                Err(e) => ToolOutput::error(e.to_string()),
            })
        })
        .await?
    }
}
