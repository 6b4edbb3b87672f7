//! The one pass every history goes through before a wire format writes it, so that every
//! format sends what a strict vendor accepts: every tool call is answered by a result
//! before the conversation moves on (a lost one by the canonical error envelope of an
//! interrupted call), a result whose call is not open goes as user text, ids are adapted
//! to what the vendor accepts, and another provider's reasoning is left out. It borrows
//! the conversation and yields one item at a time (a long session is never copied).
//! Knows no wire format: the formats turn its `Item`s into their own shapes.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::LazyLock;

use serde::{Serialize, Serializer};
use serde_json::Value;
use sonic_rs::{JsonValueTrait, LazyValue};

use crate::message::{FunctionCall, Kind, Message, compaction_text};

/// How a wire format writes a tool-call id it was given (`Cow::Borrowed` when valid).
pub type IdPolicy = fn(&str) -> Cow<'_, str>;

/// Ids as they are (vendors that take any string).
pub fn any_id(id: &str) -> Cow<'_, str> {
    Cow::Borrowed(id)
}

/// One thing the conversation says, as every wire format sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Item<'a> {
    /// A system message inside the history (Chat and Responses send it in place; the
    /// others fold it into the system prompt, see `system_prompt`).
    System(&'a str),
    /// Text from the user's side: a message, a compaction summary, or a result whose call
    /// is not open any more. Never empty.
    User(Cow<'a, str>),
    /// The assistant's text (may be blank; formats that refuse blank text skip it).
    Assistant(&'a str),
    /// Reasoning this provider produced: its visible text and opaque payload.
    Reasoning { text: &'a str, opaque: &'a Value },
    /// A tool call; the id already adapted.
    Call {
        id: Cow<'a, str>,
        function: &'a FunctionCall,
    },
    /// The result answering an open call (or the repair of one that never got one).
    Result {
        id: Cow<'a, str>,
        name: &'a str,
        /// The envelope sent to the model.
        output: &'a str,
        success: bool,
    },
    /// An image of the message before it (a user message's attachment, or a tool
    /// result's image): base64 `data` of media type `mime`, borrowed.
    Image { mime: &'a str, data: &'a str },
}

/// The envelope a call that never got its result is answered with: the same one the
/// agent records for an interrupted call.
static REPAIR: LazyLock<String> = LazyLock::new(|| {
    crate::tool_vocab::envelope::interrupted_result("", "", None)
        .as_tool_result()
        .map(|r| r.output.clone())
        .unwrap_or_default()
});

/// The normalised history: an iterator of `Item`s over borrowed messages.
pub struct History<'a> {
    messages: std::slice::Iter<'a, Message>,
    provider: &'a str,
    ids: IdPolicy,
    /// Calls of the current exchange still waiting for their result: (id, name).
    open: Vec<(&'a str, &'a str)>,
    /// A result arrived since the last call: the next assistant item starts a new exchange.
    answering: bool,
    /// Items ready to go (repairs go out before the item that closed their exchange).
    ready: VecDeque<Item<'a>>,
    /// Images of the current exchange's results, sent after its last result.
    held: Vec<Item<'a>>,
    ended: bool,
}

impl<'a> History<'a> {
    /// The history of `messages` as provider `provider` (a configured name) sees it.
    pub fn new(messages: &'a [Message], provider: &'a str, ids: IdPolicy) -> Self {
        History {
            messages: messages.iter(),
            provider,
            ids,
            open: Vec::new(),
            answering: false,
            ready: VecDeque::new(),
            held: Vec::new(),
            ended: false,
        }
    }

    /// Answers every call still open with the repair envelope.
    fn close(&mut self) {
        for (id, name) in self.open.drain(..) {
            self.ready.push_back(Item::Result {
                id: (self.ids)(id),
                name,
                output: REPAIR.as_str(),
                success: false,
            });
        }
        self.answering = false;
    }

    /// The item `m` stands for, after closing the exchange it ends.
    #[inline(always)]
    fn item(&mut self, m: &'a Message) -> Option<Item<'a>> {
        match m.kind {
            Kind::System => Some(Item::System(&m.content)),
            Kind::User => {
                if m.content.is_empty() {
                    return None;
                }
                self.close();
                Some(Item::User(Cow::Borrowed(&m.content)))
            }
            Kind::Compaction => {
                self.close();
                Some(Item::User(Cow::Owned(compaction_text(&m.content))))
            }
            Kind::Assistant => {
                if self.answering && !m.content.trim().is_empty() {
                    self.close();
                }
                Some(Item::Assistant(&m.content))
            }
            Kind::Reasoning => {
                let r = m.as_reasoning().filter(|r| r.provider == self.provider)?;
                if self.answering {
                    self.close();
                }
                Some(Item::Reasoning {
                    text: &m.content,
                    opaque: &r.opaque,
                })
            }
            Kind::ToolCall => {
                let c = m.as_tool_call()?;
                if self.answering {
                    self.close();
                }
                self.open.push((&c.id, &c.function.name));
                Some(Item::Call {
                    id: (self.ids)(&c.id),
                    function: &c.function,
                })
            }
            Kind::ToolResult => {
                let r = m.as_tool_result()?;
                match self.open.iter().position(|(id, _)| *id == r.tool_call_id) {
                    Some(i) => {
                        self.open.remove(i);
                        self.answering = true;
                        Some(Item::Result {
                            id: (self.ids)(&r.tool_call_id),
                            name: &r.name,
                            output: &r.output,
                            success: r.success,
                        })
                    }
                    None => Some(Item::User(Cow::Owned(format!(
                        "(result of an earlier tool call {} {}) {}",
                        r.name, r.tool_call_id, r.output
                    )))),
                }
            }
        }
    }
}

impl<'a> Iterator for History<'a> {
    type Item = Item<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<Item<'a>> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.ended {
                return None;
            }
            match self.messages.next() {
                Some(m) => {
                    let Some(item) = self.item(m) else { continue };
                    let images = m.images().iter().map(|i| Item::Image {
                        mime: &i.mime,
                        data: &i.data,
                    });
                    if let Item::Result { .. } = item {
                        // A result's images wait until the exchange's results are out
                        // (no format lets other content in between them).
                        self.held.extend(images);
                    } else {
                        // (Checked first: this runs for every message of every request.)
                        if !self.held.is_empty() {
                            self.ready.extend(self.held.drain(..));
                        }
                        if let Item::User(_) = item {
                            // Usually nothing is waiting: the item goes out at once.
                            if self.ready.is_empty() {
                                if !m.images().is_empty() {
                                    self.ready.extend(images);
                                }
                                return Some(item);
                            }
                            self.ready.push_back(item);
                            self.ready.extend(images);
                            continue;
                        }
                    }
                    if self.ready.is_empty() {
                        return Some(item);
                    }
                    self.ready.push_back(item);
                }
                None => {
                    self.ended = true;
                    self.close();
                    self.ready.extend(self.held.drain(..));
                }
            }
        }
    }
}

