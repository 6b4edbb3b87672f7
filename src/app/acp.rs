//! `ikigai acp`: sets up one agent for the folder ikigai was started in, as every run does
//! (`setup::start_agent`), and hands it to the ACP front end (`ui::acp`). The MCP servers
//! start when the editor opens a session: the configured ones and the editor's own, which
//! join only in a trusted folder (an editor takes them from the project's own files too,
//! e.g. Zed's `.zed/settings.json`, so they are the project's settings as much as
//! `.ikigai/config.toml` is). Nothing here prints: what the user should know (an untrusted
//! folder's settings left unused, a missing key) goes to the front end as notices, and
//! from there to the editor as a message.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use super::folder::Folder;
use super::setup::{self, Running};
use super::{AppError, close_mcp};
use crate::config::Config;
use crate::config::mcp::ServerSpec;
use crate::permissions::trust::State;
use crate::protocol::{Event, NoticeLevel};
use crate::provider::Resolved;
use crate::store::Sessions;
use crate::tools::Registry;
use crate::tools::mcp::Mcp;

/// Runs the ACP front end until the editor closes stdin. Exit code 0 then.
pub(super) async fn run(mut config: Config, resolved: Resolved) -> Result<u8, AppError> {
    let cwd = std::env::current_dir()?;
    let Resolved { spec, key_vars } = resolved;
    let discovery = crate::tools::discovery::DiscoverySpec::from_config(&config, &cwd, key_vars.clone());
    let (events_tx, events_rx) = unbounded_channel();
    // Nobody is asked here: the editor is told once why the folder's own settings and
    // tools are left out.
    let folder = Folder::at(&cwd);
    folder.tell(&discovery, &events_tx);
    // Somebody is there to answer (the editor asks its user), as in the TUI.
    if config.approval.is_none() {
        config.approval = Some(crate::policy::Mode::Ask);
    }
    let missing_key = spec.missing_key().then(|| crate::ui::acp::MissingKey {
        provider: spec.name.clone(),
        var: spec.api_key_env.clone(),
    });
    let provider = crate::provider::build(spec.clone())?;
    for line in provider.setup_hint() {
        let _ = events_tx.send(Event::notice(NoticeLevel::Warning, line));
    }
    let sessions: Arc<dyn Sessions> = crate::store::open(&config, events_tx.clone());
    let mode = config.approval.unwrap_or(crate::policy::Mode::Ask);
    let settings = config.clone();
    let models = offered_models(&config);
    let wiring = setup::Wiring {
        config,
        provider,
        key_vars: key_vars.clone(),
        cwd: cwd.clone(),
        discovery,
        sessions: sessions.clone(),
        resumed: None,
        date: crate::agent::prompt::today(),
        // An editor's session has turns after turns: the tree is followed between them.
        follow_tree: true,
        // Started when the editor opens a session, with its servers.
        start_mcp: false,
        root: folder.root.clone(),
        trusted: folder.trust == State::Trusted,
    };
    let Running { agent, registry, .. } = setup::start_agent(wiring, events_tx.clone());
    let files = registry.files();
    let editor_mcp = Arc::new(EditorMcp {
        config: settings,
        key_vars,
        cwd: cwd.clone(),
        registry,
        events: events_tx,
        trusted: folder.trust == State::Trusted,
        root: folder.root,
        current: tokio::sync::Mutex::new(None),
    });
    let join = editor_mcp.clone();
    let join_mcp: crate::ui::acp::JoinMcp = Arc::new(move |servers| {
        let join = join.clone();
        Box::pin(async move { join.join(servers).await })
    });
    let ctx = crate::ui::acp::AcpContext {
        cwd,
        sessions: Some(sessions),
        mode,
        missing_key,
        join_mcp,
        model: format!("{}/{}", spec.name, spec.model),
        models,
        files,
    };
    let result = crate::ui::acp::run(agent, events_rx, ctx).await;
    editor_mcp.close().await;
    Ok(result?)
}

/// The models the editor may choose from, as `provider/model` (each provider's
/// configured model): the providers with a key set and the configured sections, known
/// without asking any endpoint.
fn offered_models(config: &Config) -> Vec<String> {
    crate::provider::names(config)
        .into_iter()
        .filter_map(|name| {
            let spec = crate::provider::spec_for(config, &name, None, &crate::provider::env_key).ok()?;
            let usable =
                spec.api_key.is_some() || (config.providers.contains_key(&name) && !spec.missing_key());
            usable.then(|| format!("{name}/{}", spec.model))
        })
        .collect()
}

/// The session's MCP servers: the configured ones and the editor's (in a trusted folder).
struct EditorMcp {
    config: Config,
    key_vars: Vec<String>,
    cwd: PathBuf,
    registry: Registry,
    events: UnboundedSender<Event>,
    /// Whether the folder whose settings apply here is trusted.
    trusted: bool,
    root: PathBuf,
    /// The editor's servers the running set was started with, and that set.
    current: tokio::sync::Mutex<Option<(Vec<ServerSpec>, Option<Mcp>)>>,
}

impl EditorMcp {
    /// Starts the configured servers and `editor`'s (over configured ones of the same
    /// name), unless the running set already is that; answers what the editor is told.
    async fn join(&self, editor: Vec<ServerSpec>) -> Vec<String> {
        let mut told = Vec::new();
        let editor = if !editor.is_empty() && !self.trusted {
            let names: Vec<&str> = editor.iter().map(|s| s.name.as_str()).collect();
            told.push(format!(
                "The editor's MCP servers ({}: {}) are not started: {} is not a trusted folder, \
                 and an editor's servers may come from the project's own files. Run `ikigai \
                 trust` in it to use them.",
                names.len(),
                names.join(", "),
                self.root.display()
            ));
            Vec::new()
        } else {
            editor
        };
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|(running, _)| *running == editor) {
            return told;
        }
        if let Some((_, Some(old))) = current.take() {
            old.shutdown().await;
        }
        let servers = crate::config::mcp::merge(&self.config.mcp_servers, editor.clone());
        let started = setup::start_mcp(
            servers,
            &self.config,
            &self.key_vars,
            &self.cwd,
            &self.registry,
            &self.events,
        );
        if started.is_none() && self.registry.mcp().is_some() {
            // None now: the servers of the session before are gone from the tools too.
            let policy = Arc::new(crate::tools::EnvPolicy::from_config(
                &self.config,
                self.key_vars.clone(),
            ));
            let (none, _) = Mcp::new(Vec::new(), self.cwd.clone(), policy);
            self.registry.attach_mcp(none);
        }
        *current = Some((editor, started));
        told
    }

    /// Closes the running servers (stdio servers' process groups are killed).
    async fn close(&self) {
        if let Some((_, mcp)) = self.current.lock().await.take() {
            close_mcp(mcp).await;
        }
    }
}
