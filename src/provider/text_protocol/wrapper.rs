//! `ToolProtocol`: a provider wrapper that makes any provider work for models without
//! native tool calls. In text mode it rewrites the request (tools as tagged text in the
//! system prompt and history, no native tools, the closing tag as a stop sequence) and
//! decodes tags in the response into `ToolCall`s; in native mode it passes through,
//! optionally recovering calls written as JSON text, and falls back to text mode for the
//! session when the server says the model does not support tools. The agent loop never
//! knows which protocol is in use.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use futures_util::StreamExt;

use super::again::{Again, Decode, Sent};
use super::decode::{RecoveryDecoder, TextDecoder};
use super::echo::EchoStrip;
use super::environment;
use super::render::{instructions, rewrite};
use super::tags::{EXEC_CLOSE, OUTPUT_CLOSE, OUTPUT_OPEN};
use crate::message::{Kind, Message};
pub use crate::provider::ToolMode;
use crate::provider::{EventStream, Provider, ProviderError, Request, Spec, StreamEvent};

/// What the model is told, once, when its text-protocol response was empty.
pub const TEXT_CORRECTION: &str = "Your reply was empty. Go on: run the next command in a SYSTEM.EXEC tag, \
                                   or state your answer in words.";

pub struct ToolProtocol {
    inner: Arc<dyn Provider>,
    text: AtomicBool,
    mode: ToolMode,
}

impl ToolProtocol {
    pub fn new(inner: Arc<dyn Provider>, mode: ToolMode) -> Self {
        ToolProtocol {
            inner,
            text: AtomicBool::new(mode.text),
            mode,
        }
    }

    /// True while requests use the text protocol.
    pub fn is_text(&self) -> bool {
        self.text.load(Ordering::Relaxed)
    }

    async fn stream_text(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        // The example exchange (the coding task or the question, chosen by the session's
        // first prompt), then the conversation with the environment before its first
        // message (the system prompt and the tag instructions stay the same bytes for
        // every session of a kind: a local server's cache keeps them).
        let example = self
            .mode
            .primer
            .then(|| coding_example(request.tools, request.messages));
        let system = format!(
            "{}{}",
            request.system,
            instructions(request.tools, example == Some(true))
        );
        let all = with_example(example, request.messages, request.environment);
        let messages: Vec<Message> = rewrite(&all, self.mode.continuation);
        drop(all);
        // An output block is never the model's to write: a small model that starts one is
        // inventing a command's output, so the answer ends where the block would begin.
        // Its closing tag too: a 1.5B model writing back a file it has just read closes
        // the file's lines as the read's output block closed (`…<SYSTEM.OUTPUT||>`).
        let stop = [
            EXEC_CLOSE.to_string(),
            OUTPUT_OPEN.to_string(),
            OUTPUT_CLOSE.to_string(),
        ];
        let sent = Request {
            model: request.model,
            system: &system,
            messages: &messages,
            tools: &[],
            stop: &stop,
            environment: "",
            max_output_tokens: request.max_output_tokens,
        };
        let inner = self.inner.stream(sent).await?;
        let prefill = match messages.last() {
            Some(m) if m.kind == Kind::Assistant => m.content.clone(),
            _ => String::new(),
        };
        let decoder = TextDecoder::new(request.tools.to_vec());
        let first = text_stream(inner, EchoStrip::new(prefill), decoder);
        // Nothing after a command's output (small models stop there): asked once more.
        // The correction follows the continued assistant message, so nothing is echoed.
        let tools = request.tools.to_vec();
        let decode: Decode =
            Box::new(move |s| text_stream(s, EchoStrip::new(String::new()), TextDecoder::new(tools.clone())));
        let sent = Sent {
            model: request.model.to_string(),
            system,
            messages,
            tools: Vec::new(),
            stop: stop.to_vec(),
            max_output_tokens: request.max_output_tokens,
        };
        Ok(Again::new(self.inner.clone(), sent, TEXT_CORRECTION, decode).around(first))
    }
}