/// The system prompt with the history's own system messages appended, for formats that
/// take one system text (Anthropic, Gemini).
pub fn system_prompt<'a>(system: &'a str, messages: &'a [Message]) -> Cow<'a, str> {
    let mut inline = messages.iter().filter(|m| m.kind == Kind::System).peekable();
    if inline.peek().is_none() {
        return Cow::Borrowed(system);
    }
    let mut out = system.to_string();
    for m in inline {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&m.content);
    }
    Cow::Owned(out)
}

/// A tool call's arguments as a JSON object any strict vendor accepts, written as the
/// model's own text when it is one (`FunctionCall::wire_arguments_value`, without
/// building a tree): `{}` for none, `{"invalid_arguments": "<the raw text>"}` for text
/// that is not an object. The text is checked as it is written, by sonic-rs (the body
/// writer, `provider::body`), which writes it as it is.
#[derive(Clone, Copy, Debug)]
pub struct Arguments<'a>(&'a str);

/// `text` as one JSON value (checked whole, as strictly as serde_json checks it), if it is
/// one and nests at most `text::JSON_DEPTH_MAX` deep.
fn raw(text: &str) -> Option<LazyValue<'_>> {
    if !crate::text::json_depth_within(text) {
        return None;
    }
    sonic_rs::from_str::<LazyValue<'_>>(text).ok()
}

impl<'a> Arguments<'a> {
    pub fn of(f: &'a FunctionCall) -> Self {
        Arguments(&f.arguments)
    }
}

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.0.trim().is_empty() {
            return s.serialize_map(Some(0))?.end();
        }
        match raw(self.0) {
            Some(raw) if raw.is_object() => raw.serialize(s),
            _ => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("invalid_arguments", self.0)?;
                m.end()
            }
        }
    }
}

/// A tool result's envelope as a JSON object (Gemini's `functionResponse.response`): the
/// envelope itself when it is an object, else `{"output": …}` holding it (as JSON when it
/// is JSON, else as text). Checked as it is written, like `Arguments`.
#[derive(Clone, Copy, Debug)]
pub struct Envelope<'a>(&'a str);

impl<'a> Envelope<'a> {
    pub fn of(output: &'a str) -> Self {
        Envelope(output)
    }
}

