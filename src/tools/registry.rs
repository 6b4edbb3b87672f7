//! The tool registry: finds a tool by name, parses arguments, runs it and wraps the result.
//! Knows no individual tool beyond the list in `Registry::builtin`.

use std::sync::Arc;

use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolSchema, envelope};

/// One finished tool call: what the scrollback shows and what the model gets.
#[derive(Clone, Debug, PartialEq)]
pub struct Executed {
    pub summary: String,
    /// The envelope, as JSON.
    pub envelope: Value,
    pub success: bool,
}

/// The set of tools offered to the model, in a stable order.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    /// `tools[i]`'s name, so lookups do not rebuild schemas.
    names: Vec<String>,
}

impl Registry {
    pub fn empty() -> Self {
        Self::default()
    }

    /// Every built-in tool, in the order offered to the model.
    pub fn builtin() -> Self {
        let mut r = Self::empty();
        r.register(Arc::new(super::glob::Glob));
        r.register(Arc::new(super::file_read::FileRead));
        r.register(Arc::new(super::grep::Grep));
        r.register(Arc::new(super::file_write::FileWrite));
        r.register(Arc::new(super::file_edit::FileEdit));
        r.register(Arc::new(super::list_dir::ListDir));
        r.register(Arc::new(super::bash::Bash));
        r
    }

    /// Adds a tool; one of the same name is replaced.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.schema().name;
        if let Some(i) = self.names.iter().position(|n| *n == name) {
            self.names.remove(i);
            self.tools.remove(i);
        }
        self.names.push(name);
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.names.iter().position(|n| n == name).map(|i| &self.tools[i])
    }

    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools.iter().map(|t| t.schema()).collect()
    }

    /// Runs `name` with the model's raw `arguments` string. Never fails: every problem
    /// becomes an error envelope the model can read.
    pub async fn execute(&self, name: &str, arguments: &str, ctx: &ToolContext) -> Executed {
        let result = match self.get(name) {
            None => Err(ToolError::NotFound(format!("Unknown tool: {name}"))),
            Some(tool) => match parse_arguments(arguments) {
                Ok(args) => tool.call(args, ctx).await,
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(out) => Executed {
                success: out.is_success(),
                envelope: envelope::success(&out),
                summary: out.summary,
            },
            Err(err) => Executed {
                summary: format!("{}: {err}", err.code()),
                envelope: envelope::failure(&err),
                success: false,
            },
        }
    }
}

/// Parses the model's arguments; an empty string means no arguments.
pub fn parse_arguments(arguments: &str) -> Result<Value, ToolError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(ToolError::InvalidParams(format!(
            "arguments must be a JSON object, got: {other}"
        ))),
        Err(e) => Err(ToolError::InvalidParams(format!(
            "arguments are not valid JSON ({e}): {arguments}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_offers_every_tool_with_a_valid_schema() {
        let r = Registry::builtin();
        let names: Vec<String> = r.schemas().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "glob",
                "file_read",
                "grep",
                "file_write",
                "file_edit",
                "list_dir",
                "bash"
            ]
        );
        for s in r.schemas() {
            let js = s.to_json_schema();
            assert_eq!(js["type"], "object");
            for req in js["required"].as_array().unwrap() {
                assert!(
                    js["properties"].get(req.as_str().unwrap()).is_some(),
                    "{}",
                    s.name
                );
            }
            let first = s.description.lines().next().unwrap();
            assert!(first.ends_with('.') && first.len() < 80, "{}: {first}", s.name);
        }
    }

    #[test]
    fn registering_a_name_again_replaces_that_tool_in_place_of_the_old() {
        let mut r = Registry::builtin();
        r.register(Arc::new(super::super::glob::Glob));
        assert_eq!(r.tools().len(), 7);
        assert_eq!(
            r.schemas().last().map(|s| s.name.clone()).as_deref(),
            Some("glob")
        );
        for name in ["glob", "bash", "file_read"] {
            assert_eq!(r.get(name).map(|t| t.schema().name).as_deref(), Some(name));
        }
        assert!(r.get("nope").is_none());
    }

    #[test]
    fn bad_arguments_are_invalid_params() {
        assert_eq!(parse_arguments("").unwrap(), serde_json::json!({}));
        assert_eq!(parse_arguments("[]").unwrap_err().code(), "INVALID_PARAMS");
        assert_eq!(parse_arguments("{").unwrap_err().code(), "INVALID_PARAMS");
    }
}
