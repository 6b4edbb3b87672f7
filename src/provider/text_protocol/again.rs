//! A response with no words and no call (a small model that stops right after a
//! command's output, or whose made-up result was cut) is asked for once more, with one
//! short correction after the conversation; never stored, never more than once per
//! request. The wrapper uses it for native calls where recovery is on and for the text
//! protocol.

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::StreamExt;

use crate::message::Message;
use crate::provider::{EventStream, FinishReason, Provider, ProviderError, Request, StreamEvent};
use crate::tool_vocab::ToolSchema;

/// How a response's raw stream becomes the events the agent reads (the same decoding
/// the first response went through).
pub type Decode = Box<dyn Fn(EventStream) -> EventStream + Send + Sync>;

/// A request as it was sent, owned: the wrapper hands over the history it copied anyway
/// (the example exchange's, the text protocol's rewrite), never a copy made for this.
pub struct Sent {
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSchema>,
    pub stop: Vec<String>,
    pub max_output_tokens: Option<u64>,
}

/// A request kept to be sent once more, with the correction after it.
pub struct Again {
    inner: Arc<dyn Provider>,
    sent: Sent,
    decode: Decode,
}

impl Again {
    /// `sent` as it went to `inner`, with `correction` as a user message after it.
    pub fn new(inner: Arc<dyn Provider>, mut sent: Sent, correction: &str, decode: Decode) -> Self {
        sent.messages.push(Message::user(correction));
        Again { inner, sent, decode }
    }

    async fn send(&self) -> Result<EventStream, ProviderError> {
        let sent = &self.sent;
        let s = self
            .inner
            .stream(Request {
                model: &sent.model,
                system: &sent.system,
                messages: &sent.messages,
                tools: &sent.tools,
                stop: &sent.stop,
                environment: "",
                max_output_tokens: sent.max_output_tokens,
            })
            .await?;
        Ok((self.decode)(s))
    }

    /// `send`, once more after a pause when it fails in a way worth retrying (a server
    /// busy or briefly away; a kept-alive connection the server closed between the two
    /// requests: seen with llama-server, "connection closed before message completed").
    /// The agent retries its own requests so; this one starts inside a response, where
    /// the agent's retry cannot reach.
    async fn send_retrying(&self) -> Result<EventStream, ProviderError> {
        let mut pause = std::time::Duration::from_millis(250);
        let mut left = 2;
        loop {
            match self.send().await {
                Err(e) if e.is_retryable() && left > 0 => {
                    left -= 1;
                    tokio::time::sleep(pause).await;
                    pause *= 4;
                }
                other => return other,
            }
        }
    }

    /// `first` (already decoded), and when it finished having shown nothing (no text
    /// but blanks, no call) and was not cut by the length limit, a notice and the
    /// corrected request's response in place of its end.
    pub fn around(self, first: EventStream) -> EventStream {
        struct St {
            current: EventStream,
            again: Option<Again>,
            shown: bool,
            out: VecDeque<Result<StreamEvent, ProviderError>>,
            done: bool,
        }
        let st = St {
            current: first,
            again: Some(self),
            shown: false,
            out: VecDeque::new(),
            done: false,
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
                        // The first response is read to its end (its usage counts) and
                        // closed before the next is asked for: a local server with one
                        // slot serves one request at a time.
                        while let Some(rest) = st.current.next().await {
                            match rest {
                                Ok(StreamEvent::Finished { .. } | StreamEvent::TextDelta(_)) => {}
                                other => st.out.push_back(other),
                            }
                        }
                        st.current = Box::pin(futures_util::stream::empty());
                        st.out.push_back(Ok(StreamEvent::Notice(
                            "the model answered with no words; it was asked once more".to_string(),
                        )));
                        match again.send_retrying().await {
                            Ok(s) => st.current = s,
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
