//! The `task` tool: the model hands a self-contained task to a sub-agent. A sub-agent is
//! a second agent instance (`agent::spawn`, driven through `Op` and `Event` like any
//! front end drives one) with a fresh context, the parent's provider (or its type's
//! model), a tool subset (the read-only tools by default; a type's `tools:`), the
//! parent's approval mode at the time of the call and the sandbox in force, its own
//! `max_tool_turns` and a wall-clock limit. It has no `task` tool (depth 1). A call of its
//! that needs a question is asked of the parent's approver (`tools::caller`: the parent's
//! front end, under its rules: a scripted run refuses, an editor is asked), naming the
//! sub-agent, one question at a time across the parent's sub-agents; with no approver it
//! is refused (`Answer::Unattended`). So it can do no more than the parent could. Its
//! final answer is the result; its
//! tool calls are reported as progress lines on the parent's call. Dropping the call (the
//! parent cancelled) cancels the sub-agent and kills its tools. Offered (by `app`, on the
//! parent's registry) only when agent types are configured (`crate::agent_types`).
//! When the parent's session is stored, the sub-agent's run is stored as its own session,
//! the child of the parent's and of this call (`session.rs`): resumable on its own, listed
//! under the parent. The tokens it spends are reported to the parent's session as its own
//! (`tools::caller`).

mod session;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc::unbounded_channel;

use super::{AgentHandle, AgentSetup};
use crate::agent_types::{AgentType, AgentTypes};
use crate::config::Config;
use crate::policy::mode::SharedMode;
use crate::protocol::{Answer, Event, Op, TurnEndReason};
use crate::provider::Provider;
use crate::store::{Parent, Sessions};
use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::TASK;
use crate::tools::caller::Spent;
use crate::tools::{ParamSpec, Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};

/// The tools a sub-agent gets when its type names none: the read-only ones.
const DEFAULT_TOOLS: [&str; 4] = ["glob", "file_read", "grep", "list_dir"];
/// How long a sub-agent may run when its type says nothing.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Sub-agents running at once.
const PARALLEL: usize = 3;

/// What a sub-agent inherits from its parent.
pub(crate) struct Task {
    config: Config,
    provider: Arc<dyn Provider>,
    cwd: PathBuf,
    mode: SharedMode,
    /// The parent's tools, where a sub-agent's are taken from.
    registry: Registry,
    types: Arc<AgentTypes>,
    /// The parent's store: a sub-agent's session is stored beside its parent's.
    sessions: Option<Arc<dyn Sessions>>,
    running: Arc<tokio::sync::Semaphore>,
    /// Held while one sub-agent's question waits (the approver takes one at a time).
    asking: tokio::sync::Mutex<()>,
    schema: ToolSchema,
}

impl Task {
    /// The tool for a parent with `config`, on `provider`, in `cwd`, whose approval mode
    /// is `mode`, whose tools are `registry` and whose sessions are stored in `sessions`.
    pub(crate) fn new(
        config: Config,
        provider: Arc<dyn Provider>,
        cwd: PathBuf,
        mode: SharedMode,
        registry: Registry,
        types: Arc<AgentTypes>,
        sessions: Option<Arc<dyn Sessions>>,
    ) -> Self {
        let schema = schema(&types);
        Task {
            config,
            provider,
            cwd,
            mode,
            registry,
            types,
            sessions,
            running: Arc::new(tokio::sync::Semaphore::new(PARALLEL)),
            asking: tokio::sync::Mutex::new(()),
            schema,
        }
    }

    /// The sub-agent's tools: `names` (Claude Code's names read as ikigai's) taken from
    /// the parent's, never `task`.
    fn tools(&self, names: Option<&[String]>) -> Registry {
        let sub = Registry::empty();
        let defaults: Vec<String> = DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect();
        for name in names.unwrap_or(&defaults) {
            let name = ikigai_name(name);
            if name == TASK.name {
                continue;
            }
            if let Some(tool) = self.registry.get(name) {
                sub.register(tool);
            }
        }
        sub
    }

