//! An external tool: an executable that prints its schema for `--schema` and runs with its
//! arguments JSON on stdin, printing its result JSON on stdout. Parses the schema and
//! turns a run (through process.rs) into a result or TOOL_TIMEOUT / TOOL_CRASHED /
//! INVALID_OUTPUT. Never sends stderr to the model; knows nothing of folders (discovery.rs).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::process::{self, Outcome, Spec, StderrMode, signal_name};
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema, ToolSource};
use crate::text::shorten;

/// Cap on the stderr kept from one run (for `--verbose`).
pub(crate) const STDERR_CAP: usize = 64 * 1024;
/// How much of stderr a TOOL_CRASHED error quotes.
pub(crate) const CRASH_STDERR: usize = 2048;

/// One discovered tool.
pub struct ExternalTool {
    pub path: PathBuf,
    pub schema: ToolSchema,
}

#[async_trait]
impl Tool for ExternalTool {
    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    fn source(&self) -> ToolSource {
        ToolSource::External(self.path.clone())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = super::params::checked(&args, &self.schema)?;
        run(&self.path, &self.schema.name, &args, ctx).await
    }
}

/// True when `name` may be a tool name: `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Reads a `--schema` answer. `file_name` names the tool when the schema does not (its
/// hyphens become underscores). The error says which field is missing or wrong.
pub(crate) fn parse_schema(text: &str, file_name: &str) -> Result<ToolSchema, String> {
    let v: Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("--schema printed invalid JSON ({e})"))?;
    let Value::Object(obj) = v else {
        return Err("--schema printed JSON that is not an object".into());
    };
    let name = match obj.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(_) => return Err("`name` is not a string".into()),
        None => file_name.replace('-', "_"),
    };
    if !valid_name(&name) {
        return Err(format!(
            "invalid name `{name}` (letters, digits, _ and -, at most 64)"
        ));
    }
    let description = match obj.get("description") {
        Some(Value::String(d)) if !d.trim().is_empty() => d.clone(),
        Some(Value::String(_)) => return Err("`description` is empty".into()),
        Some(_) => return Err("`description` is not a string".into()),
        None => return Err("--schema lacks `description`".into()),
    };
    let Some(params) = obj.get("parameters") else {
        return Err("--schema lacks `parameters`".into());
    };
    let Value::Object(params) = params else {
        return Err("`parameters` is not an object".into());
    };
    // A full JSON Schema has a string `type`; the short form maps names to objects.
    if params.get("type").is_some_and(Value::is_string) {
        return full_schema(name, description, params);
    }
    let mut parameters = Vec::new();
    for (pname, spec) in params {
        let ty = spec
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("parameter `{pname}` lacks a string `type`"))?;
        let desc = spec.get("description").and_then(Value::as_str).unwrap_or("");
        let required = spec.get("required").and_then(Value::as_bool).unwrap_or(false);
        parameters.push(ParamSpec::new(pname, ty, desc, required));
    }
    Ok(ToolSchema {
        name,
        description,
        parameters,
        json_schema: None,
    })
}

fn full_schema(name: String, description: String, schema: &Map<String, Value>) -> Result<ToolSchema, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("`parameters` is a JSON Schema whose type is not \"object\"".into());
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut parameters = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (pname, p) in props {
            let ty = match p.get("type") {
                Some(Value::String(t)) => t.clone(),
                _ => "any".to_string(),
            };
            let desc = p.get("description").and_then(Value::as_str).unwrap_or("");
            parameters.push(ParamSpec::new(
                pname,
                &ty,
                desc,
                required.contains(&pname.as_str()),
            ));
        }
    }
    Ok(ToolSchema {
        name,
        description,
        parameters,
        json_schema: Some(Value::Object(schema.clone())),
    })
}

