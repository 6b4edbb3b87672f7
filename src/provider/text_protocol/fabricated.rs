//! Native calls from small local models that write a tool's result themselves: the
//! chat templates' result tags (`<tool_response>`, …) are stop sequences, and cut on our
//! side for servers that ignore them, so a made-up result is never shown as an answer or
//! trusted as a result. A response left with nothing (the model opened a result tag at
//! once, or echoed a real result inside one instead of answering) is asked for once more
//! (`again`) with `CORRECTION`. Used by the wrapper for the providers that recover text
//! calls (local presets).

use std::collections::VecDeque;

use futures_util::StreamExt;

use crate::provider::{EventStream, StreamEvent};

/// Where the common chat templates put a tool's result (Qwen and Hermes, Mistral, and a
/// generic form). The model never has a reason to write one.
pub const RESULT_TAGS: [&str; 3] = ["<tool_response>", "[TOOL_RESULTS]", "<tool_result>"];

/// What the model is told, once, when its native response was empty (`again`).
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
        let longest = RESULT_TAGS.iter().map(|t| t.len()).max().unwrap_or(0);
        let hold = (1..=self.pending.len().min(longest))
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
