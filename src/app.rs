//! Wires config, provider, tools, store and one front end together for one run.
//! Front ends return their own errors; `AppError` carries them with their type, and
//! `main.rs` prints it and picks the exit code.

use std::io::Read;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

mod acp;
mod skills;

use crate::agent::{AgentSetup, Resume, Resumed};
use crate::config::{Config, ConfigError};
use crate::permissions::trust::TrustError;
use crate::protocol::{Event, NoticeLevel, Op};
use crate::provider::{Resolved, SetupError, Spec};
use crate::store::{Sessions, StoreError};
use crate::tools::Registry;
use crate::ui::mcp::McpCmdError;
use crate::ui::plain::{Input, PlainError, PlainOptions};
use crate::ui::sessions::SessionsError;
use crate::ui::tool_cmd::ToolCmdError;
use crate::ui::trust_cmd::TrustCmdError;
use crate::ui::tui::{TuiContext, TuiError};

/// Why a run failed, each failure with its own type until `main.rs` prints it.
/// `exit_code` maps it: 2 for usage and configuration, 1 otherwise.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The provider the settings name cannot be set up.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The command line or the input was wrong.
    #[error("{0}")]
    Usage(String),
    /// `--resume ID` or `-c` found no session to continue.
    #[error("{0}")]
    NoSession(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Plain(#[from] PlainError),
    #[error(transparent)]
    Tui(#[from] TuiError),
    #[error(transparent)]
    Acp(#[from] crate::ui::acp::AcpError),
    #[error(transparent)]
    ToolCmd(#[from] ToolCmdError),
    #[error(transparent)]
    Sessions(#[from] SessionsError),
    /// `ikigai undo` did not undo (nothing to undo, a file changed since).
    #[error(transparent)]
    Undo(#[from] crate::ui::undo_cmd::UndoCmdError),
    #[error(transparent)]
    Mcp(#[from] McpCmdError),
    /// `ikigai mcp serve` could not serve.
    #[error(transparent)]
    McpServe(#[from] crate::ui::mcp_serve::ServeError),
    #[error(transparent)]
    TrustCmd(#[from] TrustCmdError),
    /// The trust list could not be read or written when the user answered the question.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The configured sandbox cannot be set up (or enforced by this kernel).
    #[error(transparent)]
    Sandbox(#[from] crate::permissions::sandbox::SandboxError),
}

impl AppError {
    pub fn exit_code(&self) -> u8 {
        match self {
            AppError::Config(_)
            | AppError::Setup(_)
            | AppError::Usage(_)
            | AppError::NoSession(_)
            // An id that names no session (`sessions rm`, `export`) is the user's to fix.
            | AppError::Sessions(SessionsError::Store(StoreError::NotFound(_) | StoreError::Ambiguous { .. }))
            | AppError::ToolCmd(ToolCmdError::Usage(_))
            | AppError::Mcp(McpCmdError::Usage(_))
            // A folder that is not one is the command line's fault.
            | AppError::TrustCmd(TrustCmdError::Trust(
                TrustError::Folder { .. } | TrustError::NotUtf8(_),
            ))
            | AppError::Sandbox(_) => 2,
            _ => 1,
        }
    }

    /// Whoever read our output stopped reading (`ikigai -p … | head`).
    pub fn is_broken_pipe(&self) -> bool {
        let io = match self {
            AppError::Io(e)
            | AppError::Plain(PlainError::Io(e))
            | AppError::Tui(TuiError::Io(e))
            | AppError::ToolCmd(ToolCmdError::Io(e))
            | AppError::Sessions(SessionsError::Io(e))
            | AppError::Mcp(McpCmdError::Io(e))
            | AppError::TrustCmd(TrustCmdError::Io(e)) => e,
            _ => return false,
        };
        io.kind() == std::io::ErrorKind::BrokenPipe
    }
}

/// The commands that need no configuration (completion scripts, the manual page, the
/// trust list): answered from the command line alone, before anything is loaded. `None`
/// for every other command.
pub fn run_without_config(cli: &crate::cli::Cli) -> Option<Result<u8, AppError>> {
    use crate::cli::Command;
    match &cli.command {
        Some(Command::Completions(args)) => {
            Some(crate::ui::shell::completions(args.shell).map_err(AppError::from))
        }
        Some(Command::Man) => Some(crate::ui::shell::man_page().map_err(AppError::from)),
        Some(Command::Trust(args)) => Some(crate::ui::trust_cmd::run(args).map_err(AppError::from)),
        _ => None,
    }
}

/// The settings of one run: the loaded configuration (never changed after loading) and
/// what its provider settings resolve to.
pub struct Loaded {
    pub config: Config,
    pub resolved: Resolved,
}

/// Loads and resolves the settings the command line asks for, and installs the redactor
/// built from them. Synchronous: the binary calls it before its runtime starts.
pub fn load_config(cli: &crate::cli::Cli) -> Result<Loaded, AppError> {
    let overrides = crate::config::Overrides {
        config_path: cli.config.clone(),
        provider: cli.provider.clone(),
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        max_tool_turns: cli.max_tool_turns,
        tool_protocol: cli
            .tool_protocol
            .as_deref()
            .and_then(crate::config::Protocol::parse),
        sandbox: match &cli.command {
            Some(crate::cli::Command::Sandbox(args)) if args.mode.is_some() => args.mode,
            _ => cli.sandbox,
        },
        approval: cli.approval.map(Into::into),
    };
    let mut config = crate::config::Config::load(&overrides)?;
    add_project_mcp_servers(&mut config)?;
    let resolved = crate::provider::resolve(&config, &crate::provider::env_key)?;
    crate::redact::install(Arc::new(config.redactor(&resolved.key_vars)));
    install_sandbox(cli, &config)?;
    Ok(Loaded { config, resolved })
}

/// Checks the sandbox against this kernel and installs it for every tool process, for the
/// commands that run tools (chat, `tool`, `sandbox`): refused here, before anything runs,
/// when it cannot be enforced.
fn install_sandbox(cli: &crate::cli::Cli, config: &Config) -> Result<(), AppError> {
    use crate::cli::Command;
    if !matches!(
        cli.command,
        None | Some(Command::Tool(_) | Command::Sandbox(_) | Command::Acp)
    ) {
        return Ok(());
    }
    let cwd = std::env::current_dir()?;
    let env = |k: &str| crate::environ::var(k);
    crate::permissions::sandbox::install(&config.sandbox, &cwd, &env)?;
    if crate::permissions::sandbox_in_force::sandbox().is_some()
        && env(crate::permissions::sandbox::PRETEND_NO_NAMESPACES_VAR).is_some()
    {
        crate::tools::launcher::deny_private_mounts("user namespaces are not available here (pretended)");
    }
    Ok(())
}

/// Whether environment variable `name` holds a secret under these settings (a provider
/// key, what the tool filter removes, the database URL): ikigai keeps it out of its own
/// environment block.
pub fn is_secret_var(loaded: &Loaded, name: &str) -> bool {
    crate::tools::EnvPolicy::from_config(&loaded.config, loaded.resolved.key_vars.clone()).is_secret(name)
}

/// The session's system prompt (the configured one, else the default for `cwd` begun on
/// `date`, with every AGENTS.md level; either with the skills' listing), its environment
/// (where it runs and the date, placed by the provider layer; none with a configured
/// prompt) and the instruction files it carries, for `/memory`; skipped files are told as
/// notices. A configured key's value never goes out in them.
fn system_prompt(
    config: &Config,
    cwd: &std::path::Path,
    date: &str,
    skills: &crate::skills::Skills,
    events_tx: &tokio::sync::mpsc::UnboundedSender<Event>,
) -> Prompt {
    let listing = skills.listing();
    let (text, environment, instructions) = match config.system_prompt.clone() {
        // A configured prompt gets the skills' listing after it.
        Some(p) => (format!("{p}{listing}"), String::new(), Vec::new()),
        None => {
            let env = |k: &str| crate::environ::var(k);
            let global = crate::paths::config_home(&env).map(|d| d.join("ikigai"));
            let p = crate::agent::prompt::default_prompt(cwd, global.as_deref(), date, &listing);
            for text in p.notices {
                let _ = events_tx.send(Event::notice(NoticeLevel::Warning, text));
            }
            let files = p
                .files
                .iter()
                .map(crate::agent::instructions::Instruction::line)
                .collect();
            (p.text, p.environment, files)
        }
    };
    let scrub = |t: &str| crate::redact::global().scrub(t).into_owned();
    Prompt {
        text: scrub(&text),
        environment: scrub(&environment),
        instructions,
    }
}

/// What `system_prompt` made for a session.
struct Prompt {
    text: String,
    environment: String,
    instructions: Vec<String>,
}

/// The options each turn of `ikigai mcp serve` runs with: the server's own settings
/// from its command line, and its approval mode.
fn serve_args(cli: &crate::cli::Cli, mode: crate::cli::ApprovalArg) -> Vec<String> {
    let mut v = Vec::new();
    let mut opt = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            v.extend([name.to_string(), value]);
        }
    };
    opt("--config", cli.config.as_ref().map(|p| p.display().to_string()));
    opt("--provider", cli.provider.clone());
    opt("--model", cli.model.clone());
    opt("--base-url", cli.base_url.clone());
    opt("--max-tool-turns", cli.max_tool_turns.map(|n| n.to_string()));
    opt("--tool-protocol", cli.tool_protocol.clone());
    opt(
        "--sandbox",
        cli.sandbox
            .and_then(|m| clap::ValueEnum::to_possible_value(&m).map(|p| p.get_name().to_string())),
    );
    let mode = clap::ValueEnum::to_possible_value(&mode).map(|p| p.get_name().to_string());
    opt("--approval", mode);
    v
}

/// Runs what the command line asks for with the settings `load_config` gave; returns the
/// exit code for success paths.
pub async fn run(cli: crate::cli::Cli, loaded: Loaded) -> Result<u8, AppError> {
    use crate::cli::Command;
    let Loaded { config, resolved } = loaded;
    // What a killed ikigai left running is killed now; our own calls are recorded.
    let env = |k: &str| crate::environ::var(k);
    if let Some(data) = crate::paths::data_home(&env) {
        crate::tools::leftovers::install(crate::tools::leftovers::default_dir(&data.join("ikigai")));
        crate::tools::leftovers::sweep();
    }
    match &cli.command {
        Some(Command::Tool(args)) => Ok(crate::ui::tool_cmd::run(args, &config).await?),
        Some(Command::Mcp(args)) => {
            let (get, json) = match &args.action {
                crate::cli::McpAction::List { json } => (None, *json),
                crate::cli::McpAction::Get { name, json } => (Some(name.as_str()), *json),
                crate::cli::McpAction::Serve { mode } => {
                    let serve = crate::ui::mcp_serve::Serve {
                        config,
                        args: serve_args(&cli, *mode),
                        cwd: std::env::current_dir()?,
                    };
                    return Ok(crate::ui::mcp_serve::run(serve).await?);
                }
            };
            let cwd = std::env::current_dir()?;
            Ok(crate::ui::mcp::run(&config, cwd, get, json).await?)
        }
        Some(Command::Sessions(args)) => sessions(args, &config).await,
        Some(Command::Undo(args)) => {
            let cwd = std::env::current_dir()?;
            Ok(crate::ui::undo_cmd::run(args, &config, cwd).await?)
        }
        Some(Command::Sandbox(args)) => Ok(crate::ui::sandbox_cmd::run(&args.command, &config).await?),
        Some(Command::Export(args)) => {
            let format = match args.format {
                crate::cli::ExportFormatArg::Md => crate::ui::sessions::ExportFormat::Markdown,
                crate::cli::ExportFormatArg::Jsonl => crate::ui::sessions::ExportFormat::Jsonl,
            };
            let r = crate::ui::sessions::export(&config, &args.id, format).await;
            r.map_err(AppError::from)
        }
        // Answered by `run_without_config`.
        Some(Command::Permissions(args)) => {
            let cwd = std::env::current_dir()?;
            crate::ui::permissions_cmd::run(&args.action, &config, &cwd).map_err(|e| match e {
                crate::ui::permissions_cmd::PermissionsCmdError::Usage(m) => AppError::Usage(m),
                crate::ui::permissions_cmd::PermissionsCmdError::Io(e) => AppError::Io(e),
            })
        }
        Some(Command::Completions(_) | Command::Man | Command::Trust(_)) => Ok(0),
        Some(Command::Acp) => acp::run(config, resolved).await,
        None => chat(&cli, config, resolved).await,
    }
}

async fn sessions(args: &crate::cli::SessionsArgs, config: &Config) -> Result<u8, AppError> {
    use crate::cli::SessionsAction;
    let r = match &args.action {
        None => {
            let scope = match (args.all, args.here) {
                (true, _) => crate::ui::sessions::Scope::All,
                (false, true) => crate::ui::sessions::Scope::Here,
                (false, false) => crate::ui::sessions::Scope::HereThenCount,
            };
            crate::ui::sessions::list(config, args.json, scope, args.limit).await
        }
        Some(SessionsAction::Rm { id }) => crate::ui::sessions::remove(config, id).await,
    };
    r.map_err(AppError::from)
}

/// Chat mode: the TUI when stdin and stdout are terminals and no -p was given, else the
/// scripted front end.
async fn chat(cli: &crate::cli::Cli, mut config: Config, resolved: Resolved) -> Result<u8, AppError> {
    use std::io::IsTerminal;
    if cli.prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(AppError::Usage("the prompt given with -p is empty".into()));
    }
    let cwd = std::env::current_dir()?;
    let interactive =
        cli.prompt.is_none() && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let Resolved { spec, key_vars } = resolved;
    let discovery = crate::tools::discovery::DiscoverySpec::from_config(&config, &cwd, key_vars.clone());
    use crate::permissions::trust::State;
    // The folder whose `.ikigai/` applies here (the repository's root, run from a
    // subfolder) and its trust, read once here: each read hashes the project's settings.
    let root = crate::paths::settings_root(&cwd, &|k| crate::environ::var(k));
    let mut trust = crate::permissions::trust::state(&root);
    // Asked once, before anything runs: the TUI only; scripted runs skip them with a notice.
    if interactive {
        let untrusted = discovery.untrusted_tools();
        let settings = match trust {
            State::Trusted => Vec::new(),
            _ => untrusted_settings(&root),
        };
        if !untrusted.is_empty() || !settings.is_empty() {
            use crate::ui::tui::trust_ask::{Answer, Question, ask};
            let home = crate::environ::var("HOME");
            let question = Question {
                cwd: &root,
                tools: &untrusted,
                settings: &settings,
                changed: trust == State::Changed,
            };
            match ask(&question, home.as_deref())? {
                // Discovery reads the trust list: from now on it says trusted.
                Answer::Trust => {
                    let store = crate::permissions::trust::Store::default_location()?;
                    store.trust(&root)?;
                    trust = State::Trusted;
                    // The project's own MCP servers come with the trust, this run already
                    // (settings read now from the project's file, as at load).
                    add_project_mcp_servers(&mut config)?;
                    crate::redact::install(Arc::new(config.redactor(&key_vars)));
                }
                Answer::NotNow => {}
                Answer::Quit => return Ok(130),
            }
        }
    }
    // Somebody is there to answer in the TUI: it asks by default; a scripted run cannot.
    if interactive && config.approval.is_none() {
        config.approval = Some(crate::policy::Mode::Ask);
    }
    let mut provider = crate::provider::build(spec.clone())?;
    let (events_tx, events_rx) = unbounded_channel();
    if trust == State::Changed {
        let _ = events_tx.send(Event::notice(NoticeLevel::Warning, settings_changed(&root)));
    }
    let sessions: Arc<dyn Sessions> = crate::store::open(&config, events_tx.clone());
    let which = match (&cli.resume, cli.continue_session) {
        (Some(id), _) => Some(Resume::Id(id.clone())),
        (None, true) => Some(Resume::LatestInCwd),
        (None, false) => None,
    };
    let mut resumed = match which {
        None => None,
        Some(which) => Some(load_session(sessions.as_ref(), &which, &cwd).await?),
    };
    let model_override = resumed
        .as_mut()
        .and_then(|r| flag_model_wins(r, &spec, cli, &events_tx));
    if let Some(p) = resumed.as_ref().and_then(|r| resumed_provider(r, &config, &spec)) {
        provider = p;
    }
    let setup_hint = provider.setup_hint();
    if !setup_hint.is_empty() && !interactive {
        return Err(AppError::Usage(setup_hint.join("\n")));
    }
    let registry = Registry::builtin();
    // External tools are found in the background; a request waits for them ≤ 1.5 s.
    registry.start_discovery(discovery);
    // MCP servers start in the background too; the first request waits for those still
    // starting (each at most its startup_timeout_secs).
    let mcp = start_mcp(&config, &key_vars, &cwd, &registry, &events_tx);
    if let Some(mut notices) = provider.notices() {
        let tx = events_tx.clone();
        tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some((level, text)) = notices.next().await {
                let _ = tx.send(crate::protocol::Event::notice(level, text));
            }
        });
    }
    // -p with piped stdin: the input is context for the one prompt.
    let prompt = match &cli.prompt {
        Some(p) if !std::io::stdin().is_terminal() => {
            Some(attach_stdin(p, config.max_output_size, &events_tx)?)
        }
        other => other.clone(),
    };
    // The TUI's header shows the provider and model the session continues with.
    let mut start = provider.spec().clone();
    if let Some(m) = resumed.as_ref().and_then(|r| r.model.clone()) {
        start.model = m;
    }
    // A resumed session keeps its date: the prompt stays the bytes it was.
    let date = resumed
        .as_ref()
        .and_then(|r| crate::agent::prompt::date_of(&r.began))
        .unwrap_or_else(crate::agent::prompt::today);
    let skills = skills::load(&root, trust == State::Trusted, &registry, &events_tx);
    let agent_types = skills::agent_types(&root, trust == State::Trusted, &events_tx);
    let mode = skills::offer_task(agent_types, &config, &provider, &cwd, &registry);
    let Prompt {
        text: system_prompt,
        environment,
        instructions,
    } = system_prompt(&config, &cwd, &date, &skills, &events_tx);
    let setup = AgentSetup {
        config: config.clone(),
        provider,
        registry: registry.clone(),
        sessions: Some(sessions),
        cwd: cwd.clone(),
        system_prompt,
        environment,
        instructions,
        skills,
        mode: Some(mode),
        resumed,
        // One `-p` prompt is the whole run: nothing to follow the tree for.
        follow_tree: interactive || prompt.is_none(),
    };
    let listing = setup.sessions.clone();
    let agent = crate::agent::spawn(setup, events_tx);
    if let Some(model) = model_override {
        // Recorded in the session, so the next resume continues with it.
        // Named with its provider when that reads back unambiguously (`groq/openai/gpt-oss`
        // must not switch to the `openai` provider).
        let qualified = format!("{}/{model}", spec.name);
        let same = crate::provider::split_model(&config, &qualified)
            .is_some_and(|(p, m)| p == spec.name && m == model);
        let _ = agent.ops.send(Op::SetModel(if same { qualified } else { model }));
    }
    if interactive {
        // What `/resume <Tab>` completes, listed in the background.
        let (tx, sessions) = tokio::sync::oneshot::channel();
        if let Some(store) = listing {
            tokio::spawn(async move {
                if let Ok(list) = store.list().await {
                    let _ = tx.send(list.into_iter().map(|s| (s.id, s.title)).collect());
                }
            });
        }
        let welcome_notes = setup_hint;
        let ctx = TuiContext {
            config,
            provider: start,
            registry,
            cwd,
            welcome_notes,
            sessions: Some(sessions),
        };
        let result = crate::ui::tui::run(agent, events_rx, ctx).await;
        close_mcp(mcp).await;
        Ok(result?)
    } else {
        let input = match prompt {
            Some(p) => Input::Prompt(p),
            None => Input::Stdin,
        };
        let no_color = crate::environ::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let opts = PlainOptions {
            json: cli.json,
            verbose: cli.verbose,
            color: !cli.json && !no_color && std::io::stdout().is_terminal(),
            live: !cli.json && std::io::stderr().is_terminal(),
        };
        crate::tools::live::set_watched(opts.json || opts.live);
        let ctx = crate::ui::plain::PlainContext {
            config,
            provider: start,
            registry,
        };
        let result = crate::ui::plain::run(agent, events_rx, input, opts, ctx).await;
        close_mcp(mcp).await;
        Ok(result?)
    }
}

/// Starts the configured MCP servers in the background and lays their tools over the
/// registry; their notices (failures, with stderr) go to the front end.
fn start_mcp(
    config: &Config,
    key_vars: &[String],
    cwd: &std::path::Path,
    registry: &Registry,
    events: &UnboundedSender<Event>,
) -> Option<crate::tools::mcp::Mcp> {
    if config.mcp_servers.is_empty() {
        return None;
    }
    let policy = Arc::new(crate::tools::EnvPolicy::from_config(config, key_vars.to_vec()));
    let (mcp, mut notices) =
        crate::tools::mcp::Mcp::new(config.mcp_servers.clone(), cwd.to_path_buf(), policy);
    registry.attach_mcp(mcp.clone());
    mcp.start();
    let tx = events.clone();
    tokio::spawn(async move {
        let redactor = crate::redact::global();
        while let Some((level, text)) = notices.recv().await {
            let text = redactor.scrub_notice(&text).into_owned();
            let _ = tx.send(Event::notice(level, text));
        }
    });
    Some(mcp)
}

/// Closes every MCP server at exit (stdio servers' process groups are killed).
async fn close_mcp(mcp: Option<crate::tools::mcp::Mcp>) {
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
}

/// A trusted project's `.ikigai/config.toml` (the one whose settings apply in the working
/// directory: `paths::settings_root`) may add MCP servers (over the user's of the
/// same name) and permission rules; an untrusted one is never read.
fn add_project_mcp_servers(config: &mut Config) -> Result<(), AppError> {
    let cwd = crate::paths::settings_root(&std::env::current_dir()?, &|k| crate::environ::var(k));
    if !project_trusted(&cwd) {
        return Ok(());
    }
    let rules = crate::permissions::project::load(&cwd).map_err(|e| {
        AppError::Config(ConfigError::Parse {
            path: e.file,
            message: format!("`permissions`: {}", e.message),
        })
    })?;
    crate::permissions::project::merge(&mut config.permissions, rules);
    let project = crate::config::mcp::load_project(&cwd).map_err(|e| {
        AppError::Config(ConfigError::Parse {
            path: e.file,
            message: format!("`{}`: {}", e.key, e.message),
        })
    })?;
    config.mcp_servers = crate::config::mcp::merge(&config.mcp_servers, project);
    // Its hooks run after the user's, for the same events.
    let hooks = crate::config::hooks::load_project(&cwd).map_err(|e| {
        AppError::Config(ConfigError::Parse {
            path: e.file,
            message: format!("`hooks`: {}", e.message),
        })
    })?;
    config.hooks.extend(hooks);
    Ok(())
}

/// What a folder's own settings (`.ikigai/config.toml`) would add once trusted: its MCP
/// servers (what each runs) and its permission rules, one line each, for the question.
/// Read only to be shown; nothing is run or applied.
fn untrusted_settings(cwd: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(servers) = crate::config::mcp::load_project(cwd) {
        for s in servers {
            out.push(format!("MCP server {}: {}", s.name, s.transport.target()));
        }
    }
    if let Ok(hooks) = crate::config::hooks::load_project(cwd) {
        for h in hooks {
            out.push(format!("{} hook: {}", h.event.as_str(), h.command));
        }
    }
    for s in crate::skills::in_project(cwd) {
        out.push(format!("skill {s}"));
    }
    for t in crate::agent_types::in_project(cwd) {
        out.push(format!("agent type {t}"));
    }
    if let Ok(rules) = crate::permissions::project::load(cwd) {
        for (kind, list) in [
            ("allow", &rules.allow),
            ("ask", &rules.ask),
            ("deny", &rules.deny),
        ] {
            if !list.is_empty() {
                let texts: Vec<&str> = list.iter().map(|r| r.text.as_str()).collect();
                out.push(format!("{kind} rules: {}", texts.join(", ")));
            }
        }
    }
    out
}

/// What a trusted folder whose settings changed since is told: what trust covers there.
fn settings_changed(cwd: &std::path::Path) -> String {
    let reached = crate::permissions::reach::reached(cwd);
    let covered = crate::permissions::pin::covered(cwd, &reached);
    let what = if covered.is_empty() {
        "its .ikigai/ settings are gone".to_string()
    } else {
        format!("trust covers {}", covered.join(", "))
    };
    format!(
        "{}'s ikigai settings, or the project files they run, changed since you trusted it: \
         they are not used ({what}). Look at them (a command may have written them), then \
         run `ikigai trust` to use them again.",
        cwd.display()
    )
}

/// Whether the folder is trusted (`ikigai trust`, or `y` at the TUI's question).
fn project_trusted(cwd: &std::path::Path) -> bool {
    crate::permissions::trust::is_trusted(cwd)
}

/// Loads the session to continue; "none there" is the user's to fix (exit 2).
async fn load_session(
    store: &dyn Sessions,
    which: &Resume,
    cwd: &std::path::Path,
) -> Result<Resumed, AppError> {
    match crate::agent::resume::load(store, which, cwd).await {
        Ok(r) => Ok(r),
        Err(StoreError::NotFound(_)) => Err(AppError::NoSession(match which {
            Resume::LatestInCwd => "no stored session in this folder; `ikigai sessions` lists all".into(),
            Resume::Id(id) => format!("no stored session matches `{id}`; `ikigai sessions` lists all"),
        })),
        Err(e @ StoreError::Ambiguous { .. }) => {
            Err(AppError::NoSession(format!("{e}; `ikigai sessions` lists all")))
        }
        Err(e) => Err(e.into()),
    }
}

/// An explicit `--provider` / `--model` (or `IKIGAI_PROVIDER` / `IKIGAI_MODEL`) wins over
/// the provider and model a resumed session used last; says so, and returns the model to
/// record. Without one, the session continues on its own provider and model.
fn flag_model_wins(
    r: &mut Resumed,
    spec: &Spec,
    cli: &crate::cli::Cli,
    events: &UnboundedSender<Event>,
) -> Option<String> {
    let env_set = |k: &str| crate::environ::var(k).is_some_and(|v| !v.is_empty());
    let source = if cli.provider.is_some() {
        "--provider"
    } else if cli.model.is_some() {
        "--model"
    } else if env_set("IKIGAI_PROVIDER") {
        "IKIGAI_PROVIDER"
    } else if env_set("IKIGAI_MODEL") {
        "IKIGAI_MODEL"
    } else {
        return None;
    };
    let stored_provider = r
        .provider
        .replace(spec.name.clone())
        .unwrap_or_else(|| spec.name.clone());
    let stored = r.model.clone()?;
    if stored == spec.model && stored_provider == spec.name {
        return None;
    }
    r.model = Some(spec.model.clone());
    let (was, now) = if stored_provider == spec.name {
        (stored, spec.model.clone())
    } else {
        (
            format!("{stored_provider}/{stored}"),
            format!("{}/{}", spec.name, spec.model),
        )
    };
    let _ = events.send(Event::notice(
        NoticeLevel::Info,
        format!("the session used {was}; {source} wins: {now}"),
    ));
    Some(spec.model.clone())
}

/// The provider a resumed session continues on: the one it used last, when that is not
/// the configured one (`spec`) and it can be set up here (else the agent says why and
/// keeps the configured one). Built here so a missing key for the configured provider
/// does not stop a session that uses another.
fn resumed_provider(r: &Resumed, config: &Config, spec: &Spec) -> Option<Arc<dyn crate::provider::Provider>> {
    let name = r.provider.as_deref()?;
    if name == spec.name {
        return None;
    }
    let other =
        crate::provider::spec_for(config, name, r.model.as_deref(), &crate::provider::env_key).ok()?;
    let p = crate::provider::build(other).ok()?;
    p.setup_hint().is_empty().then_some(p)
}

/// `prompt` with piped stdin attached as context, cut at `max` bytes (with a notice).
fn attach_stdin(prompt: &str, max: usize, events: &UnboundedSender<Event>) -> Result<String, AppError> {
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .take(max as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| AppError::Usage(format!("cannot read stdin: {e}")))?;
    if buf.is_empty() {
        return Ok(prompt.to_string());
    }
    if buf.len() > max {
        buf.truncate(max);
        let _ = events.send(Event::notice(
            NoticeLevel::Warning,
            format!(
                "stdin is longer than max_output_size ({max} bytes); only the first {max} bytes were attached"
            ),
        ));
    }
    let text = String::from_utf8_lossy(&buf);
    Ok(format!(
        "{prompt}\n\n<stdin>\n{}\n</stdin>",
        text.trim_end_matches('\n')
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_type_and_their_exit_code() {
        let setup = AppError::from(SetupError::NoModel { name: "x".into() });
        assert!(matches!(setup, AppError::Setup(SetupError::NoModel { .. })));
        assert_eq!(setup.exit_code(), 2);
        assert!(setup.to_string().starts_with("provider `x`: no model"), "{setup}");
        let gone = AppError::from(PlainError::AgentGone);
        assert!(matches!(gone, AppError::Plain(PlainError::AgentGone)));
        assert_eq!(
            (gone.exit_code(), gone.to_string().as_str()),
            (1, "the agent stopped unexpectedly")
        );
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(AppError::from(PlainError::Io(pipe)).is_broken_pipe());
        let usage = AppError::from(ToolCmdError::Usage("bad".into()));
        assert_eq!(usage.exit_code(), 2);
        let store = AppError::from(SessionsError::Store(StoreError::NotFound("ab".into())));
        assert_eq!(
            (store.exit_code(), store.to_string().as_str()),
            (2, "no session matches `ab`")
        );
    }
}
