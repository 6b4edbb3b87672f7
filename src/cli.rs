//! Command-line arguments (clap derive structs only; no behaviour).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// ikigai: a terminal AI coding agent. Run it in a project folder and chat; the model
/// uses local tools (find, read, search, write, edit, shell) and ikigai shows every call.
#[derive(Debug, Parser)]
#[command(name = "ikigai", version, about, long_about = None)]
pub struct Cli {
    /// Run one user turn with this prompt, print the answer and exit.
    #[arg(short = 'p', long = "prompt", value_name = "TEXT")]
    pub prompt: Option<String>,

    /// Provider: a preset or a [providers.NAME] section (help text: `provider_help`).
    #[arg(long, value_name = "NAME", help = provider_help())]
    pub provider: Option<String>,

    /// Model name, PROVIDER/MODEL, or a .gguf file to run in-process with no server and
    /// no key (overrides config and IKIGAI_MODEL).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Base URL of the provider's API, e.g. http://127.0.0.1:8080/v1 for a local server.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Config file (default: $IKIGAI_CONFIG, else $XDG_CONFIG_HOME/ikigai/config.toml, else
    /// ~/.config/ikigai/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Most tool calls the model may make in one user turn.
    #[arg(long, value_name = "N")]
    pub max_tool_turns: Option<u32>,

    /// How the model calls tools: `native` (the API's tool calls) or `text` (the
    /// SYSTEM.EXEC protocol in plain text, for models without tool calling).
    #[arg(long, value_name = "native|text", value_parser = ["native", "text"])]
    pub tool_protocol: Option<String>,

    /// Approval mode: `auto` (every call runs, except what a deny rule forbids), `ask`
    /// (read-only calls and edits in the working directory run, the rest asks), `read-only`
    /// (nothing that writes runs). Default: ask in the TUI, auto when scripted.
    #[arg(long, value_enum, value_name = "MODE")]
    pub approval: Option<ApprovalArg>,

    /// Print one JSON object per line for every event (scripted mode).
    #[arg(long)]
    pub json: bool,

    /// Answer approval questions from stdin, one line after each `approval_requested`
    /// event (`yes`; anything else, or the end of stdin, refuses); stdin is then not
    /// attached to the prompt. How `ikigai mcp serve` relays its client's answers.
    #[arg(long, hide = true, requires = "json")]
    pub answers_on_stdin: bool,

    /// Show tool results in full instead of abbreviating after 50 lines.
    #[arg(short, long)]
    pub verbose: bool,

    /// Resume a stored session by id (a unique prefix is enough).
    #[arg(long, value_name = "ID", conflicts_with = "continue_session")]
    pub resume: Option<String>,

