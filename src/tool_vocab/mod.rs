//! What every layer may know about a tool, without the tools themselves: its schema
//! (`ToolSchema`, `ParamSpec`), its own result (`ToolOutput`) or failure (`ToolError`), the
//! envelope the model gets (`envelope`: `Envelope`, `ErrorCode`, the interrupted result),
//! what each built-in tool declares about itself (`meta`: `ToolMeta`), and the seam through
//! which a front end may serve the file tools' text (`files`: `FileSeam`, a trait and its
//! slot). The provider, the store, the permission engine, checkpoints and the front ends
//! import this, never `crate::tools`. Data and its serialisation only: runs, reads and
//! decides nothing.

pub mod envelope;
pub mod files;
pub mod meta;

use serde_json::{Map, Value, json};

pub use envelope::{Envelope, ErrorCode};
pub use meta::{ToolKind, ToolMeta};

/// One parameter of a tool, as the external-tool protocol describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: String,
    /// JSON type: "string", "integer", "number", "boolean", "array" or "object".
    pub param_type: String,
    pub description: String,
    pub required: bool,
}

impl ParamSpec {
    pub fn new(name: &str, param_type: &str, description: &str, required: bool) -> Self {
        ParamSpec {
            name: name.to_string(),
            param_type: param_type.to_string(),
            description: description.to_string(),
            required,
        }
    }
}

/// A tool's name, description and parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// The top-level parameters (for display and argument checks). Lossy for a full JSON
    /// Schema: `json_schema` keeps that intact.
    pub parameters: Vec<ParamSpec>,
    /// A full JSON Schema of the arguments object, when the tool declared one; it is what
    /// the model gets, untouched (nested objects, enums, array items).
    pub json_schema: Option<Value>,
}

impl ToolSchema {
    /// The protocol form: `{name, description, parameters: {param: {type, description, required}}}`,
    /// or `parameters` as the tool's own JSON Schema.
    pub fn to_protocol_json(&self) -> Value {
        if let Some(schema) = &self.json_schema {
            return json!({"name": self.name, "description": self.description, "parameters": schema});
        }
        let mut params = Map::new();
        for p in &self.parameters {
            params.insert(
                p.name.clone(),
                json!({"type": p.param_type, "description": p.description, "required": p.required}),
            );
        }
        json!({"name": self.name, "description": self.description, "parameters": params})
    }

    /// JSON Schema of the arguments object, as model APIs take it.
    pub fn to_json_schema(&self) -> Value {
        if let Some(schema) = &self.json_schema {
            return schema.clone();
        }
        let mut props = Map::new();
        for p in &self.parameters {
            let mut prop = json!({"type": p.param_type, "description": p.description});
            if p.param_type == "array" {
                prop["items"] = json!({"type": "string"});
            }
            props.insert(p.name.clone(), prop);
        }
        let required: Vec<&str> = self
            .parameters
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        json!({"type": "object", "properties": props, "required": required})
    }
}

/// A tool's own result: `result` is the JSON object the model sees inside the envelope
/// (`{"output": …}` or `{"error": …}`); `summary` is the human line for the scrollback.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    pub result: Value,
    pub summary: String,
    /// What an external tool wrote on stderr (capped): for `--verbose`, never the model.
    pub stderr: Option<String>,
    /// Images for the model (an MCP tool's image content), after the result.
    pub images: Vec<crate::message::Image>,
}

impl ToolOutput {
    pub fn new(result: Value, summary: impl Into<String>) -> Self {
        ToolOutput {
            result,
            summary: summary.into(),
            stderr: None,
            images: Vec::new(),
        }
    }

    /// The operation failed (missing file, bad pattern…): `{"error": message}`.
    pub fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        ToolOutput {
            summary: format!("error: {message}"),
            result: json!({ "error": message }),
            stderr: None,
            images: Vec::new(),
        }
    }

    /// A write the sandbox denied (`why`: `sandbox: …`): an error that also carries the
    /// `sandbox` field a command's denied result has, so the call is asked again to run
    /// outside the sandbox like a command would be.
    pub(crate) fn sandbox_denied(why: String) -> Self {
        ToolOutput {
            summary: "denied by the sandbox".to_string(),
            result: json!({ "error": why, "sandbox": why }),
            stderr: None,
            images: Vec::new(),
        }
    }

    /// True unless the result is an operation error.
    pub fn is_success(&self) -> bool {
        self.result.get("error").is_none()
    }
}

/// The tool itself failed; the model gets `tool_success: false` with the code.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// Ran past `tool_timeout_secs`; carries what it printed before. Not retryable.
    #[error("{message}")]
    Timeout { message: String, partial_output: String },
    /// The tool crashed or could not start. Not retryable.
    #[error("{0}")]
    Crashed(String),
    /// The tool printed something that is not its result JSON. Not retryable.
    #[error("{0}")]
    InvalidOutput(String),
    /// Missing, wrongly typed or unparsable arguments; the message names the parameter.
    #[error("{0}")]
    InvalidParams(String),
    /// No tool of that name.
    #[error("{0}")]
    NotFound(String),
}

impl ToolError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::Timeout { .. } => ErrorCode::ToolTimeout,
            ToolError::Crashed(_) => ErrorCode::ToolCrashed,
            ToolError::InvalidOutput(_) => ErrorCode::InvalidOutput,
            ToolError::InvalidParams(_) => ErrorCode::InvalidParams,
            ToolError::NotFound(_) => ErrorCode::ToolNotFound,
        }
    }
}