impl Serialize for Envelope<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match raw(self.0) {
            Some(raw) if raw.is_object() => raw.serialize(s),
            Some(raw) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("output", &raw)?;
                m.end()
            }
            None => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("output", self.0)?;
                m.end()
            }
        }
    }
}

/// Which tool calls' arguments are valid JSON objects, as a body's first whole pass found
/// them; the next passes (the bytes after the count) reuse it instead of parsing every
/// call's arguments again. One flag per call, in the order the passes meet them (every
/// pass over a body yields the same calls).
#[derive(Default)]
pub struct ArgumentsSeen(std::sync::OnceLock<Vec<bool>>);

/// One pass's reading of call arguments (`FunctionCall::wire_arguments_text`), through
/// the body's `ArgumentsSeen`.
pub struct ArgumentsPass {
    seen: std::sync::Arc<ArgumentsSeen>,
    found: Vec<bool>,
    next: usize,
}

impl ArgumentsPass {
    pub fn new(seen: std::sync::Arc<ArgumentsSeen>) -> Self {
        ArgumentsPass {
            seen,
            found: Vec::new(),
            next: 0,
        }
    }

    /// The arguments of the pass's next call as the wire takes them.
    pub fn text<'a>(&mut self, f: &'a FunctionCall) -> Cow<'a, str> {
        let i = self.next;
        self.next += 1;
        match self.seen.0.get().and_then(|v| v.get(i)) {
            Some(true) => Cow::Borrowed(&f.arguments),
            Some(false) => f.wire_arguments_text(),
            None => {
                let text = f.wire_arguments_text();
                self.found.push(matches!(text, Cow::Borrowed(_)));
                text
            }
        }
    }

    /// The pass met its last call: what it found is kept for the next passes.
    pub fn finish(&mut self) {
        if self.seen.0.get().is_none() && self.found.len() == self.next {
            let _ = self.seen.0.set(std::mem::take(&mut self.found));
        }
    }
}

