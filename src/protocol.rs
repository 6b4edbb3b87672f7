//! The agent protocol: `Op` (front end → agent) and `Event` (agent → front ends).
//! Front ends see only these; under `--json` each `Event` is one JSON line.

use serde::{Serialize, Serializer};

use crate::message::Message;

/// A session's messages as `SessionStarted` carries them: shared with the agent's own
/// conversation rather than copied (a long session's history would otherwise be held
/// twice), until one side changes them. Reads as a slice; serialises as a list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History(std::sync::Arc<Vec<Message>>);

impl History {
    /// The messages to change, copied first only when another holder still shares them.
    pub fn make_mut(&mut self) -> &mut Vec<Message> {
        std::sync::Arc::make_mut(&mut self.0)
    }

    /// The messages, copied only when another holder still shares them.
    pub fn into_vec(self) -> Vec<Message> {
        std::sync::Arc::try_unwrap(self.0).unwrap_or_else(|shared| shared.as_ref().clone())
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        History(std::sync::Arc::new(messages))
    }
}

impl std::ops::Deref for History {
    type Target = [Message];
    fn deref(&self) -> &[Message] {
        &self.0
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.as_slice().serialize(s)
    }
}

/// What a front end asks of the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A user turn.
    Submit(String),
    /// Drop the request or tool in flight, keeping what arrived.
    Cancel,
    /// Use this model for the following requests: `/model MODEL` within the current
    /// provider, `/model PROVIDER/MODEL` switches provider (answered with `ModelChanged`,
    /// or an error notice and the current provider stays).
    SetModel(String),
    /// List the configured providers and their models (`/model` alone); answered with
    /// `Event::Providers`.
    ListModels,
    /// Start over in a fresh session (`/new`).
    NewSession,
    /// Continue a stored session by id or unique id prefix (`/resume ID`).
    Resume(String),
    /// Ask for the stored sessions (`/sessions`); answered with `Event::Sessions`.
    ListSessions,
    /// Compact the conversation now (`/compact [instructions]`): the model summarises it
    /// and the summary stands for the earlier messages in later requests.
    Compact(Option<String>),
    /// Finish and stop the agent task.
    Shutdown,
    /// Rescan the tool folders now (and restart failed MCP servers); the new set is
    /// offered from the next request.
    RefreshTools,
    /// Restart the MCP server of this name (`/mcp restart NAME`); answered with a notice.
    RestartMcp(String),
    /// The answer to `Event::ApprovalRequested` for call `id`.
    Approve { id: String, answer: Answer },
    /// Switch the approval mode (Shift+Tab in the TUI); answered with `ApprovalMode`.
    SetApprovalMode(crate::policy::Mode),
    /// List the rules in force and the remembered answers (`/permissions`); answered with
    /// `Event::Permissions`.
    ListPermissions,
    /// The session's tokens and cost per model (`/cost`); answered with `Event::Spend`.
    Spend,
    /// Forget a remembered answer, by its number in the list or its text
    /// (`/permissions rm N`); answered with a notice.
    ForgetPermission(String),
    /// Put back what the newest `turns` turns changed (`/undo [N]`); a file changed since
    /// by somebody else is overwritten only with `force`. Answered with a notice.
    Undo { turns: usize, force: bool },
    /// List the turns that can be undone (`/checkpoints`); answered with a notice.
    ListCheckpoints,
    /// The configured hooks and where each comes from (`/hooks`); answered with a notice.
    ListHooks,
    /// The loaded skills, each with its description and where it comes from (`/skills`);
    /// answered with a notice.
    ListSkills,
    /// Which instruction files (AGENTS.md, CLAUDE.md, their imports) the system prompt
    /// carries, in order, with their sizes (`/memory`); answered with a notice.
    ListInstructions,
}

/// What the user answered to an approval question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Run it (`y`).
    Yes,
    /// Do not run it (`n`, Esc); the reason, if given, goes to the model.
    No(Option<String>),
    /// Run it, and remember the offered rules for this project (`a`).
    Always,
    /// Run it, and allow the same for the rest of this session (`s`).
    Session,
    /// Nobody is there to answer (scripted mode): not run, `NOT_APPROVED`.
    Unattended,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "snake_case")]
pub enum TurnEndReason {
    Done,
    Interrupted,
    Limit,
    Error,
}