/// The example exchange small models imitate, as canonical messages (rendered like any
/// history: as tags in the continuation mode in use, or as native calls and results).
/// Sent before the conversation; never shown, never stored. `coding`: a small coding
/// task (read the file, write it whole, run the test, say what changed); else a
/// question answered by one command and one line. Each teaches its own habit: with the
/// question, 1.5B models stated one fact where they were asked for code; with the
/// coding task, they rewrote the file they were asked about and answered "Done." The
/// text protocol and the engine choose by the session (`coding_example`); a local
/// preset's native primer keeps the question (three native calls would grow its first
/// request by ~140 tokens, over the budget of 80).
pub fn primer(coding: bool) -> Vec<Message> {
    if coding {
        coding_primer()
    } else {
        question_primer()
    }
}

/// Whether the example exchange for this conversation is the coding task: a tool that
/// writes files is offered, and the session's first prompt is not a question (it does
/// not end with a question mark). The first prompt, not the latest, so that the example
/// and everything after it stay the same bytes for the whole session (a local server's
/// prompt cache keeps them).
pub fn coding_example(tools: &[crate::tool_vocab::ToolSchema], messages: &[Message]) -> bool {
    let writes = tools
        .iter()
        .any(|t| t.name == crate::tool_vocab::meta::FILE_WRITE.name);
    let asks = messages
        .iter()
        .find(|m| m.kind == Kind::User)
        .is_some_and(|m| m.content.trim_end().ends_with('?'));
    writes && !asks
}

fn bash_output(output: &str) -> String {
    crate::tool_vocab::Envelope::success(serde_json::json!({ "output": output, "exit_code": 0 })).to_string()
}

fn question_primer() -> Vec<Message> {
    vec![
        Message::user("Which file defines load_config?"),
        Message::tool_call(
            "primer-1",
            "bash",
            r#"{"command":"grep -rn \"def load_config\" ."}"#,
        ),
        Message::tool_result(
            "primer-1",
            "bash",
            "1 line",
            bash_output("./app/settings.py:12:def load_config(path):\n"),
            true,
        ),
        Message::assistant("app/settings.py defines load_config, on line 12."),
    ]
}

