//! `--json`: one line per event, the event as the protocol serialises it plus what a
//! script needs and the event alone does not say: `session_started` names the provider,
//! `turn_ended` carries the turn's answer (the text of its last response) and the tokens
//! (and the cost, when priced) of all its responses. Writes straight to the writer it is given (a resumed session's
//! `session_started` holds the whole history and is never built in memory). Knows no
//! terminal.

use std::io::Write;

use serde::Serialize;

use crate::protocol::Event;

/// Tokens of one turn: the sum over its responses; the cost of those that had a price.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct TurnUsage {
    pub input: u64,
    pub output: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub cached: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The event's own fields, then the added ones.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    event: &'a Event,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<TurnUsage>,
}

/// What the lines so far told about the turn in flight.
#[derive(Debug, Default)]
pub(crate) struct JsonLines {
    /// The provider the session started on.
    pub provider: String,
    answer: String,
    usage: TurnUsage,
}

impl JsonLines {
    /// Writes `ev` as one line.
    pub(crate) fn write(&mut self, out: &mut impl Write, ev: &Event) -> std::io::Result<()> {
        match ev {
            Event::TurnStarted => {
                self.answer.clear();
                self.usage = TurnUsage::default();
            }
            Event::TextDelta { text } => self.answer.push_str(text),
            // What came before a call was not the answer.
            Event::ToolCallStarted { .. } => self.answer.clear(),
            Event::Usage {
                input,
                output,
                cached,
                cost,
                ..
            } => {
                self.usage.input += input;
                self.usage.output += output;
                self.usage.cached += cached;
                if let Some(c) = cost {
                    self.usage.cost = Some(self.usage.cost.unwrap_or(0.0) + c);
                }
            }
            _ => {}
        }
        let ended = matches!(ev, Event::TurnEnded { .. });
        let line = Line {
            event: ev,
            provider: matches!(ev, Event::SessionStarted { .. }).then_some(self.provider.as_str()),
            text: ended.then_some(self.answer.as_str()),
            usage: ended.then_some(self.usage),
        };
        let mut w = std::io::BufWriter::with_capacity(64 * 1024, out);
        // The exact values, with what a terminal could act on escaped (`\u202e`).
        let mut json = serde_json::Serializer::with_formatter(&mut w, crate::text::JsonVisible);
        line.serialize(&mut json).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
        w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TurnEndReason;
    use serde_json::{Value, json};

    fn lines(events: &[Event]) -> Vec<Value> {
        let mut j = JsonLines {
            provider: "anthropic".into(),
            ..Default::default()
        };
        let mut out = Vec::new();
        for e in events {
            j.write(&mut out, e).unwrap();
        }
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn turn_ended_carries_the_answer_and_the_turns_tokens() {
        let usage = |input, output, cached, cost| Event::Usage {
            input,
            output,
            cached,
            context_pct: None,
            cost,
        };
        let got = lines(&[
            Event::TurnStarted,
            Event::TextDelta {
                text: "Let me look.".into(),
            },
            Event::ToolCallStarted {
                id: "c".into(),
                name: "glob".into(),
                arguments: "{}".into(),
            },
            usage(100, 10, 0, Some(0.25)),
            Event::TextDelta { text: "Two ".into() },
            Event::TextDelta {
                text: "files.".into(),
            },
            usage(150, 5, 90, Some(0.5)),
            Event::TurnEnded {
                reason: TurnEndReason::Done,
            },
        ]);
        assert_eq!(
            got.last().unwrap(),
            &json!({"type": "turn_ended", "reason": "done", "text": "Two files.",
                "usage": {"input": 250, "output": 15, "cached": 90, "cost": 0.75}})
        );
        assert_eq!(got[1], json!({"type": "text_delta", "text": "Let me look."}));
    }

    #[test]
    fn session_started_names_the_provider() {
        let got = lines(&[Event::SessionStarted {
            id: Some("s".into()),
            model: "claude".into(),
            history: Default::default(),
            tokens: 0,
            cost: None,
            interrupted: Vec::new(),
        }]);
        assert_eq!(got[0]["provider"], "anthropic");
        assert_eq!(got[0]["model"], "claude");
        assert_eq!(got[0]["type"], "session_started");
    }
}
