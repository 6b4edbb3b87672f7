//! The response side of the text protocol, as pure state machines over `StreamEvent`s:
//! `TextDecoder` turns SYSTEM.EXEC tags in streamed text into tool calls (holding back what
//! may start a tag), and `RecoveryDecoder` turns a whole response that is a tool call
//! written as JSON text into a real call. No IO; the wrapper feeds them.

use super::calls::to_call;
use super::recover::recover;
use super::tags::{End, Piece, Scanner};
use crate::provider::{FinishReason, StreamEvent};
use crate::tool_vocab::ToolSchema;

/// A fresh id for a call that came from text.
fn new_id(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}_{}", &id[..12])
}

fn end_of(reason: &Option<FinishReason>) -> End {
    match reason {
        Some(FinishReason::Length) => End::Length,
        _ => End::Stop,
    }
}

/// Text mode: tags in, tool calls out.
pub struct TextDecoder {
    scanner: Scanner,
    tools: Vec<ToolSchema>,
    calls: usize,
    /// A command completed inside the stream: the rest of the response is not read.
    stopped: bool,
}

impl TextDecoder {
    pub fn new(tools: Vec<ToolSchema>) -> Self {
        TextDecoder {
            scanner: Scanner::with_tools(
                tools
                    .iter()
                    .map(|t| t.name.clone())
                    .filter(|n| n != super::calls::SHELL_TOOL)
                    .collect(),
            ),
            tools,
            calls: 0,
            stopped: false,
        }
    }

    /// True once a complete command was seen: stop reading, then call `finish`.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Translates one inner event.
    pub fn push(&mut self, event: StreamEvent) -> Vec<StreamEvent> {
        match event {
            StreamEvent::TextDelta(t) => {
                let pieces = self.scanner.push(&t);
                let out = self.pieces(pieces);
                if self.calls > 0 {
                    self.stopped = true;
                }
                out
            }
            StreamEvent::Finished { reason } => self.finish_with(end_of(&reason), reason),
            // Native calls cannot happen (no tools were sent); anything else passes.
            other => vec![other],
        }
    }

    /// The stream ended without a `Finished` (cut off) or was stopped after a command.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        let end = if self.stopped { End::Stop } else { End::Broken };
        self.finish_with(end, None)
    }

    fn finish_with(&mut self, end: End, reason: Option<FinishReason>) -> Vec<StreamEvent> {
        let pieces = self.scanner.finish(end);
        let mut out = self.pieces(pieces);
        let reason = if self.calls > 0 {
            Some(FinishReason::ToolCalls)
        } else {
            reason
        };
        if end != End::Broken || self.calls > 0 {
            out.push(StreamEvent::Finished { reason });
        }
        out
    }

    fn pieces(&mut self, pieces: Vec<Piece>) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for p in pieces {
            match p {
                Piece::Text(t) => out.push(StreamEvent::TextDelta(t)),
                Piece::Notice(n) => out.push(StreamEvent::Notice(n)),
                Piece::Exec(cmd) => {
                    let (name, arguments) = to_call(&cmd, &self.tools);
                    self.calls += 1;
                    out.push(StreamEvent::ToolCall {
                        id: new_id("exec"),
                        name,
                        arguments,
                    });
                }
            }
        }
        out
    }
}

/// Native mode with recovery: a response whose first visible character may open a JSON
/// call (```, `{` or `<tool_call>`) is held back until it ends, then becomes a call when it
/// is exactly one valid call, or is released as text.
pub struct RecoveryDecoder {
    tools: Vec<ToolSchema>,
    held: String,
    /// `Some(true)` holding, `Some(false)` streaming through, `None` undecided (only
    /// whitespace so far).
    holding: Option<bool>,
    native_calls: bool,
}

impl RecoveryDecoder {
    pub fn new(tools: Vec<ToolSchema>) -> Self {
        RecoveryDecoder {
            tools,
            held: String::new(),
            holding: None,
            native_calls: false,
        }
    }

    pub fn push(&mut self, event: StreamEvent) -> Vec<StreamEvent> {
        match event {
            StreamEvent::TextDelta(t) => {
                if self.holding == Some(false) {
                    return vec![StreamEvent::TextDelta(t)];
                }
                self.held.push_str(&t);
                let start = self.held.trim_start();
                if start.is_empty() {
                    return Vec::new();
                }
                let candidate = start.starts_with('`') || start.starts_with('{') || start.starts_with('<');
                self.holding = Some(candidate);
                if candidate {
                    Vec::new()
                } else {
                    vec![StreamEvent::TextDelta(std::mem::take(&mut self.held))]
                }
            }
            StreamEvent::ToolCall { .. } => {
                self.native_calls = true;
                vec![event]
            }
            StreamEvent::Finished { reason } => {
                let mut out = Vec::new();
                let whole = reason != Some(FinishReason::Length);
                let held = std::mem::take(&mut self.held);
                if !self.native_calls
                    && whole
                    && let Some(call) = recover(&held, &self.tools)
                {
                    out.push(StreamEvent::Notice(format!(
                        "a {} call written as text was recovered and run",
                        call.name
                    )));
                    out.push(StreamEvent::ToolCall {
                        id: new_id("recovered"),
                        name: call.name,
                        arguments: call.arguments,
                    });
                    out.push(StreamEvent::Finished {
                        reason: Some(FinishReason::ToolCalls),
                    });
                    return out;
                }
                if !held.is_empty() {
                    out.push(StreamEvent::TextDelta(held));
                }
                out.push(StreamEvent::Finished { reason });
                out
            }
            other => vec![other],
        }
    }