/// Severity of a notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// Declares `Event` as written in it and, for tests, `Event::every_variant_hostile`: one
/// event of each variant with a hostile value in every field (`crate::hostile`), so that
/// the front ends' test over every field of every event covers a variant or field added
/// later without listing it.
macro_rules! events {
    (
        $(#[$m:meta])*
        pub enum Event {
            $($(#[$vm:meta])* $v:ident $({ $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? })? $(($u:ty))?),* $(,)?
        }
    ) => {
        $(#[$m])*
        pub enum Event {
            $($(#[$vm])* $v $({ $($(#[$fm])* $f: $t),* })? $(($u))?),*
        }

        #[cfg(test)]
        impl Event {
            /// One event of every variant, every field of it hostile.
            pub(crate) fn every_variant_hostile() -> Vec<Event> {
                use crate::hostile::Hostile;
                vec![$(Event::$v $({ $($f: <$t>::hostile()),* })? $((<$u>::hostile()))?),*]
            }
        }
    };
}

events! {
/// What the agent tells front ends.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A session is active (new or resumed); `history` is what a front end shows first.
    SessionStarted {
        id: Option<String>,
        model: String,
        history: History,
        /// Tokens (input + output) the session used so far: 0 for a new one.
        tokens: u64,
        /// USD the session cost so far, when any of its responses had a price.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        /// Where a turn of `history` was interrupted: each is the number of history
        /// messages before the mark (so a front end shows it where it was shown live).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        interrupted: Vec<usize>,
    },
    /// `/model NAME` switched the model (and maybe the provider) for the following requests.
    ModelChanged {
        model: String,
        /// The provider the following requests go to (`openai`, `anthropic`, a section).
        provider: String,
    },
    /// The answer to `Op::ListModels`: every configured provider, the current one marked.
    Providers {
        providers: Vec<ProviderInfo>,
    },
    /// The text a turn starts from, as typed (`-p` with piped stdin included); the model
    /// gets its attachments after it.
    UserMessage {
        text: String,
        /// The `@file` mentions attached to it, one line each (`src/main.rs, 120 lines`);
        /// their content went to the model after the text.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<String>,
    },
    TurnStarted,
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    ToolCallStarted {
        id: String,
        name: String,
        /// The model's raw arguments; under `--json` the parsed object (the raw string
        /// when it is not JSON).
        #[serde(serialize_with = "json_or_string")]
        arguments: String,
    },
    ToolCallFinished {
        id: String,
        summary: String,
        /// The envelope the model got; serialised as the JSON object it is.
        #[serde(serialize_with = "json_or_string")]
        output: String,
        success: bool,
    },
    /// Tokens of one response. `input` counts all of the request; `cached` is the part
    /// of it the vendor read from its prompt cache (omitted when none was reported).
    Usage {
        input: u64,
        output: u64,
        #[serde(skip_serializing_if = "is_zero")]
        cached: u64,
        /// The share of the context window the request used, in percent, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        context_pct: Option<u32>,
        /// USD this response cost, when the model has a price (never guessed).
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
    /// The answer to `Op::Spend` (`/cost`): the session's tokens and cost per model.
    Spend {
        models: Vec<crate::spend::ModelSpend>,
        /// USD in all, when any response had a price.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
    /// The conversation was compacted: estimated request tokens before and after.
    Compacted {
        before: u64,
        after: u64,
    },
    /// The running call reported progress (an MCP server's `notifications/progress`), as one
    /// short line: `3/5 (60%) message`. Front ends show it on the call's line.
    ToolCallProgress {
        id: String,
        text: String,
    },
    /// What an external tool wrote on stderr (never sent to the model); `--verbose` shows it.
    ToolStderr {
        id: String,
        text: String,
    },
    /// What the running call (`bash`, an external tool's stderr) printed since the last
    /// delta, at most every 50 ms while it runs; for watching only: the call's result is
    /// what `ToolCallFinished` carries.
    ToolOutputDelta {
        id: String,
        text: String,
        /// Bytes printed before `text` that were left out (a flood of output).
        #[serde(skip_serializing_if = "is_zero")]
        skipped: u64,
    },
    /// A hook ran (`[hooks]`): its event (and tool), its command, where it was
    /// configured, how long it took and what it decided; `line` says all that in one line.
    Hook {
        event: String,
        tool: Option<String>,
        command: String,
        source: String,
        ms: u64,
        outcome: String,
        line: String,
    },
    /// The model's plan changed (`update_plan`): the whole list of steps.
    PlanUpdated {
        steps: Vec<PlanStep>,
    },
    Retrying {
        attempt: u32,
        in_secs: f64,
        reason: String,
    },
    Notice {
        level: NoticeLevel,
        text: String,
    },
    TurnEnded {
        reason: TurnEndReason,
    },
    /// The answer to `Op::ListSessions`: stored sessions, newest first.
    Sessions {
        sessions: Vec<SessionInfo>,
    },
    /// `/undo` did nothing: these files (shown paths) were changed since ikigai's turn
    /// left them. `Op::Undo { turns, force: true }` overwrites them; the TUI asks.
    UndoRefused {
        turns: usize,
        files: Vec<String>,
    },
    /// What the sub-agent running as tool call `id` (the `task` tool) did, in its session
    /// `session` when stored: its calls, their progress and results, its text, notices and
    /// end. Its questions come as this session's own `ApprovalRequested` (with the call's
    /// `id`), its tokens as this session's `Usage`.
    SubAgent {
        id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        event: Box<Event>,
    },
    /// A call needs the user's approval; the turn waits for `Op::Approve` with this `id`.
    /// Asked one at a time, in the order the calls came.
    ApprovalRequested {
        id: String,
        name: String,
        #[serde(serialize_with = "json_or_string")]
        arguments: String,
        /// Why it asks, in a sentence.
        reason: String,
        /// The rules `Answer::Always` (and `Session`) would add; empty when the call cannot
        /// be allowed part by part (then only yes and no are offered).
        always: Vec<String>,
        /// The call already ran and the sandbox stopped it: the question is whether to run
        /// it again outside the sandbox (only yes and no are offered).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        outside_sandbox: bool,
    },
    /// The approval mode now in force (at start and after `Op::SetApprovalMode`).
    ApprovalMode {
        mode: crate::policy::Mode,
    },
    /// How a call was decided (stored with the call too).
    Permission(crate::policy::record::Record),
    /// The answer to `Op::ListPermissions`.
    Permissions {
        mode: crate::policy::Mode,
        /// Config rules as `LIST RULE (SOURCE)` lines.
        rules: Vec<String>,
        /// This project's remembered answers, numbered from 1 by their position.
        remembered: Vec<String>,
        /// Answers kept for this session only.
        session: Vec<String>,
    },
}
}

/// One stored session as listed (`ikigai sessions`, `/sessions`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub struct SessionInfo {
    pub id: String,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    pub cwd: String,
    pub provider: String,
    pub model: String,
    pub messages: i64,
    pub title: Option<String>,
    /// The session this one was forked from (when another process held it).
    pub forked_from: Option<String>,
    /// A sub-agent's session: the session whose `task` call ran it, and that call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call: Option<String>,
    /// USD its priced responses cost (absent when none had a price).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// One configured provider as `/model` lists it. Never holds a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub struct ProviderInfo {
    pub name: String,
    /// The wire kind (`openai-chat`, `openai-responses`, `anthropic`, `google`, `local`).
    pub kind: String,
    /// The model the provider uses: the current model for the current provider, else its
    /// configured default.
    pub model: String,
    /// Whether the following requests go to this provider.
    pub current: bool,
    pub key: KeyState,
    /// The environment variable the key is read from (empty when none is used).
    pub key_env: String,
    /// What the endpoint's model list offers (empty when not asked or not offered).
    pub models: Vec<String>,
    /// Why the model list could not be read (one line), when asking failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whether a provider has the key it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "snake_case")]
pub enum KeyState {
    /// A key is set.
    Set,
    /// The endpoint needs a key and none is set.
    Missing,
    /// The endpoint needs no key (local servers).
    NotNeeded,
}

/// One step of the model's plan (`update_plan`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PlanStep {
    pub step: String,
    pub status: StepStatus,
}

/// Where a plan step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
}

/// Writes `text` as the JSON value it holds, or as a string when it is not JSON.
fn json_or_string<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => v.serialize(s),
        Err(_) => s.serialize_str(text),
    }
}

impl Event {
    pub fn notice(level: NoticeLevel, text: impl Into<String>) -> Self {
        Event::Notice {
            level,
            text: text.into(),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_as_tagged_json_lines() {
        let e = Event::TurnEnded {
            reason: TurnEndReason::Interrupted,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"turn_ended","reason":"interrupted"}"#
        );
        let e = Event::ToolCallStarted {
            id: "c".into(),
            name: "glob".into(),
            arguments: r#"{"pattern":"*.rs"}"#.into(),
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"tool_call_started","id":"c","name":"glob","arguments":{"pattern":"*.rs"}}"#
        );
        let e = Event::ToolCallStarted {
            id: "c".into(),
            name: "glob".into(),
            arguments: r#"{"pattern": "*"#.into(),
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"tool_call_started","id":"c","name":"glob","arguments":"{\"pattern\": \"*"}"#
        );
        let e = Event::TextDelta { text: "hi".into() };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"text_delta","text":"hi"}"#
        );
    }
}