fn coding_primer() -> Vec<Message> {
    let written = crate::tool_vocab::Envelope::success(
        serde_json::json!({ "output": "Wrote 32 bytes to calc.py", "bytes": 32 }),
    );
    vec![
        Message::user("Fix calc.py; test with python3 -m unittest test_calc"),
        Message::tool_call("primer-1", "bash", r#"{"command":"cat calc.py"}"#),
        Message::tool_result(
            "primer-1",
            "bash",
            "2 lines",
            bash_output("def add(a, b):\n    return a - b\n"),
            true,
        ),
        Message::tool_call(
            "primer-2",
            "file_write",
            r#"{"path":"calc.py","content":"def add(a, b):\n    return a + b\n"}"#,
        ),
        Message::tool_result("primer-2", "file_write", "32 bytes", written.to_string(), true),
        Message::tool_call(
            "primer-3",
            "bash",
            r#"{"command":"python3 -m unittest test_calc"}"#,
        ),
        Message::tool_result("primer-3", "bash", "OK", bash_output("OK\n"), true),
        Message::assistant("Fixed: add returns a + b."),
    ]
}

/// The conversation as a local server gets it: the example exchange first (when `example`:
/// the coding task or the question),
/// then `messages` with `environment` before their first message (`environment.rs`).
fn with_example(example: Option<bool>, messages: &[Message], environment: &str) -> Vec<Message> {
    let mut all = example.map(primer).unwrap_or_default();
    let from = all.len();
    all.extend_from_slice(messages);
    environment::before_first(&mut all, from, environment);
    all
}

/// Whether a rejection says the model cannot take tools (Ollama: "does not support
/// tools"; others word it alike).
pub fn is_tools_unsupported(e: &ProviderError) -> bool {
    let text = match e {
        ProviderError::Rejected { message, .. } => message,
        ProviderError::Api(message) => message,
        _ => return false,
    };
    let t = text.to_ascii_lowercase();
    (t.contains("support") && (t.contains("tools") || t.contains("tool call") || t.contains("function")))
        || t.contains("tools are not supported")
        || t.contains("tool use is not supported")
}

#[async_trait]
impl Provider for ToolProtocol {
    fn spec(&self) -> &Spec {
        self.inner.spec()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn setup_hint(&self) -> Vec<String> {
        self.inner.setup_hint()
    }

    fn describe(&self, e: &ProviderError) -> String {
        self.inner.describe(e)
    }

    fn takes_images(&self) -> bool {
        // The text protocol writes the conversation as text: no image goes with it.
        !self.is_text() && self.inner.takes_images()
    }

    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        self.inner.models().await
    }

    async fn context_window(&self, model: &str) -> Result<Option<u64>, ProviderError> {
        self.inner.context_window(model).await
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        if self.is_text() {
            return self.stream_text(request).await;
        }
        // Local presets: the example exchange as one native call, when bash is offered.
        // (A local server's window keeps the history this copies small.)
        // The environment goes before the first message where the history is copied
        // anyway (the example exchange), else after the system prompt, as before.
        let primed = (self.mode.native_primer
            && request.tools.iter().any(|t| t.name == super::calls::SHELL_TOOL))
        .then(|| with_example(Some(false), request.messages, request.environment));
        let system = match primed {
            Some(_) => std::borrow::Cow::Borrowed(request.system),
            None => environment::after_system(request.system, request.environment),
        };
        // A model that recovery is on for (local presets) may write a tool's result
        // itself in its template's tag: the answer ends where that tag would begin.
        let recovering = self.mode.recover && !request.tools.is_empty();
        let stop = if recovering {
            super::fabricated::stops(request.stop)
        } else {
            request.stop.to_vec()
        };
        let native = Request {
            system: &system,
            messages: primed.as_deref().unwrap_or(request.messages),
            stop: &stop,
            environment: "",
            ..request
        };
        match self.inner.stream(native).await {
            Err(e) if !request.tools.is_empty() && is_tools_unsupported(&e) => {
                self.text.store(true, Ordering::Relaxed);
                let s = self.stream_text(request).await?;
                let notice = StreamEvent::Notice(format!(
                    "{} does not support native tool calls; using the text protocol for this session",
                    request.model
                ));
                Ok(Box::pin(futures_util::stream::iter([Ok(notice)]).chain(s)))
            }
            Ok(s) if self.mode.recover && !request.tools.is_empty() => {
                let s = super::fabricated::cut_stream(s);
                let first = recovery_stream(s, RecoveryDecoder::new(request.tools.to_vec()));
                // Nothing but a made-up result (now cut) or an echoed one: asked once more.
                let tools = request.tools.to_vec();
                let decode: Decode = Box::new(move |s| {
                    recovery_stream(
                        super::fabricated::cut_stream(s),
                        RecoveryDecoder::new(tools.clone()),
                    )
                });
                // Only where the history was copied anyway (a local preset's example).
                let Some(messages) = primed else { return Ok(first) };
                let sent = Sent {
                    model: request.model.to_string(),
                    system: system.into_owned(),
                    messages,
                    tools: request.tools.to_vec(),
                    stop,
                    max_output_tokens: request.max_output_tokens,
                };
                Ok(Again::new(self.inner.clone(), sent, super::fabricated::CORRECTION, decode).around(first))
            }
            other => other,
        }
    }
}

/// The inner stream through an `EchoStrip` and a `TextDecoder`; it stops reading once a
/// command completed.
fn text_stream(inner: EventStream, echo: EchoStrip, decoder: TextDecoder) -> EventStream {
    struct St {
        inner: Option<EventStream>,
        echo: EchoStrip,
        d: TextDecoder,
        out: VecDeque<Result<StreamEvent, ProviderError>>,
        finished: bool,
    }
    let st = St {
        inner: Some(inner),
        echo,
        d: decoder,
        out: VecDeque::new(),
        finished: false,
    };
    Box::pin(futures_util::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(item) = st.out.pop_front() {
                return Some((item, st));
            }
            if st.finished {
                return None;
            }
            let next = match st.inner.as_mut() {
                Some(s) if !st.d.stopped() => s.next().await,
                _ => None,
            };
            match next {
                Some(Ok(ev)) => {
                    let is_end = matches!(ev, StreamEvent::Finished { .. });
                    let ev = match ev {
                        StreamEvent::TextDelta(t) => StreamEvent::TextDelta(st.echo.push(&t)),
                        StreamEvent::Finished { .. } => {
                            st.echo.finish();
                            ev
                        }
                        other => other,
                    };
                    if matches!(&ev, StreamEvent::TextDelta(t) if t.is_empty()) {
                        continue;
                    }
                    st.out.extend(st.d.push(ev).into_iter().map(Ok));
                    st.finished = is_end;
                }
                Some(Err(e)) => {
                    // Keep what was safe to show; never run a command from a broken stream.
                    st.out.extend(
                        st.d.finish()
                            .into_iter()
                            .filter(|e| !matches!(e, StreamEvent::Finished { .. }))
                            .map(Ok),
                    );
                    st.out.push_back(Err(e));
                    st.finished = true;
                }
                None => {
                    // Drop the inner stream: a completed command ends this response.
                    st.inner = None;
                    st.out.extend(st.d.finish().into_iter().map(Ok));
                    st.finished = true;
                }
            }
        }
    }))
}