    fn system_prompt(&self, kind: Option<&AgentType>) -> String {
        let role = kind.map_or(String::new(), |t| format!("{}\n\n", t.prompt));
        format!(
            "{role}You are a sub-agent of ikigai, a coding agent: do the one task you are given in \
the user's project with the tools you have, then answer with one final message; it is all \
the caller sees, so put everything it needs in it (files, lines, findings). A call that needs \
approval is asked of the user, who may refuse it.\n"
        )
    }
}

/// Claude Code's tool names as ikigai's (`Read` → `file_read`); others as they are.
fn ikigai_name(name: &str) -> &str {
    match name {
        "Read" => "file_read",
        "Write" => "file_write",
        "Edit" | "MultiEdit" => "file_edit",
        "Grep" => "grep",
        "Glob" => "glob",
        "LS" => "list_dir",
        "Bash" => "bash",
        "WebFetch" => "web_fetch",
        "TodoWrite" => "update_plan",
        other => other,
    }
}

fn schema(types: &AgentTypes) -> ToolSchema {
    let mut description = String::from(
        "Hand a self-contained task to a sub-agent with a fresh context; it returns one final answer.\n\
Use it for searches or reviews that would fill your context; several calls run in parallel.",
    );
    if !types.is_empty() {
        description.push_str("\nAgent types (agent_type):");
        for t in types.iter() {
            description.push_str(&format!("\n- {}: {}", t.name, t.description));
        }
    }
    ToolSchema {
        name: TASK.name.into(),
        description,
        parameters: vec![
            ParamSpec::new("description", "string", "the task in a few words", true),
            ParamSpec::new(
                "prompt",
                "string",
                "everything the sub-agent needs to do it",
                true,
            ),
            ParamSpec::new(
                "agent_type",
                "string",
                "one of the agent types; none: a read-only helper",
                false,
            ),
        ],
        json_schema: None,
    }
}

/// Cancels and ends the sub-agent when the call is dropped or done.
struct Running(AgentHandle);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.ops.send(Op::Cancel);
        let _ = self.0.ops.send(Op::Shutdown);
        self.0.task.abort();
    }
}

