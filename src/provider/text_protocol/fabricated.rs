//! Native calls from small local models that write a tool's result themselves: the
//! chat templates' result tags (`<tool_response>`, …) are stop sequences, so a made-up
//! result is never shown as an answer or trusted as a result; and a response left with
//! nothing (the model opened a result tag at once, or echoed a real result inside one
//! instead of answering) is asked for once more, with one short correction. Used by the
//! wrapper for the providers that recover text calls (local presets).

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::StreamExt;

use super::decode::RecoveryDecoder;
use crate::message::Message;
use crate::provider::{EventStream, FinishReason, Provider, ProviderError, Request, StreamEvent};
use crate::tool_vocab::ToolSchema;

/// Where the common chat templates put a tool's result (Qwen and Hermes, Mistral, and a
/// generic form). The model never has a reason to write one.
pub const RESULT_TAGS: [&str; 3] = ["<tool_response>", "[TOOL_RESULTS]", "<tool_result>"];

/// What the model is told, once, when its response was empty.
pub const CORRECTION: &str = "Your reply was empty. A tool's result comes only from running the tool: \
                              never write one yourself. Call a tool if you need one; otherwise \
                              state your answer in words.";

/// The request's stop sequences with the result tags after them.
pub fn stops(given: &[String]) -> Vec<String> {
    let mut all = given.to_vec();
    all.extend(RESULT_TAGS.iter().map(|t| t.to_string()));
    all
}

/// Text with everything from the first result tag on taken out, holding back what may
/// still become one; for servers that ignore stop sequences. Feed `push`, then `finish`.
#[derive(Default)]
pub struct Cut {
    pending: String,
    cut: bool,
}

impl Cut {
    /// The part of `text` that is certain to come before any result tag.
    pub fn push(&mut self, text: &str) -> String {
        if self.cut {
            return String::new();
        }
        self.pending.push_str(text);
        if let Some(at) = RESULT_TAGS.iter().filter_map(|t| self.pending.find(t)).min() {
            self.cut = true;
            self.pending.truncate(at);
            return std::mem::take(&mut self.pending);
        }
        // Hold back the longest end that a tag could still start with.
        let hold = (1..=self.pending.len())
            .rev()
            .filter(|n| self.pending.is_char_boundary(self.pending.len() - n))
            .find(|n| {
                let end = &self.pending[self.pending.len() - n..];
                RESULT_TAGS.iter().any(|t| t.starts_with(end))
            })
            .unwrap_or(0);
        let keep = self.pending.split_off(self.pending.len() - hold);
        std::mem::replace(&mut self.pending, keep)
    }

    /// Whether a result tag was found.
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// What was held back, once the text ended.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

/// `inner` with each response's text cut at the first result tag (`Cut`), a notice
/// saying so.
pub fn cut_stream(inner: EventStream) -> EventStream {
    let st = (inner, Cut::default(), VecDeque::new(), false, false);
    Box::pin(futures_util::stream::unfold(
        st,
        |(mut inner, mut cut, mut out, mut said, mut done)| async move {
            loop {
                if let Some(item) = out.pop_front() {
                    return Some((item, (inner, cut, out, said, done)));
                }
                if done {
                    return None;
                }
                let next = inner.next().await;
                let ending = !matches!(next, Some(Ok(StreamEvent::TextDelta(_))));
                if ending {
                    let rest = cut.finish();
                    if !rest.is_empty() {
                        out.push_back(Ok(StreamEvent::TextDelta(rest)));
                    }
                }
                match next {
                    Some(Ok(StreamEvent::TextDelta(t))) => {
                        let shown = cut.push(&t);
                        if !shown.is_empty() {
                            out.push_back(Ok(StreamEvent::TextDelta(shown)));
                        }
                        if cut.was_cut() && !said {
                            said = true;
                            out.push_back(Ok(StreamEvent::Notice(
                                "the model began writing a tool result itself; its answer ends there"
                                    .to_string(),
                            )));
                        }
                    }
                    Some(other) => out.push_back(other),
                    None => done = true,
                }
            }
        },
    ))
}

/// A request kept to be sent once more, with the correction after it.
pub struct Again {
    inner: Arc<dyn Provider>,
    model: String,
    system: String,
    messages: Vec<Message>,
    tools: Vec<ToolSchema>,
    stop: Vec<String>,
    max_output_tokens: Option<u64>,
}

impl Again {
    pub fn new(inner: Arc<dyn Provider>, request: &Request<'_>) -> Self {
        let mut messages = request.messages.to_vec();
        messages.push(Message::user(CORRECTION));
        Again {
            inner,
            model: request.model.to_string(),
            system: request.system.to_string(),
            messages,
            tools: request.tools.to_vec(),
            stop: request.stop.to_vec(),
            max_output_tokens: request.max_output_tokens,
        }
    }

