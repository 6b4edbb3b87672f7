//! The tool registry: finds a tool by name, parses arguments, runs it and wraps the result.
//! Reloadable: external tools are discovered in the background and again on `/refresh`;
//! every clone is a handle to the same live set. Knows no individual tool beyond the list
//! in `Registry::builtin`.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;

use super::discovery::{self, DiscoverySpec, Skipped};
use super::mcp::Mcp;
use super::{Envelope, Tool, ToolContext, ToolError, ToolSchema};
use crate::tool_vocab::files::FileSeam;

/// The longest a request waits for discovery, counted from its start.
pub(crate) const DISCOVERY_WAIT: Duration = Duration::from_millis(1500);

/// One finished tool call: what the scrollback shows and what the model gets.
#[derive(Clone, Debug, PartialEq)]
pub struct Executed {
    pub summary: String,
    /// What the model gets.
    pub envelope: Envelope,
    pub success: bool,
    /// Images that go to the model with the result (an MCP tool's).
    pub images: Vec<crate::message::Image>,
}

#[derive(Default)]
struct State {
    /// Built-in and registered tools, before external ones are laid over them.
    base: Vec<Arc<dyn Tool>>,
    /// What the model is offered now.
    tools: Vec<Arc<dyn Tool>>,
    /// `tools[i]`'s name, so lookups do not rebuild schemas.
    names: Vec<String>,
    skipped: Vec<Skipped>,
    /// Notices of the last discovery not yet shown.
    notices: Vec<String>,
    spec: Option<DiscoverySpec>,
    /// Bumped by every discovery; a stale background one does not install.
    generation: u64,
}

/// Whether a discovery runs, and since when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Running(Instant),
}

struct Shared {
    state: RwLock<State>,
    phase: watch::Sender<Phase>,
    /// The MCP servers whose tools are laid over the others (see `tools::mcp`).
    mcp: RwLock<Option<Mcp>>,
    /// Text files a front end serves in place of the file system (none until it says so).
    files: FileSeam,
}

/// The set of tools offered to the model, in a stable order: built-ins first (an
/// external tool of the same name takes its place), then external tools by name.
#[derive(Clone)]
pub struct Registry {
    shared: Arc<Shared>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            shared: Arc::new(Shared {
                state: RwLock::new(State::default()),
                phase: watch::Sender::new(Phase::Idle),
                mcp: RwLock::new(None),
                files: FileSeam::default(),
            }),
        }
    }
}

impl Registry {
    pub fn empty() -> Self {
        Self::default()
    }

    /// Every built-in tool, in the order offered to the model.
    pub fn builtin() -> Self {
        let r = Self::empty();
        r.register(Arc::new(super::glob::Glob));
        r.register(Arc::new(super::file_read::FileRead));
        r.register(Arc::new(super::grep::Grep));
        r.register(Arc::new(super::file_write::FileWrite));
        r.register(Arc::new(super::file_edit::FileEdit));
        r.register(Arc::new(super::list_dir::ListDir));
        r.register(Arc::new(super::bash::Bash));
        r.register(Arc::new(super::update_plan::UpdatePlan));
        r.register(Arc::new(super::web_fetch::WebFetch));
        r
    }