#[async_trait]
impl Tool for Task {
    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&TASK)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let text = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default()
        };
        let (what, prompt) = (text("description"), text("prompt"));
        if prompt.is_empty() {
            return Err(ToolError::InvalidParams("task needs a `prompt`".into()));
        }
        let kind = match text("agent_type") {
            "" => None,
            name => Some(self.types.get(name).ok_or_else(|| {
                ToolError::InvalidParams(format!(
                    "no agent type is named `{name}`; the types are: {}",
                    self.types.names()
                ))
            })?),
        };
        let _permit = self
            .running
            .acquire()
            .await
            .map_err(|e| ToolError::Crashed(e.to_string()))?;
        let mut config = self.config.clone();
        config.approval = Some(self.mode.get());
        if let Some(n) = kind.and_then(|t| t.max_tool_turns) {
            config.max_tool_turns = n;
        }
        // Stored as the child of the parent's session and of this call, when the parent's is.
        let caller = ctx.caller.clone();
        let sessions = match (&self.sessions, &caller) {
            (Some(store), Some(c)) => c.session_id.clone().map(|session| {
                session::Child::of(
                    store.clone(),
                    Parent {
                        session,
                        call: c.call_id.clone(),
                    },
                )
            }),
            _ => None,
        };
        let mut model = kind
            .and_then(|t| t.model.clone())
            .unwrap_or_else(|| self.provider.spec().model.clone());
        let mut session_id = None;
        let setup = AgentSetup {
            config,
            provider: self.provider.clone(),
            registry: self.tools(kind.and_then(|t| t.tools.as_deref())),
            sessions,
            cwd: self.cwd.clone(),
            system_prompt: self.system_prompt(kind),
            // Placed as the parent's is (`provider::Request::environment`).
            environment: format!("Working directory: {}\n", self.cwd.display()),
            instructions: Vec::new(),
            skills: Default::default(),
            mode: None,
            resumed: None,
            follow_tree: false,
        };
        let (tx, mut events) = unbounded_channel();
        let agent = Running(super::spawn(setup, tx));
        if let Some(model) = kind.and_then(|t| t.model.clone()) {
            let _ = agent.0.ops.send(Op::SetModel(model));
        }
        let _ = agent.0.ops.send(Op::Submit(prompt.to_string()));
        let progress = crate::tools::progress::Sink::current();
        let limit = kind
            .and_then(|t| t.timeout_secs)
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
        let mut answer = String::new();
        let mut calls = 0;
        let who = format!("{}: {what}", kind.map_or("general", |t| t.name.as_str()));
        // The sub-agent's own events, tagged with this call and its session.
        let report = |event: Event, session: &Option<String>| {
            if let Some(c) = &caller {
                c.report(Event::SubAgent {
                    id: c.call_id.clone(),
                    session: session.clone(),
                    event: Box::new(event),
                });
            }
        };
        let run = async {
            while let Some(ev) = events.recv().await {
                match ev {
                    Event::SessionStarted { id, model: m, .. } => {
                        session_id = id;
                        model = m;
                    }
                    Event::ModelChanged { model: m, .. } => model = m,
                    // Counted in the parent's session as its own.
                    Event::Usage {
                        input,
                        output,
                        cached,
                        cost,
                        ..
                    } => {
                        if let Some(c) = &caller {
                            c.spent(Spent {
                                model: model.clone(),
                                input,
                                cached,
                                output,
                                cost,
                                session: session_id.clone(),
                            });
                        }
                    }
                    Event::TextDelta { text } => {
                        answer.push_str(&text);
                        report(Event::TextDelta { text }, &session_id);
                    }
                    Event::ToolCallStarted { id, name, arguments } => {
                        // Only the last response's text is the answer.
                        answer.clear();
                        calls += 1;
                        if let Some(p) = &progress {
                            p.report(format!("sub-agent: {name} (call {calls})"));
                        }
                        report(Event::ToolCallStarted { id, name, arguments }, &session_id);
                    }
                    Event::ApprovalRequested {
                        id,
                        name,
                        arguments,
                        reason,
                        always,
                        outside_sandbox,
                    } => {
                        // Asked as this call (the approver holds one question per id),
                        // naming the sub-agent.
                        let answer = match &caller {
                            Some(c) => {
                                let _one = self.asking.lock().await;
                                c.ask(Event::ApprovalRequested {
                                    id: c.call_id.clone(),
                                    name,
                                    arguments,
                                    reason: format!("(asked by the sub-agent {who}) {reason}"),
                                    always,
                                    outside_sandbox,
                                })
                                .await
                            }
                            None => Answer::Unattended,
                        };
                        let _ = agent.0.ops.send(Op::Approve { id, answer });
                    }
                    Event::TurnEnded { reason } => {
                        report(Event::TurnEnded { reason }, &session_id);
                        return Some(reason);
                    }
                    // Shown as this session's own, or not at all.
                    Event::ApprovalMode { .. } | Event::Permission(_) => {}
                    other => report(other, &session_id),
                }
            }
            None
        };
        let reason = match tokio::time::timeout(limit, run).await {
            Ok(reason) => reason,
            Err(_) => {
                return Err(ToolError::Timeout {
                    message: format!(
                        "the sub-agent ran past its {} s limit and was stopped",
                        limit.as_secs()
                    ),
                    partial_output: answer,
                });
            }
        };
        let ended = match reason {
            Some(TurnEndReason::Done) => "done",
            Some(TurnEndReason::Limit) => "stopped at its max_tool_turns",
            Some(TurnEndReason::Interrupted) => "interrupted",
            Some(TurnEndReason::Error) | None => "failed",
        };
        let agent_type = kind.map_or("general", |t| t.name.as_str());
        let summary = format!("{agent_type}: {what} ({calls} tool calls, {ended})");
        let mut result =
            json!({"agent_type": agent_type, "ended": ended, "tool_calls": calls, "answer": answer.trim()});
        if let Some(id) = session_id {
            result["session"] = json!(id);
        }
        Ok(ToolOutput::new(result, summary))
    }
}