    async fn send(&self) -> Result<EventStream, ProviderError> {
        self.inner
            .stream(Request {
                model: &self.model,
                system: &self.system,
                messages: &self.messages,
                tools: &self.tools,
                stop: &self.stop,
                max_output_tokens: self.max_output_tokens,
            })
            .await
    }

    /// `first`, and when it finished having shown nothing (no text but blanks, no call)
    /// and was not cut by the length limit, a notice and the corrected request's
    /// response (through `wrap`, as the first one went) in place of its end.
    pub fn around(
        self,
        first: EventStream,
        wrap: fn(EventStream, RecoveryDecoder) -> EventStream,
    ) -> EventStream {
        struct St {
            current: EventStream,
            again: Option<Again>,
            shown: bool,
            out: VecDeque<Result<StreamEvent, ProviderError>>,
            done: bool,
            wrap: fn(EventStream, RecoveryDecoder) -> EventStream,
        }
        let st = St {
            current: first,
            again: Some(self),
            shown: false,
            out: VecDeque::new(),
            done: false,
            wrap,
        };
        Box::pin(futures_util::stream::unfold(st, |mut st| async move {
            loop {
                if let Some(item) = st.out.pop_front() {
                    return Some((item, st));
                }
                if st.done {
                    return None;
                }
                match st.current.next().await {
                    Some(Ok(StreamEvent::Finished { reason }))
                        if !st.shown && reason != Some(FinishReason::Length) && st.again.is_some() =>
                    {
                        let Some(again) = st.again.take() else { continue };
                        st.out.push_back(Ok(StreamEvent::Notice(
                            "the model answered with no words (only a tool result it wrote itself, or \
                             none); it was asked once more for its answer"
                                .to_string(),
                        )));
                        match again.send().await {
                            Ok(s) => {
                                st.current =
                                    (st.wrap)(cut_stream(s), RecoveryDecoder::new(again.tools.clone()))
                            }
                            Err(e) => {
                                st.out.push_back(Err(e));
                                st.done = true;
                            }
                        }
                    }
                    Some(Ok(ev)) => {
                        match &ev {
                            StreamEvent::TextDelta(t) if !t.trim().is_empty() => st.shown = true,
                            StreamEvent::ToolCall { .. } => st.shown = true,
                            _ => {}
                        }
                        st.out.push_back(Ok(ev));
                    }
                    Some(Err(e)) => {
                        st.out.push_back(Err(e));
                        st.done = true;
                    }
                    None => st.done = true,
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut_all(chunks: &[&str]) -> (String, bool) {
        let mut c = Cut::default();
        let mut shown: String = chunks.iter().map(|t| c.push(t)).collect();
        shown.push_str(&c.finish());
        (shown, c.was_cut())
    }

    #[test]
    fn text_ends_at_the_first_result_tag_wherever_the_chunks_split_it() {
        let cases = [
            (
                "<tool_call>\n{\"name\": \"x\"}\n</tool_call>\n<tool_response>\n{\"v\": 1}\n</tool_response>\nIt is 1.",
                "<tool_call>\n{\"name\": \"x\"}\n</tool_call>\n",
            ),
            ("<tool_response>{\"result\": \"0.50.0\"}</tool_response>", ""),
            ("The version is [TOOL_RESULTS] 3", "The version is "),
            (
                "a < b and <tool_resp is not a tag",
                "a < b and <tool_resp is not a tag",
            ),
            ("é<tool_result>x", "é"),
        ];
        for (text, want) in cases {
            let tagged = want.len() < text.len();
            // Whole, and split at every byte position that is a char boundary.
            assert_eq!(cut_all(&[text]), (want.to_string(), tagged), "{text:?}");
            for i in (1..text.len()).filter(|i| text.is_char_boundary(*i)) {
                let got = cut_all(&[&text[..i], &text[i..]]);
                assert_eq!(got, (want.to_string(), tagged), "{text:?} split at {i}");
            }
        }
    }

    #[test]
    fn the_result_tags_follow_the_requests_own_stops() {
        let given = vec!["END".to_string()];
        let all = stops(&given);
        assert_eq!(all[0], "END");
        for tag in RESULT_TAGS {
            assert!(all.iter().any(|s| s == tag), "{tag}");
        }
    }
}
