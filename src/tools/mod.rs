//! Local tools the model may call: the `Tool` trait, the context a call runs in, one file
//! per tool, the registry that runs them, processes, the launcher and MCP. What every
//! layer may know about a tool (its schema, result, envelope and `ToolMeta`) is the
//! vocabulary in `crate::tool_vocab`, re-exported here for the tools' own use.

pub mod bash;
pub mod caller;
pub mod discovery;
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
pub(crate) mod skill;
pub(crate) mod update_plan;
pub(crate) mod walk;
pub(crate) mod web_fetch;
pub(crate) mod web_page;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

pub use crate::policy::Pinned;
pub use crate::tool_vocab::envelope;
pub use crate::tool_vocab::files::{FileSeam, TextFiles};
pub use crate::tool_vocab::{Envelope, ErrorCode, ParamSpec, ToolError, ToolMeta, ToolOutput, ToolSchema};
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
    /// Text files a front end serves in place of the file system (an editor's unsaved
    /// buffers): `file_read`, `file_write` and `file_edit` go through them for a path in
    /// the working directory, after the permission decision and the sandbox's check.
    pub files: FileSeam,
    /// The session and call this call belongs to (set by the agent's turn; `None` when a
    /// tool runs on its own, as in `ikigai tool`).
    pub caller: Option<caller::Caller>,
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
            files: FileSeam::default(),
            caller: None,
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
            files: FileSeam::default(),
            caller: None,
        }
    }

    /// This context with the built-in file tools' writes held to `sandbox` (the one
    /// installed for tool processes, `launcher::sandbox()`; `None`: unconfined).
    pub fn with_sandbox(mut self, sandbox: Option<Arc<launcher::Confinement>>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// This context with its text served through `files` when the front end fills it.
    pub fn with_files(mut self, files: FileSeam) -> Self {
        self.files = files;
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

    /// What the tool declares about itself (`tool_vocab::meta`): every built-in tool
    /// returns its entry of `meta::BUILTINS`; a tool that is not built in declares nothing.
    fn meta(&self) -> Option<&'static ToolMeta> {
        None
    }

    /// Runs with the parsed arguments object.
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}
