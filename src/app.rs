//! Wires config, provider, tools, store and one front end together for one run: loads the
//! settings, installs the sandbox, settles the folder's trust (`folder.rs`), picks the
//! session to continue (`resume.rs`) and builds the agent (`setup.rs`, shared with
//! `ikigai acp` in `acp.rs`). Front ends return their own errors; `AppError` (`error.rs`)
//! carries them with their type, and `main.rs` prints it and picks the exit code.

use std::io::Read;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

mod acp;
mod error;
mod folder;
mod resume;
mod setup;
mod skills;

pub use error::AppError;
use folder::add_project_mcp_servers;
use resume::{flag_model_wins, load_session, resumed_provider};
use setup::close_mcp;

use crate::agent::Resume;
use crate::config::Config;
use crate::protocol::{Event, NoticeLevel, Op};
use crate::provider::Resolved;
use crate::store::Sessions;
use crate::ui::plain::{Input, PlainOptions};
use crate::ui::tui::TuiContext;

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
    // `mcp serve --tools` runs the built-in tools in this process.
    let serves_tools = matches!(
        &cli.command,
        Some(Command::Mcp(crate::cli::McpArgs {
            action: crate::cli::McpAction::Serve { tools: true, .. },
        }))
    );
    if !serves_tools
        && !matches!(
            cli.command,
            None | Some(Command::Tool(_) | Command::Sandbox(_) | Command::Acp)
        )
    {
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
                crate::cli::McpAction::Serve { mode, tools, http } => {
                    if let Some(addr) = http {
                        crate::ui::mcp_serve::http::check_addr(addr).map_err(AppError::Usage)?;
                    }
                    let serve = crate::ui::mcp_serve::Serve {
                        config,
                        args: serve_args(&cli, *mode),
                        cwd: std::env::current_dir()?,
                        mode: (*mode).into(),
                        builtins: tools.then(|| (*mode).into()),
                        http: *http,
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
    let mut folder = folder::Folder::at(&cwd);
    // Asked once, before anything runs: the TUI only; scripted runs skip them with a notice.
    if interactive {
        let untrusted = discovery.untrusted_tools();
        let settings = folder.untrusted_settings();
        if !untrusted.is_empty() || !settings.is_empty() {
            use crate::ui::tui::trust_ask::{Answer, Question, ask};
            let home = crate::environ::var("HOME");
            let question = Question {
                cwd: &folder.root,
                tools: &untrusted,
                settings: &settings,
                changed: folder.trust == State::Changed,
            };
            match ask(&question, home.as_deref())? {
                // Discovery reads the trust list: from now on it says trusted.
                Answer::Trust => {
                    let store = crate::permissions::trust::Store::default_location()?;
                    store.trust(&folder.root)?;
                    folder.trust = State::Trusted;
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
    folder.changed(&events_tx);
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
    // -p with piped stdin: the input is context for the one prompt.
    let prompt = match &cli.prompt {
        Some(p) if !cli.answers_on_stdin && !std::io::stdin().is_terminal() => {
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
    let listing = sessions.clone();
    let wiring = setup::Wiring {
        config: config.clone(),
        provider,
        key_vars,
        cwd: cwd.clone(),
        discovery,
        sessions,
        resumed,
        date,
        // One `-p` prompt is the whole run: nothing to follow the tree for.
        follow_tree: interactive || prompt.is_none(),
        start_mcp: true,
        root: folder.root.clone(),
        trusted: folder.trust == State::Trusted,
    };
    let setup::Running { agent, registry, mcp } = setup::start_agent(wiring, events_tx);
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
        tokio::spawn(async move {
            if let Ok(list) = listing.list().await {
                let _ = tx.send(list.into_iter().map(|s| (s.id, s.title)).collect());
            }
        });
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
            answers: cli.answers_on_stdin,
            config,
            provider: start,
            registry,
        };
        let result = crate::ui::plain::run(agent, events_rx, input, opts, ctx).await;
        close_mcp(mcp).await;
        Ok(result?)
    }
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
