//! Local tools the model may call: the `Tool` trait, its schema and error types.
//! One file per tool; the registry runs them and the envelope wraps their results.

pub mod bash;
pub mod discovery;
pub mod envelope;
pub(crate) mod environment;
pub(crate) mod external;
pub(crate) mod file_edit;
pub(crate) mod file_read;
pub(crate) mod file_write;
pub(crate) mod fsutil;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod html_markdown;
pub mod launcher;
pub mod leftovers;
pub(crate) mod lenient;
pub(crate) mod list_dir;
pub mod live;
pub(crate) mod marked;
pub mod mcp;
pub(crate) mod output;
pub(crate) mod params;
pub(crate) mod partial;
pub mod process;
pub mod progress;
pub(crate) mod registry;
pub(crate) mod update_plan;
pub(crate) mod walk;
pub(crate) mod web_fetch;
pub(crate) mod web_page;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

pub use envelope::{Envelope, ErrorCode};
pub use environment::EnvPolicy;
pub use registry::{Executed, Registry};

/// What every tool call may rely on.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// Relative paths resolve against this directory.
    pub cwd: PathBuf,
    /// Cap on any output, in bytes, applied while reading.
    pub max_output_size: usize,
    /// How long a tool may run before its process group is killed.
    pub timeout: Duration,
    /// Which environment variables reach tool processes.
    pub env: Arc<EnvPolicy>,
    /// The image types the model takes (none: it takes no images): an MCP tool's images
    /// of these types go to it as images, others are a line.
    pub images: &'static [&'static str],
    /// The sandbox the built-in file tools obey when they write (its mode and writable
    /// roots: the very `Confinement` tool processes get); `None`: no sandbox, or a call
    /// the user approved to run outside it.
    pub sandbox: Option<Arc<launcher::Confinement>>,
    /// Files `file_read` deny rules keep from the model: `grep` does not read them.
    pub unreadable: Option<Arc<crate::permissions::unreadable::Unreadable>>,
    /// For a file tool's call, the place the permission decision judged; the tool reads
    /// or writes exactly there, never where the path leads by the time it runs. `None`
    /// (no decision, as in `ikigai tool`): the tool resolves the path itself, once.
    pub pinned: Option<Pinned>,
}

/// The path a permission decision judged for a file tool: the `path` argument as given
/// and where it led then — absolute, every link followed, no `..` (`None`: nowhere, a
/// link loop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    pub given: String,
    pub real: Option<PathBuf>,
}

impl ToolContext {
    /// A context with the default environment policy (provider keys and secret-looking
    /// variables removed).
    pub fn new(cwd: PathBuf, max_output_size: usize, timeout: Duration) -> Self {
        ToolContext {
            cwd,
            max_output_size,
            timeout,
            env: Arc::new(EnvPolicy::default()),
            images: &[],
            sandbox: None,
            unreadable: None,
            pinned: None,
        }
    }

    /// The context a config asks for, keeping `key_vars` (`provider::key_vars`) from
    /// every tool.
    pub fn from_config(cwd: PathBuf, config: &crate::config::Config, key_vars: Vec<String>) -> Self {
        ToolContext {
            cwd,
            max_output_size: config.max_output_size,
            timeout: Duration::from_secs(config.tool_timeout_secs),
            env: Arc::new(EnvPolicy::from_config(config, key_vars)),
            images: &[],
            sandbox: None,
            unreadable: None,
            pinned: None,
        }
    }

    /// This context with the built-in file tools' writes held to `sandbox` (the one
    /// installed for tool processes, `launcher::sandbox()`; `None`: unconfined).
    pub fn with_sandbox(mut self, sandbox: Option<Arc<launcher::Confinement>>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// This context with the files `file_read` deny rules cover kept from `grep`.
    pub fn with_unreadable(mut self, unreadable: Option<crate::permissions::unreadable::Unreadable>) -> Self {
        self.unreadable = unreadable.map(Arc::new);
        self
    }

    /// Whether a built-in tool may write `real` (where `given`, absolute, leads: see
    /// `fsutil::place`) under the sandbox; `Err` says what the sandbox denied, worded like
    /// a command's denial.
    pub(crate) fn may_write(&self, real: &Path, given: &Path) -> Result<(), String> {
        match &self.sandbox {
            Some(c) => crate::permissions::sandbox_writes::check_resolved(c, real, given),
            None => Ok(()),
        }
    }
}

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

/// Where a tool comes from, for `/tools`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolSource {
    Builtin,
    External(PathBuf),
    /// A tool of the MCP server of this name.
    Mcp(String),
}

/// A tool the model may call. Cancellation is by dropping the future: a tool that owns a
/// process must kill its process group when dropped.
#[async_trait]
pub trait Tool: Send + Sync {
    fn schema(&self) -> ToolSchema;

    fn source(&self) -> ToolSource {
        ToolSource::Builtin
    }

    /// Runs with the parsed arguments object.
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}
