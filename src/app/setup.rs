//! Builds the agent for one folder, the same way for every run and for the ACP session:
//! the tool registry (built-ins, external tools found in the background, MCP servers laid
//! over it), the provider's notices forwarded, the skills and sub-agent types
//! (`skills.rs`), the system prompt with its AGENTS.md levels and its environment, and
//! the agent task. The caller has settled trust (`folder.rs`), built the
//! provider, opened the store and chosen the session to continue. Never prints.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::agent::{AgentHandle, AgentSetup, Resumed};
use crate::config::Config;
use crate::config::mcp::ServerSpec;
use crate::protocol::{Event, NoticeLevel};
use crate::provider::Provider;
use crate::store::Sessions;
use crate::tools::Registry;
use crate::tools::discovery::DiscoverySpec;
use crate::tools::mcp::Mcp;

/// What the agent of one folder is built from.
pub(super) struct Wiring {
    pub config: Config,
    pub provider: Arc<dyn Provider>,
    /// The provider's key variables (kept out of tool processes' environments).
    pub key_vars: Vec<String>,
    pub cwd: PathBuf,
    pub discovery: DiscoverySpec,
    pub sessions: Arc<dyn Sessions>,
    pub resumed: Option<Resumed>,
    /// The day the session began (its system prompt says it).
    pub date: String,
    /// Whether the agent follows the session tree between turns.
    pub follow_tree: bool,
    /// Whether the configured MCP servers start now (else the front end starts them).
    pub start_mcp: bool,
    /// The folder whose `.ikigai/` applies (`paths::settings_root`), and whether it is
    /// trusted: its skills and agent types are loaded only then.
    pub root: PathBuf,
    pub trusted: bool,
}

/// The running agent and what the front end may still need of its tools.
pub(super) struct Running {
    pub agent: AgentHandle,
    pub registry: Registry,
    /// The MCP servers started now, to close at exit.
    pub mcp: Option<Mcp>,
}

/// Starts the agent for `w.cwd`; its events go to `events`.
pub(super) fn start_agent(w: Wiring, events: UnboundedSender<Event>) -> Running {
    let registry = Registry::builtin();
    // External tools are found in the background; a request waits for them ≤ 1.5 s.
    registry.start_discovery(w.discovery);
    // MCP servers start in the background too; the first request waits for those still
    // starting (each at most its startup_timeout_secs).
    let mcp = if w.start_mcp {
        start_mcp(
            w.config.mcp_servers.clone(),
            &w.config,
            &w.key_vars,
            &w.cwd,
            &registry,
            &events,
        )
    } else {
        None
    };
    if let Some(mut notices) = w.provider.notices() {
        let tx = events.clone();
        tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some((level, text)) = notices.next().await {
                let _ = tx.send(Event::notice(level, text));
            }
        });
    }
    let skills = super::skills::load(&w.root, w.trusted, &registry, &events);
    let agent_types = super::skills::agent_types(&w.root, w.trusted, &events);
    let mode = super::skills::offer_task(
        agent_types,
        &w.config,
        &w.provider,
        &w.cwd,
        &registry,
        &w.sessions,
    );
    let Prompt {
        text: system_prompt,
        environment,
        instructions,
    } = system_prompt(&w.config, &w.cwd, &w.date, &skills, &events);
    let setup = AgentSetup {
        config: w.config,
        provider: w.provider,
        registry: registry.clone(),
        sessions: Some(w.sessions),
        cwd: w.cwd,
        system_prompt,
        environment,
        instructions,
        skills,
        mode: Some(mode),
        resumed: w.resumed,
        follow_tree: w.follow_tree,
    };
    let agent = crate::agent::spawn(setup, events);
    Running { agent, registry, mcp }
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
    events_tx: &UnboundedSender<Event>,
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

/// Starts MCP servers `servers` in the background and lays their tools over the registry
/// (in place of any attached before); their notices (failures, with stderr) go to the
/// front end.
pub(super) fn start_mcp(
    servers: Vec<ServerSpec>,
    config: &Config,
    key_vars: &[String],
    cwd: &std::path::Path,
    registry: &Registry,
    events: &UnboundedSender<Event>,
) -> Option<Mcp> {
    if servers.is_empty() {
        return None;
    }
    let policy = Arc::new(crate::tools::EnvPolicy::from_config(config, key_vars.to_vec()));
    let (mcp, mut notices) = Mcp::new(servers, cwd.to_path_buf(), policy);
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
pub(super) async fn close_mcp(mcp: Option<Mcp>) {
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
}