    /// The stream ended early: release what was held.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        let held = std::mem::take(&mut self.held);
        if held.is_empty() {
            Vec::new()
        } else {
            vec![StreamEvent::TextDelta(held)]
        }
    }
}

/// Whether a call id was made by recovery (so the agent can mark it in the event log).
pub fn is_recovered_id(id: &str) -> bool {
    id.starts_with("recovered_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;
    use serde_json::{Value, json};

    fn text(s: &str) -> StreamEvent {
        StreamEvent::TextDelta(s.to_string())
    }

    fn finished(r: Option<FinishReason>) -> StreamEvent {
        StreamEvent::Finished { reason: r }
    }

    fn calls(events: &[StreamEvent]) -> Vec<(String, Value)> {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall { name, arguments, .. } => {
                    Some((name.clone(), serde_json::from_str(arguments).unwrap()))
                }
                _ => None,
            })
            .collect()
    }

    fn shown(events: &[StreamEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn text_mode_turns_a_tag_into_a_bash_call_and_never_shows_the_tags() {
        let mut d = TextDecoder::new(Registry::builtin().schemas());
        let mut out = Vec::new();
        for chunk in ["I'll check.\n<||SYS", "TEM.EXEC>uname", " -a"] {
            out.extend(d.push(text(chunk)));
        }
        // The stop sequence ate the closing tag; the server says stop.
        out.extend(d.push(finished(Some(FinishReason::Stop))));
        assert_eq!(shown(&out), "I'll check.\n");
        assert_eq!(
            calls(&out),
            vec![("bash".to_string(), json!({"command": "uname -a"}))]
        );
        assert_eq!(out.last(), Some(&finished(Some(FinishReason::ToolCalls))));
        // Text before the call keeps its place before it.
        let first_call = out
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCall { .. }))
            .unwrap();
        assert!(matches!(&out[0], StreamEvent::TextDelta(_)) && first_call > 0);
    }

    #[test]
    fn a_closed_tag_stops_reading_and_a_cut_one_is_never_run() {
        let mut d = TextDecoder::new(Registry::builtin().schemas());
        let out = d.push(text(
            "<||SYSTEM.EXEC>glob(pattern=\"*.rs\")<SYSTEM.EXEC||> and then",
        ));
        assert!(d.stopped());
        assert_eq!(
            calls(&out),
            vec![("glob".to_string(), json!({"pattern": "*.rs"}))]
        );
        let end = d.finish();
        assert_eq!(end.last(), Some(&finished(Some(FinishReason::ToolCalls))));

        let mut d = TextDecoder::new(Registry::builtin().schemas());
        let mut out = d.push(text("<||SYSTEM.EXEC>rm -rf bu"));
        out.extend(d.push(finished(Some(FinishReason::Length))));
        assert!(calls(&out).is_empty());
        assert!(out.iter().any(|e| matches!(e, StreamEvent::Notice(_))));
        assert_eq!(shown(&out), "<||SYSTEM.EXEC>rm -rf bu");
    }

    #[test]
    fn recovery_turns_the_whole_json_answer_into_a_call_and_leaves_prose_alone() {
        let tools = Registry::builtin().schemas();
        let mut d = RecoveryDecoder::new(tools.clone());
        let mut out = Vec::new();
        for c in [
            "```",
            "json\n{\"name\": \"glob\", ",
            "\"arguments\": {\"pattern\": \"*.rs\"}}\n```",
        ] {
            out.extend(d.push(text(c)));
        }
        assert!(out.is_empty(), "held back while it may be a call");
        out.extend(d.push(finished(Some(FinishReason::Stop))));
        assert_eq!(
            calls(&out),
            vec![("glob".to_string(), json!({"pattern": "*.rs"}))]
        );
        assert_eq!(shown(&out), "");
        let id = out
            .iter()
            .find_map(|e| match e {
                StreamEvent::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .unwrap();
        assert!(is_recovered_id(&id));

        // Prose streams through at once and is never recovered.
        let mut d = RecoveryDecoder::new(tools.clone());
        assert_eq!(d.push(text("Sure: ")), vec![text("Sure: ")]);
        assert_eq!(
            d.push(text("{\"name\": \"glob\"}")),
            vec![text("{\"name\": \"glob\"}")]
        );
        // A held block that is not a valid call is released whole.
        let mut d = RecoveryDecoder::new(tools);
        let mut out = d.push(text("{\"files\": 3}"));
        out.extend(d.push(finished(Some(FinishReason::Stop))));
        assert_eq!(shown(&out), "{\"files\": 3}");
        assert!(calls(&out).is_empty());
    }
}