    /// Resume the newest session of this working directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// The OS sandbox of tool processes (overrides `sandbox` in the config): `off`,
    /// `workspace-write` (writes only in this folder, the temporary folder and
    /// writable_roots) or `read-only`. Linux only.
    #[arg(long, value_enum, value_name = "MODE", global = true)]
    pub sandbox: Option<crate::policy::sandbox::SandboxMode>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List stored sessions, newest first (`sessions rm ID` deletes one).
    Sessions(SessionsArgs),
    /// Print a stored session: a readable transcript, or its raw events.
    Export(ExportArgs),
    /// List, describe or run a tool through the external-tool protocol.
    Tool(ToolArgs),
    /// The configured MCP servers: `mcp list` (status, tool count), `mcp get NAME` (tools
    /// with their schemas). Each server is started, asked, and closed.
    Mcp(McpArgs),
    /// Trust a folder (default: this one) and the folders under it: its project tools
    /// (.ikigai/tools) may then run. `--list` shows trusted folders, `--revoke` undoes.
    Trust(TrustArgs),
    /// Run one command under the configured sandbox (or `--mode`), to try a policy by hand:
    /// `ikigai sandbox --mode read-only -- touch x`.
    ///
    /// It prints what the sandbox covers on this system. Besides writes (Landlock) and the
    /// network (seccomp): a private mount table, read-only outside the writable folders,
    /// so no chmod, chown, touch -d, extended attributes or links there either — it needs
    /// root or user namespaces; where neither is available that is not covered, and the
    /// command says so (set-user/group-ID bits stay refused everywhere); no device ioctls
    /// (Landlock ABI 5) and no signals to other processes (ABI 6) where the kernel has
    /// them; other processes' memory and environment unreadable; no terminal (a session of
    /// its own; typing into a terminal with TIOCSTI is refused); root keeps only ordinary
    /// capabilities.
    Sandbox(SandboxArgs),
    /// Check what a call would be allowed to do (`permissions check 'bash(rm -rf build)'`),
    /// or list the rules in force and the remembered answers (`permissions list`).
    Permissions(PermissionsArgs),
    /// Put back the files the last turn (or the last N turns) of this folder's newest
    /// session changed, as `/undo` does; `--list` shows the turns that can be undone.
    Undo(UndoArgs),
    /// Speak the Agent Client Protocol on stdin/stdout, for an editor (Zed, JetBrains,
    /// Neovim) that starts ikigai as its agent. Serves the folder it is started in.
    Acp,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to stdout; `make install` installs it.
    #[command(hide = true)]
    Man,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: McpAction,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Every configured server: transport, status, tool count (and why one failed).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One server's tools, with their descriptions and input schemas.
    Get {
        /// The server's name (its `[mcp_servers.NAME]` section).
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Be an MCP server on stdin/stdout for another agent or program: its tools `ikigai`
    /// (run a prompt in a folder, get the answer and a session id) and `ikigai_reply`
    /// (continue a session). Each turn runs as `ikigai -p` would, in that folder.
    Serve {
        /// What the turns may do: `read-only` (default: nobody watches the server),
        /// `ask` (reads and edits inside the folder run; what would ask is refused), or
        /// `auto` (everything a deny rule does not forbid).
        #[arg(long, value_enum, value_name = "MODE", default_value = "read-only")]
        mode: ApprovalArg,
        /// Offer ikigai's built-in tools too (glob, grep, file_read, list_dir, file_write,
        /// file_edit, bash, web_fetch), each call decided by the permission engine in
        /// `--mode` and run in this folder under the sandbox; what would ask is refused.
        #[arg(long)]
        tools: bool,
        /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio; ADDR is a loopback
        /// address and port (`127.0.0.1:8765`; port 0 picks one). Every request needs the
        /// bearer token printed on stderr at start (or the one in $IKIGAI_MCP_TOKEN).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The folder (default: the one whose settings apply here: the current one, or the
    /// nearest folder above it up to the git root that holds `.ikigai/`).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// List the trusted folders.
    #[arg(long, conflicts_with_all = ["dir", "revoke"])]
    pub list: bool,

    /// Stop trusting the folder.
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// The sandbox mode (default: the configured `sandbox`).
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<crate::policy::sandbox::SandboxMode>,

    /// The command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ToolArgs {
    /// List every tool.
    #[arg(long)]
    pub list: bool,

    /// Print the tool's schema instead of running it.
    #[arg(long, requires = "name")]
    pub schema: bool,

    /// The tool to run; its JSON arguments are read from stdin.
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// How many turns to go back.
    #[arg(value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub turns: u32,

    /// Overwrite files that were changed since ikigai's turn left them.
    #[arg(long)]
    pub force: bool,

    /// List the turns that can be undone instead.
    #[arg(long, conflicts_with = "force")]
    pub list: bool,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,

    /// Every folder's sessions (default: this folder's, then how many the others have).
    #[arg(long, conflicts_with = "here")]
    pub all: bool,

    /// Only this folder's sessions.
    #[arg(long)]
    pub here: bool,

    /// At most N sessions, newest first (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,

    #[command(subcommand)]
    pub action: Option<SessionsAction>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Delete a session and its events (refused while another ikigai process uses it).
    Rm {
        /// The session id (a unique prefix is enough).
        id: String,
    },
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The session id (a unique prefix is enough).
    pub id: String,

    /// md: a readable transcript with every tool call and result; jsonl: the raw events.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ExportFormatArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalArg {
    Auto,
    Ask,
    ReadOnly,
}

impl From<ApprovalArg> for crate::policy::Mode {
    fn from(a: ApprovalArg) -> Self {
        match a {
            ApprovalArg::Auto => crate::policy::Mode::Auto,
            ApprovalArg::Ask => crate::policy::Mode::Ask,
            ApprovalArg::ReadOnly => crate::policy::Mode::ReadOnly,
        }
    }
}

#[derive(Debug, Args)]
pub struct PermissionsArgs {
    #[command(subcommand)]
    pub action: PermissionsAction,
}

#[derive(Debug, Subcommand)]
pub enum PermissionsAction {
    /// Print the decision for one call and the rule or mode that made it, e.g.
    /// `ikigai permissions check 'bash(rm -rf build)'`, `'file_edit(src/main.rs)'`,
    /// `'github__create_issue({"repo":"me/x"})'`.
    Check {
        /// The call: `TOOL(COMMAND)` for bash, `TOOL(PATH)` for file tools,
        /// `web_fetch(URL)`, `TOOL(ARGUMENTS JSON)` for others.
        call: String,
    },
    /// The rules in force here and this project's remembered answers.
    List,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormatArg {
    Md,
    Jsonl,
}

/// The `--provider` help, naming the presets from their one table.
fn provider_help() -> String {
    format!(
        "Provider: a preset ({}), `local` (the in-process engine: a .gguf file as --model) or a [providers.NAME] section (overrides config and IKIGAI_PROVIDER).",
        crate::provider::help::preset_names()
    )
}