    /// Offers the `skill` tool when there are skills (none: the tools stay the bytes they
    /// were).
    pub fn offer_skills(&self, skills: Arc<crate::skills::Skills>) {
        if !skills.is_empty() {
            self.register(Arc::new(super::skill::SkillTool::new(skills)));
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.shared.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.shared.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a tool; one of the same name is replaced.
    pub fn register(&self, tool: Arc<dyn Tool>) {
        let mut st = self.write();
        let name = tool.schema().name;
        st.base.retain(|t| t.schema().name != name);
        st.base.push(tool.clone());
        if let Some(i) = st.names.iter().position(|n| *n == name) {
            st.names.remove(i);
            st.tools.remove(i);
        }
        st.names.push(name);
        st.tools.push(tool);
    }

    /// The tool of that name: a built-in or external one, else an MCP tool (also one whose
    /// server is down, so that a call to it says why).
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let (found, taken) = {
            let st = self.read();
            let found = st
                .names
                .iter()
                .position(|n| n == name)
                .map(|i| st.tools[i].clone());
            (found, st.names.clone())
        };
        if found.is_some() {
            return found;
        }
        let mcp = self.mcp()?;
        mcp.tools(&taken)
            .into_iter()
            .map(|(t, _)| t)
            .find(|t| t.schema().name == name)
    }

    /// The tools offered to the model now: built-in and external ones, then the tools of
    /// the MCP servers that are ready.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let (mut tools, taken) = {
            let st = self.read();
            (st.tools.clone(), st.names.clone())
        };
        if let Some(mcp) = self.mcp() {
            tools.extend(
                mcp.tools(&taken)
                    .into_iter()
                    .filter(|(_, ready)| *ready)
                    .map(|(t, _)| t),
            );
        }
        tools
    }

    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools().iter().map(|t| t.schema()).collect()
    }

    /// Lays the tools of these MCP servers over the registry (they join as `SERVER__TOOL`).
    pub fn attach_mcp(&self, mcp: Mcp) {
        *self.shared.mcp.write().unwrap_or_else(|e| e.into_inner()) = Some(mcp);
    }

    /// Where a front end may put the text files the built-in file tools then read and
    /// write (an editor's buffers); the agent's tool context shares it.
    pub fn files(&self) -> FileSeam {
        self.shared.files.clone()
    }

    /// The MCP servers, when any are attached.
    pub fn mcp(&self) -> Option<Mcp> {
        self.shared.mcp.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The names of the built-in and external tools (what MCP tool names must not take).
    pub fn base_names(&self) -> Vec<String> {
        self.read().names.clone()
    }

    /// Files in the tool folders that were not offered, and why.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.read().skipped.clone()
    }

    /// The notices of the last discovery (skips, overrides), once.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.write().notices)
    }

    /// Starts discovering external tools in the background; the built-ins are usable at
    /// once. Needs a tokio runtime.
    pub fn start_discovery(&self, spec: DiscoverySpec) {
        let generation = self.begin(spec.clone());
        let me = self.clone();
        tokio::spawn(async move {
            me.run_discovery(spec, generation).await;
        });
    }

    /// Rescans the folders now (the spec of the last discovery, if any) and returns how
    /// many tools are offered afterwards.
    pub async fn refresh(&self) -> usize {
        let spec = self.read().spec.clone();
        if let Some(spec) = spec {
            self.discover_now(spec).await;
        }
        // MCP servers that failed are started again.
        if let Some(mcp) = self.mcp() {
            mcp.restart_failed().await;
        }
        self.tools().len()
    }

    /// Discovers with `spec` and waits for it.
    pub async fn discover_now(&self, spec: DiscoverySpec) {
        let generation = self.begin(spec.clone());
        self.run_discovery(spec, generation).await;
    }

    fn begin(&self, spec: DiscoverySpec) -> u64 {
        let mut st = self.write();
        st.spec = Some(spec);
        st.generation += 1;
        self.shared.phase.send_replace(Phase::Running(Instant::now()));
        st.generation
    }

    async fn run_discovery(&self, spec: DiscoverySpec, generation: u64) {
        let builtin: Vec<String> = self.read().base.iter().map(|t| t.schema().name).collect();
        let found = discovery::discover(&spec, &builtin).await;
        let mut st = self.write();
        if st.generation != generation {
            return;
        }
        let mut tools = st.base.clone();
        for ext in found.tools {
            let ext: Arc<dyn Tool> = Arc::new(ext);
            let name = ext.schema().name;
            match tools.iter().position(|t| t.schema().name == name) {
                Some(i) => tools[i] = ext,
                None => tools.push(ext),
            }
        }
        st.names = tools.iter().map(|t| t.schema().name).collect();
        st.tools = tools;
        st.skipped = found.skipped;
        st.notices = found.notices;
        self.shared.phase.send_replace(Phase::Idle);
    }

    /// Waits for a discovery in progress, but never past `DISCOVERY_WAIT` after it began.
    pub async fn ready(&self) {
        let mut rx = self.shared.phase.subscribe();
        let since = match *rx.borrow_and_update() {
            Phase::Idle => return,
            Phase::Running(since) => since,
        };
        let deadline = tokio::time::Instant::from_std(since + DISCOVERY_WAIT);
        let _ = tokio::time::timeout_at(deadline, rx.wait_for(|p| *p == Phase::Idle)).await;
    }

    /// Waits for a discovery in progress to finish, however long it takes.
    pub async fn discovered(&self) {
        let mut rx = self.shared.phase.subscribe();
        let _ = rx.wait_for(|p| *p == Phase::Idle).await;
    }

    /// The schemas to send with a request: after discovery, or after waiting its limit.
    /// The first request also waits for MCP servers still starting (each at most its
    /// `startup_timeout_secs`).
    pub async fn ready_schemas(&self) -> Vec<ToolSchema> {
        match self.mcp() {
            Some(mcp) => {
                tokio::join!(self.ready(), mcp.first_request());
            }
            None => self.ready().await,
        }
        self.schemas()
    }

    /// The arguments call `name` will run with, as JSON text: the model's, read leniently
    /// as `execute` reads them (`cmd` → `command`, `file_path` → `path`…). The permission
    /// gate, the question and `/undo` judge these, never the raw text, so an alias cannot
    /// carry a command or a path past a rule. The raw text when the tool is unknown or the
    /// arguments do not parse (the call then fails without running).
    pub fn judged_arguments(&self, name: &str, arguments: &str) -> String {
        match (self.get(name), parse_arguments(arguments)) {
            (Some(tool), Ok(args)) => {
                let eased = super::lenient::normalize(&tool.schema(), args);
                serde_json::to_string(&eased.args).unwrap_or_else(|_| arguments.to_string())
            }
            _ => arguments.to_string(),
        }
    }

    /// Runs `name` with the model's raw `arguments` string. Never fails: every problem
    /// becomes an error envelope the model can read.
    pub async fn execute(&self, name: &str, arguments: &str, ctx: &ToolContext) -> Executed {
        self.execute_with_stderr(name, arguments, ctx).await.0
    }

    /// `execute`, also returning what an external tool wrote on stderr (for `--verbose`).
    pub async fn execute_with_stderr(
        &self,
        name: &str,
        arguments: &str,
        ctx: &ToolContext,
    ) -> (Executed, Option<String>) {
        let mut notes = Vec::new();
        let result = match self.get(name) {
            None => Err(ToolError::NotFound(format!("Unknown tool: {name}"))),
            Some(tool) => match parse_arguments(arguments) {
                Ok(args) => {
                    let eased = super::lenient::normalize(&tool.schema(), args);
                    notes = eased.notes;
                    tool.call(eased.args, ctx).await
                }
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(out) => (
                Executed {
                    success: out.is_success(),
                    envelope: Envelope::of_output(&out).with_notes(&notes),
                    summary: out.summary,
                    images: out.images,
                },
                out.stderr,
            ),
            Err(err) => (
                Executed {
                    images: Vec::new(),
                    summary: format!("{}: {err}", err.code()),
                    envelope: Envelope::of_error(&err).with_notes(&notes),
                    success: false,
                },
                None,
            ),
        }
    }
}