/// A history with every kind of message and every character class a string can hold
/// (quotes, backslashes, each control character, non-ASCII, line separators), images,
/// another provider's reasoning, bad arguments, a lost result: what the formats' tests
/// write to check that every byte is written as serde_json writes it.
#[cfg(test)]
pub fn varied(provider: &str) -> Vec<Message> {
    let every: String = (0u8..0x80).map(char::from).collect::<String>() + "é\u{2028}\u{2029}😀\u{feff}";
    let img = crate::message::Image {
        mime: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let env = serde_json::json!({"tool_success": true, "result": {"output": every, "n": 1.5e-7}});
    vec![
        Message::system(format!("inline {every}")),
        Message::user(every.clone()),
        Message::user_with_images("look", "", vec!["a.png".into()], vec![img.clone()]),
        Message::reasoning(
            &every,
            provider,
            serde_json::json!({"signature": every, "n": [1, 2.5, -3]}),
        ),
        Message::reasoning("theirs", "elsewhere", serde_json::json!({"signature": "t"})),
        Message::assistant(format!("Let me look. {every}")),
        Message::tool_call(
            "call_1",
            "bash",
            format!(r#"{{"command": "echo", "x": {}}}"#, serde_json::json!(every)),
        ),
        Message::tool_call("call_2", "glob", r#"{"pattern": "*"#),
        Message::tool_call("call_3", "glob", "  "),
        Message::tool_result("call_1", "bash", "ok", env.to_string(), true).with_images(vec![img]),
        Message::tool_result("call_2", "glob", "bad", "not json \u{1}", false),
        Message::tool_result("zz", "bash", "", "[1,2]", true),
        Message::compaction(every.clone(), 3, 1),
        Message::assistant(""),
        Message::tool_call("call_4", "bash", "[1]"),
        Message::user("and now?"),
        Message::assistant("Done."),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool_vocab::envelope::interrupted_result;
    use serde_json::json;

    fn items(h: &[Message]) -> Vec<Item<'_>> {
        History::new(h, "me", any_id).collect()
    }

    #[test]
    fn images_follow_their_user_message_and_wait_for_the_last_result() {
        let img = |d: &str| crate::message::Image {
            mime: "image/png".into(),
            data: d.into(),
        };
        let h = vec![
            Message::user_with_images("look", "", vec!["a.png".into()], vec![img("U")]),
            Message::tool_call("a", "shot", "{}"),
            Message::tool_call("b", "shot", "{}"),
            Message::tool_result("a", "shot", "", "ra", true).with_images(vec![img("A")]),
            Message::tool_result("b", "shot", "", "rb", true).with_images(vec![img("B")]),
            Message::assistant("seen"),
            Message::tool_call("c", "shot", "{}"),
            Message::tool_result("c", "shot", "", "rc", true).with_images(vec![img("C")]),
        ];
        let kinds: Vec<String> = items(&h)
            .iter()
            .map(|i| match i {
                Item::User(t) => format!("user {t}"),
                Item::Image { data, .. } => format!("image {data}"),
                Item::Call { id, .. } => format!("call {id}"),
                Item::Result { id, .. } => format!("result {id}"),
                Item::Assistant(t) => format!("assistant {t}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user look",
                "image U",
                "call a",
                "call b",
                "result a",
                "result b",
                "image A",
                "image B",
                "assistant seen",
                "call c",
                "result c",
                "image C"
            ]
        );
    }

    fn result_ids(items: &[Item<'_>]) -> Vec<String> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Result { id, .. } => Some(id.to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_lost_result_is_repaired_with_the_canonical_envelope_before_the_conversation_moves_on() {
        let h = vec![
            Message::user("go"),
            Message::tool_call("a", "glob", "{}"),
            Message::tool_call("b", "bash", "{}"),
            Message::tool_result("a", "glob", "", "ra", true),
            Message::user("and now?"),
            Message::tool_call("c", "glob", "{}"),
        ];
        let out = items(&h);
        assert_eq!(result_ids(&out), ["a", "b", "c"]);
        // b's repair comes before the user's next message; c's at the end.
        assert!(matches!(&out[4], Item::Result { id, success: false, .. } if id == "b"));
        assert_eq!(out[5], Item::User(Cow::Borrowed("and now?")));
        let repair = interrupted_result("b", "bash", None);
        let Item::Result { output, name, .. } = &out[4] else {
            panic!()
        };
        assert_eq!(*output, repair.as_tool_result().unwrap().output);
        assert_eq!(*name, "bash");
        let v: Value = serde_json::from_str(output).unwrap();
        assert_eq!(v["tool_success"], false);
        assert_eq!(v["error_code"], "TOOL_CRASHED");
    }

    #[test]
    fn a_result_without_an_open_call_becomes_user_text() {
        let h = vec![
            Message::tool_call("a", "glob", "{}"),
            Message::tool_result("a", "glob", "", "ra", true),
            Message::tool_result("a", "glob", "", "again", true),
            Message::tool_result("zz", "bash", "", "lost", true),
        ];
        let out = items(&h);
        assert_eq!(result_ids(&out), ["a"]);
        assert_eq!(
            out[2],
            Item::User(Cow::Owned("(result of an earlier tool call glob a) again".into()))
        );
        assert_eq!(
            out[3],
            Item::User(Cow::Owned("(result of an earlier tool call bash zz) lost".into()))
        );
    }

    #[test]
    fn a_new_call_or_text_after_results_closes_the_exchange() {
        let h = vec![
            Message::tool_call("a", "glob", "{}"),
            Message::tool_call("b", "glob", "{}"),
            Message::tool_result("a", "glob", "", "ra", true),
            Message::assistant("Looking further."),
            Message::tool_result("b", "glob", "", "rb", true),
        ];
        let out = items(&h);
        assert_eq!(result_ids(&out), ["a", "b"]);
        assert!(matches!(&out[3], Item::Result { success: false, .. }));
        assert_eq!(out[4], Item::Assistant("Looking further."));
        assert!(matches!(&out[5], Item::User(t) if t.starts_with("(result of an earlier tool call glob b)")));
        // Text between a call and its result stays in the exchange.
        let h = vec![
            Message::tool_call("a", "glob", "{}"),
            Message::assistant("while it runs"),
            Message::tool_result("a", "glob", "", "ra", true),
        ];
        assert_eq!(result_ids(&items(&h)), ["a"]);
        assert!(items(&h).iter().all(|i| !matches!(i, Item::User(_))));
    }

    #[test]
    fn other_providers_reasoning_and_empty_user_text_are_left_out_and_ids_adapted() {
        let h = vec![
            Message::user(""),
            Message::reasoning("mine", "me", json!({"signature": "s"})),
            Message::reasoning("theirs", "other", json!({"signature": "t"})),
            Message::tool_call("a.1", "glob", "{}"),
            Message::tool_result("a.1", "glob", "", "r", true),
            Message::compaction("sum", 1, 0),
        ];
        let dots: IdPolicy = |id| Cow::Owned(id.replace('.', "_"));
        let out: Vec<Item<'_>> = History::new(&h, "me", dots).collect();
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(matches!(out[0], Item::Reasoning { text: "mine", .. }));
        assert!(matches!(&out[1], Item::Call { id, .. } if id == "a_1"));
        assert!(matches!(&out[2], Item::Result { id, .. } if id == "a_1"));
        assert!(matches!(&out[3], Item::User(t) if t.contains("sum") && t.contains("compacted")));
    }

    #[test]
    fn arguments_and_envelopes_are_objects_without_a_tree() {
        let call = |a: &str| FunctionCall {
            name: "f".into(),
            arguments: a.into(),
        };
        let text = |v: &dyn erased::Ser| v.text();
        let ok = call(r#" {"a": [1, {"b": 2}]}"#);
        assert_eq!(text(&Arguments::of(&ok)), r#"{"a": [1, {"b": 2}]}"#);
        for bad in [r#"{"a": 1"#, "[1]", "\"x\"", "{} {}"] {
            let c = call(bad);
            let v: Value = serde_json::from_str(&text(&Arguments::of(&c))).unwrap();
            assert_eq!(v, json!({"invalid_arguments": bad}), "{bad}");
            assert_eq!(v, c.wire_arguments_value(), "{bad}");
        }
        assert_eq!(text(&Arguments::of(&call("  "))), "{}");
        assert_eq!(
            text(&Envelope::of(r#"{"tool_success":true}"#)),
            r#"{"tool_success":true}"#
        );
        assert_eq!(text(&Envelope::of("[1,2]")), r#"{"output":[1,2]}"#);
        assert_eq!(text(&Envelope::of("plain")), r#"{"output":"plain"}"#);
    }

    mod erased {
        pub trait Ser {
            fn text(&self) -> String;
        }
        impl<T: serde::Serialize> Ser for T {
            fn text(&self) -> String {
                sonic_rs::to_string(self).unwrap()
            }
        }
    }

    #[test]
    fn json_nested_deeper_than_a_parser_can_follow_goes_as_text_without_a_crash() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        let call = FunctionCall {
            name: "f".into(),
            arguments: deep.clone(),
        };
        let text = |v: &dyn erased::Ser| v.text();
        let v: Value = serde_json::from_str(&text(&Arguments::of(&call))).unwrap();
        assert_eq!(v["invalid_arguments"], deep.as_str());
        let v: Value = serde_json::from_str(&text(&Envelope::of(&deep))).unwrap();
        assert_eq!(v["output"], deep.as_str());
        // As deep as allowed, and brackets inside strings, still go as JSON.
        let ok = format!(
            "{{\"s\":\"{}\\\"\",\"a\":{}{}}}",
            "[".repeat(500),
            "[".repeat(30),
            "]".repeat(30)
        );
        let call = FunctionCall {
            name: "f".into(),
            arguments: ok.clone(),
        };
        assert_eq!(text(&Arguments::of(&call)), ok);
    }

    #[test]
    fn argument_checks_are_kept_by_a_whole_pass_and_read_by_the_next() {
        let call = |a: &str| FunctionCall {
            name: "f".into(),
            arguments: a.into(),
        };
        let calls = [call(r#"{"a": 1}"#), call("[1]"), call(" "), call(r#"{"b":"#)];
        let seen = std::sync::Arc::new(ArgumentsSeen::default());
        let texts = |finish: bool| {
            let mut pass = ArgumentsPass::new(seen.clone());
            let out: Vec<String> = calls.iter().map(|c| pass.text(c).into_owned()).collect();
            if finish {
                pass.finish();
            }
            out
        };
        let want = [
            r#"{"a": 1}"#,
            r#"{"invalid_arguments":"[1]"}"#,
            "{}",
            r#"{"invalid_arguments":"{\"b\":"}"#,
        ];
        // A pass that stops early keeps nothing; a whole one keeps what it found.
        assert_eq!(texts(false), want);
        assert!(seen.0.get().is_none());
        assert_eq!(texts(true), want);
        assert_eq!(seen.0.get(), Some(&vec![true, false, false, false]));
        assert_eq!(texts(true), want);
        // A pass that meets more calls than were kept checks the rest itself.
        let mut pass = ArgumentsPass::new(seen.clone());
        for c in calls.iter().chain(&calls) {
            pass.text(c);
        }
        assert_eq!(pass.text(&call("[2]")), r#"{"invalid_arguments":"[2]"}"#);
    }

    #[test]
    fn system_messages_join_the_system_prompt() {
        let h = vec![Message::system("extra"), Message::user("hi")];
        assert_eq!(system_prompt("base", &h), "base\n\nextra");
        assert_eq!(system_prompt("", &h), "extra");
        assert!(matches!(system_prompt("base", &h[1..]), Cow::Borrowed("base")));
    }
}
