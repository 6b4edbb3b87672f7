//! The running call's live output on its way to the front ends: each delta from
//! `tools::live` becomes a `ToolOutputDelta` event, with configured secrets hidden even when
//! one is split between two deltas (its start waits for the next delta, or the end of the
//! call). Owns no throttling (`tools::live` does), no rendering, and nothing the model gets.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;

use super::state::AgentState;
use crate::protocol::Event;
use crate::redact::Redactor;
use crate::tools::live::{Delta, Sink};

/// Output not yet shown: the tail that may be the start of a secret.
#[derive(Default)]
struct Held {
    text: String,
    skipped: u64,
}

/// The live output of one call.
pub(super) struct LiveOutput {
    id: String,
    events: UnboundedSender<Event>,
    redactor: Arc<Redactor>,
    held: Arc<Mutex<Held>>,
}

impl LiveOutput {
    pub(super) fn new(st: &AgentState, id: &str) -> Self {
        LiveOutput {
            id: id.to_string(),
            events: st.events(),
            redactor: st.redactor(),
            held: Arc::default(),
        }
    }

    /// The sink the call runs with.
    pub(super) fn sink(&self) -> Sink {
        let (id, events, redactor, held) = (
            self.id.clone(),
            self.events.clone(),
            self.redactor.clone(),
            self.held.clone(),
        );
        Sink::new(move |d: Delta| {
            let Ok(mut h) = held.lock() else { return };
            h.text.push_str(&d.text);
            h.skipped += d.skipped;
            redactor.scrub_in_place(&mut h.text);
            let cut = h.text.len() - redactor.hold_back(&h.text);
            if cut == 0 {
                return;
            }
            let rest = h.text.split_off(cut);
            let text = std::mem::replace(&mut h.text, rest);
            let skipped = std::mem::take(&mut h.skipped);
            let _ = events.send(Event::ToolOutputDelta {
                id: id.clone(),
                text,
                skipped,
            });
        })
    }

    /// The call is done: what was held back is shown (it was no secret).
    pub(super) fn finish(self) {
        let Ok(mut h) = self.held.lock() else { return };
        if h.text.is_empty() {
            return;
        }
        let mut text = std::mem::take(&mut h.text);
        self.redactor.scrub_in_place(&mut text);
        let _ = self.events.send(Event::ToolOutputDelta {
            id: self.id.clone(),
            text,
            skipped: std::mem::take(&mut h.skipped),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_split_between_deltas_is_hidden() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let live = LiveOutput {
            id: "c".into(),
            events: tx,
            redactor: Arc::new(Redactor::new(["sk-verysecretvalue123".to_string()])),
            held: Arc::default(),
        };
        let sink = live.sink();
        for part in ["key=sk-very", "secretvalue123 done\n", "tail sk-ve"] {
            sink.send(Delta {
                text: part.into(),
                skipped: 0,
            });
        }
        live.finish();
        let mut shown = String::new();
        while let Ok(Event::ToolOutputDelta { text, .. }) = rx.try_recv() {
            shown.push_str(&text);
        }
        assert!(!shown.contains("verysecret"), "{shown}");
        assert!(shown.contains("[redacted] done\n"), "{shown}");
        assert!(shown.ends_with("tail sk-ve"), "held back, then shown: {shown}");
    }
}
