//! The agent protocol: `Op` (front end → agent) and `Event` (agent → front ends).
//! Front ends see only these; under `--json` each `Event` is one JSON line.

use serde::Serialize;

use crate::message::Message;

/// What a front end asks of the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A user turn.
    Submit(String),
    /// Drop the request or tool in flight, keeping what arrived.
    Cancel,
    /// A slash command, without its leading `/` removed (e.g. `/model gpt-5`).
    Command(String),
    /// Compact the conversation now (`/compact [instructions]`): the model summarises it
    /// and the summary stands for the earlier messages in later requests.
    Compact(Option<String>),
    /// Finish and stop the agent task.
    Shutdown,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEndReason {
    Done,
    Interrupted,
    Limit,
    Error,
}

/// Severity of a notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// What the agent tells front ends.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A session is active (new or resumed); `history` is what a front end shows first.
    SessionStarted {
        id: Option<String>,
        model: String,
        history: Vec<Message>,
    },
    /// `/model NAME` switched the model for the following requests.
    ModelChanged {
        model: String,
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
        arguments: String,
    },
    ToolCallFinished {
        id: String,
        summary: String,
        output: String,
        success: bool,
    },
    Usage {
        input: u64,
        output: u64,
        /// The share of the context window the request used, in percent, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        context_pct: Option<u32>,
    },
    /// The conversation was compacted: estimated request tokens before and after.
    Compacted {
        before: u64,
        after: u64,
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
}

impl Event {
    pub fn notice(level: NoticeLevel, text: impl Into<String>) -> Self {
        Event::Notice {
            level,
            text: text.into(),
        }
    }
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
        let e = Event::TextDelta { text: "hi".into() };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"text_delta","text":"hi"}"#
        );
    }
}