/// Runs the tool once with `args` on stdin.
pub(crate) async fn run(
    path: &Path,
    name: &str,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let spec = Spec {
        program: path.to_path_buf(),
        args: Vec::new(),
        cwd: ctx.cwd.clone(),
        env: ctx.env.current(),
        stdin: Some(args.to_string().into_bytes()),
        stderr: StderrMode::Separate(STDERR_CAP),
        stdout_cap: ctx.max_output_size,
        stop_when_full: true,
        timeout: ctx.timeout,
        share_partial: false,
        live: process::LiveFrom::Stderr,
    };
    let finished = process::run(spec).await.map_err(|e| {
        ToolError::Crashed(format!(
            "Tool `{name}` could not be started ({}): {e}",
            path.display()
        ))
    })?;
    let stderr = finished.stderr.map(|e| e.finish().text).unwrap_or_default();
    let status = match finished.outcome {
        Outcome::TimedOut => {
            return Err(ToolError::Timeout {
                message: format!(
                    "Tool `{name}` timed out after {}s; it and every process it started were killed",
                    ctx.timeout.as_secs_f64()
                ),
                partial_output: finished.stdout.finish().text,
            });
        }
        Outcome::OutputFull => {
            return Err(ToolError::InvalidOutput(format!(
                "Tool `{name}` printed more than max_output_size ({} bytes); it was stopped and its output is not valid JSON",
                ctx.max_output_size
            )));
        }
        Outcome::Exited(status) => status,
    };
    if !status.success() {
        let how = match (status.code(), status.signal()) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {}", signal_name(s)),
            (None, None) => "an unknown status".to_string(),
        };
        let mut message = format!("Tool `{name}` crashed with {how}");
        if let Some(why) = crate::permissions::sandbox_denials::explain(&stderr, &ctx.cwd) {
            message.push_str(&format!(" ({why})"));
        }
        let quoted = shorten(&stderr, CRASH_STDERR);
        if !quoted.trim().is_empty() {
            message.push_str("; stderr:\n");
            message.push_str(quoted);
        }
        return Err(ToolError::Crashed(message));
    }
    let truncated = finished.stdout.total() > finished.stdout.len() as u64;
    let stdout = finished.stdout.finish().text;
    if truncated {
        return Err(ToolError::InvalidOutput(format!(
            "Tool `{name}` printed more than max_output_size ({} bytes); its output is not valid JSON",
            ctx.max_output_size
        )));
    }
    if stdout.trim().is_empty() {
        return Err(ToolError::InvalidOutput(format!(
            "Tool `{name}` printed nothing; it must print its result as JSON"
        )));
    }
    match serde_json::from_str::<Value>(stdout.trim()) {
        Ok(result) => {
            let summary = summarize(&result);
            let mut out = ToolOutput::new(result, summary);
            out.stderr = Some(stderr).filter(|s| !s.is_empty());
            Ok(out)
        }
        Err(e) => Err(ToolError::InvalidOutput(format!(
            "Tool `{name}` printed invalid JSON ({e}): {}",
            shorten(&stdout, 200)
        ))),
    }
}

/// The scrollback line for a result: its error, or its output's size.
fn summarize(result: &Value) -> String {
    if let Some(err) = result.get("error") {
        let text = match err {
            Value::String(s) => s.clone(),
            other => other
                .get("code")
                .or_else(|| other.get("message"))
                .and_then(Value::as_str)
                .map_or_else(|| other.to_string(), str::to_string),
        };
        return format!("error: {}", shorten(&text, 80));
    }
    match result.get("output").and_then(Value::as_str) {
        Some(o) => {
            let n = o.lines().count();
            if n == 1 {
                "1 line".into()
            } else {
                format!("{n} lines")
            }
        }
        None => "done".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_form_and_full_json_schema_are_both_read() {
        let s = parse_schema(
            r#"{"name":"weather","description":"Weather.","parameters":{"city":{"type":"string","description":"City","required":true}}}"#,
            "x",
        )
        .unwrap();
        assert_eq!(s.parameters, [ParamSpec::new("city", "string", "City", true)]);
        assert!(s.json_schema.is_none());

        let full = json!({"type":"object","properties":{"q":{"type":"object","properties":{"tags":{"type":"array","items":{"type":"integer"}},"mode":{"enum":["a","b"]}}}},"required":["q"]});
        let text = json!({"description":"Search.","parameters":full}).to_string();
        let s = parse_schema(&text, "my-search").unwrap();
        assert_eq!(s.name, "my_search", "file name with hyphens becomes underscores");
        assert_eq!(s.to_json_schema(), full, "kept intact");
        assert_eq!(s.parameters, [ParamSpec::new("q", "object", "", true)]);
    }

    #[test]
    fn bad_schemas_say_what_is_wrong() {
        let bad = [
            ("not json", "invalid JSON"),
            (r#"{"name":"a","parameters":{}}"#, "lacks `description`"),
            (r#"{"name":"a","description":"d"}"#, "lacks `parameters`"),
            (
                r#"{"name":"a b","description":"d","parameters":{}}"#,
                "invalid name",
            ),
            (
                r#"{"name":"a","description":"d","parameters":{"x":{}}}"#,
                "lacks a string `type`",
            ),
        ];
        for (text, want) in bad {
            let err = parse_schema(text, "f").unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
        assert!(valid_name(&"a".repeat(64)) && !valid_name(&"a".repeat(65)) && !valid_name(""));
    }
}