/// Parses the model's arguments; an empty string means no arguments.
pub(crate) fn parse_arguments(arguments: &str) -> Result<Value, ToolError> {
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
    use crate::tools::ErrorCode;

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
                "bash",
                "update_plan",
                "web_fetch"
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
    fn every_built_in_tool_declares_exactly_its_entry_of_the_vocabulary() {
        let r = Registry::builtin();
        // And the one offered only when skills are loaded.
        let skill = crate::skills::Skill {
            name: "s".into(),
            description: "d".into(),
            body: "b".into(),
            dir: "/s".into(),
            source: crate::skills::Source::User,
        };
        r.offer_skills(Arc::new(crate::skills::Skills::from_list(vec![skill])));
        let mut declared = Vec::new();
        for tool in r.tools() {
            let name = tool.schema().name;
            let meta = tool.meta().unwrap_or_else(|| panic!("{name} declares nothing"));
            assert_eq!(meta.name, name);
            assert_eq!(Some(meta), crate::tool_vocab::meta::of(&name));
            let params: Vec<String> = tool.schema().parameters.into_iter().map(|p| p.name).collect();
            let change = meta.change.map(|c| match c {
                crate::tool_vocab::meta::Change::Replace { old, new } => vec![old, new],
                crate::tool_vocab::meta::Change::Whole { content } => vec![content],
            });
            // Every argument the declaration names is one the tool takes.
            for arg in [meta.path, meta.command, meta.url]
                .into_iter()
                .flatten()
                .chain(change.into_iter().flatten())
            {
                assert!(params.iter().any(|p| p == arg), "{name}: {arg} in {params:?}");
            }
            declared.push(name);
        }
        // `task` runs an agent: the agent offers it (`agent::task`), this floor cannot.
        let mut all: Vec<&str> = crate::tool_vocab::meta::BUILTINS
            .iter()
            .map(|m| m.name)
            .filter(|n| *n != crate::tool_vocab::meta::TASK.name)
            .collect();
        all.sort_unstable();
        declared.sort();
        assert_eq!(declared, all);
    }

    #[test]
    fn the_skill_tool_is_offered_only_when_there_are_skills() {
        let r = Registry::builtin();
        r.offer_skills(Arc::new(crate::skills::Skills::default()));
        assert_eq!(r.tools().len(), 9);
        assert!(r.get("skill").is_none());
    }

    #[test]
    fn registering_a_name_again_replaces_that_tool_in_place_of_the_old() {
        let r = Registry::builtin();
        r.register(Arc::new(super::super::glob::Glob));
        assert_eq!(r.tools().len(), 9);
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
        assert_eq!(
            parse_arguments("[]").unwrap_err().code(),
            ErrorCode::InvalidParams
        );
        assert_eq!(parse_arguments("{").unwrap_err().code(), ErrorCode::InvalidParams);
    }
}