/// The inner stream through a `RecoveryDecoder`.
fn recovery_stream(inner: EventStream, decoder: RecoveryDecoder) -> EventStream {
    let st = (inner, decoder, VecDeque::new(), false);
    Box::pin(futures_util::stream::unfold(
        st,
        |(mut inner, mut d, mut out, mut done)| async move {
            loop {
                if let Some(item) = out.pop_front() {
                    return Some((item, (inner, d, out, done)));
                }
                if done {
                    return None;
                }
                match inner.next().await {
                    Some(Ok(ev)) => out.extend(d.push(ev).into_iter().map(Ok)),
                    Some(Err(e)) => {
                        out.extend(d.finish().into_iter().map(Ok));
                        out.push_back(Err(e));
                        done = true;
                    }
                    None => {
                        out.extend(d.finish().into_iter().map(Ok));
                        done = true;
                    }
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::render::Continuation;
    use super::*;
    use crate::tools::Registry;

    #[test]
    fn the_example_is_the_coding_task_where_files_can_be_written_and_no_question_is_asked() {
        let all = Registry::builtin().schemas();
        let read_only: Vec<_> = all.iter().filter(|t| t.name != "file_write").cloned().collect();
        let first = |p: &str| vec![Message::user(p), Message::assistant("…"), Message::user("and?")];
        for (prompt, tools, coding) in [
            ("Fix the bug in stats.py.", &all, true),
            (
                "Implement clamp. Run the tests with: python3 -m unittest",
                &all,
                true,
            ),
            ("Create hello.txt containing: hi", &all, true),
            ("How many lines does data.csv have?", &all, false),
            ("Which version is set in package.json?  \n", &all, false),
            ("Fix the bug in stats.py.", &read_only, false),
        ] {
            assert_eq!(coding_example(tools, &first(prompt)), coding, "{prompt:?}");
        }
        // The first prompt decides, for the whole session.
        let later = vec![
            Message::user("Fix the bug."),
            Message::assistant("Fixed."),
            Message::user("Why?"),
        ];
        assert!(coding_example(&all, &later));
        assert_eq!(primer(false)[0].content, "Which file defines load_config?");
        let coding = primer(true);
        assert_eq!(
            coding[0].content,
            "Fix calc.py; test with python3 -m unittest test_calc"
        );
        // The example's write is exactly what the model is to write back: the whole-file
        // form as the history renders it, parsed back to the same call.
        let rendered = rewrite(&coding, Continuation::Prefill);
        let text = &rendered[1].content;
        let form = text
            .split("<||SYSTEM.EXEC>")
            .filter_map(|b| b.split_once("<SYSTEM.EXEC||>").map(|(c, _)| c))
            .find(|c| c.starts_with("write "))
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            super::super::write::parse(form),
            Some(("calc.py".into(), "def add(a, b):\n    return a + b\n".into()))
        );
        // The result says the bytes the content has.
        assert!(text.contains(&format!(
            "Wrote {} bytes",
            "def add(a, b):\n    return a + b\n".len()
        )));
    }
}
