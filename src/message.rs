//! The canonical message and conversation: one format in memory and in the database.
//! Pure data; knows no wire format and does no IO.

use serde::{Deserialize, Serialize};

/// What a message is. Serialised in snake_case (`tool_call`, `tool_result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    System,
    User,
    Assistant,
    ToolCall,
    ToolResult,
    /// The model's reasoning: visible text plus the provider's opaque payload.
    Reasoning,
    /// A summary that stands for the earlier messages (see `CompactionData`).
    Compaction,
}

impl Kind {
    /// The name used in the database and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::System => "system",
            Kind::User => "user",
            Kind::Assistant => "assistant",
            Kind::ToolCall => "tool_call",
            Kind::ToolResult => "tool_result",
            Kind::Reasoning => "reasoning",
            Kind::Compaction => "compaction",
        }
    }

    /// Parses the database/JSON name back.
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "system" => Kind::System,
            "user" => Kind::User,
            "assistant" => Kind::Assistant,
            "tool_call" => Kind::ToolCall,
            "tool_result" => Kind::ToolResult,
            "reasoning" => Kind::Reasoning,
            "compaction" => Kind::Compaction,
            _ => return None,
        })
    }
}

/// `{name, arguments}` of a tool call; `arguments` is the JSON string the model produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

impl FunctionCall {
    /// The arguments as a JSON object any strict vendor accepts: the model's own when they
    /// are one nested at most `text::JSON_DEPTH_MAX` deep, `{}` when empty, else the raw
    /// text kept in a string field (`{"invalid_arguments": "…"}`). The database keeps the
    /// raw text either way.
    pub fn wire_arguments_value(&self) -> serde_json::Value {
        if self.arguments.trim().is_empty() {
            return serde_json::json!({});
        }
        match serde_json::from_str::<serde_json::Value>(&self.arguments) {
            Ok(v @ serde_json::Value::Object(_)) if crate::text::json_depth_within(&self.arguments) => v,
            _ => serde_json::json!({ "invalid_arguments": self.arguments }),
        }
    }

    /// `wire_arguments_value` as JSON text, without copying the model's text when it is a
    /// valid JSON object (checked without building it).
    pub fn wire_arguments_text(&self) -> std::borrow::Cow<'_, str> {
        let is_object = self.arguments.trim_start().starts_with('{')
            && crate::text::json_depth_within(&self.arguments)
            && serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok();
        if is_object {
            std::borrow::Cow::Borrowed(&self.arguments)
        } else {
            std::borrow::Cow::Owned(self.wire_arguments_value().to_string())
        }
    }
}

/// The `data` of a `tool_call` message: `{id, type: "function", function: {name, arguments}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallData {
    pub id: String,
    #[serde(rename = "type")]
    pub call_type: Function,
    pub function: FunctionCall,
}

/// The `type` of a tool call: always `"function"`, so it is held as no data at all (a long
/// session has thousands of calls). Any stored text reads back as it: the type is fixed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Function;

impl Serialize for Function {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("function")
    }
}

impl<'de> Deserialize<'de> for Function {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Function)
    }
}

/// The `data` of a `tool_result` message: `{tool_call_id, name, output, success}`.
/// `output` is the JSON string sent to the model (the envelope).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultData {
    pub tool_call_id: String,
    pub name: String,
    pub output: String,
    pub success: bool,
    /// Images the tool returned (an MCP server's image content), sent to the model as
    /// images where the wire format allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image sent to the model: its media type (`image/png`, `image/jpeg`, `image/gif`,
/// `image/webp`) and its bytes in standard base64, held once (shared by every clone of
/// the message, as the store's) and borrowed by every request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub mime: String,
    pub data: std::sync::Arc<str>,
}

/// The `data` of a `reasoning` message: `{provider, opaque}`. `provider` names the
/// configured provider that produced it; `opaque` is its payload (Anthropic thinking
/// signature, Responses encrypted reasoning item, Gemini thought signature), or `null`.
/// Serializers send it back only to the provider named here and drop it for any other.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningData {
    pub provider: String,
    #[serde(default)]
    pub opaque: serde_json::Value,
}

/// The `data` of a `compaction` message: `{replaces_through_seq, kept}`. The summary
/// stands for every message of the session before the compaction event except the
/// last `kept`, which stay whole; `replaces_through_seq` is the position of the event
/// before the compaction as the agent counted it (informational).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionData {
    pub replaces_through_seq: i64,
    #[serde(default)]
    pub kept: usize,
}

/// The `data` of a user message that carries `@file` attachments: `{text_len, attachments}`
/// (and `images` when images are attached).
/// The message's content is what the model got (the typed text, then the attached
/// blocks); the first `text_len` bytes are the text as typed, and `attachments` the one-line
/// descriptions a front end shows instead of the blocks (`src/main.rs, 120 lines`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentsData {
    pub text_len: usize,
    pub attachments: Vec<String>,
    /// Attached images (`@shot.png`), in the order mentioned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// The structured part of a message; `null` for system and assistant messages, and for
/// user messages without attachments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Data {
    ToolCall(ToolCallData),
    ToolResult(ToolResultData),
    Reasoning(ReasoningData),
    Compaction(CompactionData),
    Attachments(AttachmentsData),
}

/// One canonical message: `{kind, content, data}`. `data` is boxed: most messages have
/// none, and a long conversation holds one `Message` per message (40 bytes, not 128).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub kind: Kind,
    pub content: String,
    pub data: Option<Box<Data>>,
}

// A long session holds one of these per message.
const _: () = assert!(std::mem::size_of::<Message>() <= 40);

impl Message {
    fn plain(kind: Kind, content: impl Into<String>) -> Self {
        Message {
            kind,
            content: content.into(),
            data: None,
        }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Kind::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Kind::User, text)
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::plain(Kind::Assistant, text)
    }

    /// A tool call; its content is the human summary `name(arg="value", …)`.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        let function = FunctionCall {
            name: name.into(),
            arguments: arguments.into(),
        };
        Message {
            kind: Kind::ToolCall,
            content: call_summary(&function.name, &function.arguments),
            data: Some(Box::new(Data::ToolCall(ToolCallData {
                id: id.into(),
                call_type: Function,
                function,
            }))),
        }
    }

    /// A tool result; `summary` is the human line (e.g. `3 files`), `output` the envelope JSON.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        summary: impl Into<String>,
        output: impl Into<String>,
        success: bool,
    ) -> Self {
        Message {
            kind: Kind::ToolResult,
            content: summary.into(),
            data: Some(Box::new(Data::ToolResult(ToolResultData {
                tool_call_id: tool_call_id.into(),
                name: name.into(),
                output: output.into(),
                success,
                images: Vec::new(),
            }))),
        }
    }

    /// A tool result carrying images (an MCP tool's image content).
    pub fn with_images(mut self, images: Vec<Image>) -> Self {
        if let Some(Data::ToolResult(r)) = self.data.as_deref_mut() {
            r.images = images;
        }
        self
    }

    /// The images a user message or tool result carries (empty for others).
    pub fn images(&self) -> &[Image] {
        match self.data.as_deref() {
            Some(Data::Attachments(d)) => &d.images,
            Some(Data::ToolResult(r)) => &r.images,
            _ => &[],
        }
    }

    /// Reasoning text with the producing provider's opaque payload (`null` when none).
    pub fn reasoning(
        text: impl Into<String>,
        provider: impl Into<String>,
        opaque: serde_json::Value,
    ) -> Self {
        Message {
            kind: Kind::Reasoning,
            content: text.into(),
            data: Some(Box::new(Data::Reasoning(ReasoningData {
                provider: provider.into(),
                opaque,
            }))),
        }
    }

    pub fn as_reasoning(&self) -> Option<&ReasoningData> {
        match (&self.kind, self.data.as_deref()) {
            (Kind::Reasoning, Some(Data::Reasoning(d))) => Some(d),
            _ => None,
        }
    }

    /// A compaction summary standing for the earlier messages but the last `kept`.
    pub fn compaction(summary: impl Into<String>, replaces_through_seq: i64, kept: usize) -> Self {
        Message {
            kind: Kind::Compaction,
            content: summary.into(),
            data: Some(Box::new(Data::Compaction(CompactionData {
                replaces_through_seq,
                kept,
            }))),
        }
    }

    pub fn as_compaction(&self) -> Option<&CompactionData> {
        match (&self.kind, self.data.as_deref()) {
            (Kind::Compaction, Some(Data::Compaction(d))) => Some(d),
            _ => None,
        }
    }

    /// A user message: `text` as typed, then the attached blocks (`blocks`, which the
    /// model gets after the text), described by `attachments`.
    pub fn user_with_attachments(text: &str, blocks: &str, attachments: Vec<String>) -> Self {
        Self::user_with_images(text, blocks, attachments, Vec::new())
    }

    /// `user_with_attachments` with attached images.
    pub fn user_with_images(text: &str, blocks: &str, attachments: Vec<String>, images: Vec<Image>) -> Self {
        if attachments.is_empty() && images.is_empty() {
            return Self::user(text);
        }
        Message {
            kind: Kind::User,
            content: format!("{text}{blocks}"),
            data: Some(Box::new(Data::Attachments(AttachmentsData {
                text_len: text.len(),
                attachments,
                images,
            }))),
        }
    }

    /// A user message's attachments, when it has any.
    pub fn as_attachments(&self) -> Option<&AttachmentsData> {
        match (&self.kind, self.data.as_deref()) {
            (Kind::User, Some(Data::Attachments(d))) => Some(d),
            _ => None,
        }
    }

    /// The text a person typed: a user message's content without its attached blocks.
    pub fn typed_text(&self) -> &str {
        match self.as_attachments() {
            Some(d) => self.content.get(..d.text_len).unwrap_or(&self.content),
            None => &self.content,
        }
    }

    pub fn as_tool_call(&self) -> Option<&ToolCallData> {
        match (&self.kind, self.data.as_deref()) {
            (Kind::ToolCall, Some(Data::ToolCall(d))) => Some(d),
            _ => None,
        }
    }

    pub fn as_tool_result(&self) -> Option<&ToolResultData> {
        match (&self.kind, self.data.as_deref()) {
            (Kind::ToolResult, Some(Data::ToolResult(d))) => Some(d),
            _ => None,
        }
    }

    /// The `data` column as JSON (`null` when absent).
    pub fn data_json(&self) -> serde_json::Value {
        match self.data.as_deref() {
            Some(d) => serde_json::to_value(d).unwrap_or(serde_json::Value::Null),
            None => serde_json::Value::Null,
        }
    }

    /// Rebuilds a message from its stored columns; `None` when kind and data disagree.
    pub fn from_parts(kind: Kind, content: String, data: serde_json::Value) -> Option<Self> {
        let data = match kind {
            Kind::ToolCall => Some(Box::new(Data::ToolCall(serde_json::from_value(data).ok()?))),
            Kind::ToolResult => Some(Box::new(Data::ToolResult(serde_json::from_value(data).ok()?))),
            Kind::Reasoning => Some(Box::new(Data::Reasoning(serde_json::from_value(data).ok()?))),
            Kind::Compaction => Some(Box::new(Data::Compaction(serde_json::from_value(data).ok()?))),
            Kind::User if !data.is_null() => {
                Some(Box::new(Data::Attachments(serde_json::from_value(data).ok()?)))
            }
            _ => None,
        };
        Some(Message { kind, content, data })
    }
}

impl Message {
    /// Rebuilds a message from its stored columns with `data` still JSON text, parsed
    /// straight into its typed form (no JSON tree in between). Fails when the text is no
    /// JSON, or (`is_data()`) when it does not fit the kind.
    pub fn from_stored(kind: Kind, content: String, data: Option<&str>) -> Result<Self, serde_json::Error> {
        fn typed<T: serde::de::DeserializeOwned>(data: Option<&str>) -> Result<T, serde_json::Error> {
            serde_json::from_str(data.unwrap_or("null"))
        }
        let data = match kind {
            Kind::ToolCall => Some(Box::new(Data::ToolCall(typed(data)?))),
            Kind::ToolResult => Some(Box::new(Data::ToolResult(typed(data)?))),
            Kind::Reasoning => Some(Box::new(Data::Reasoning(typed(data)?))),
            Kind::Compaction => Some(Box::new(Data::Compaction(typed(data)?))),
            Kind::User if data.is_some_and(|d| d.trim() != "null") => {
                Some(Box::new(Data::Attachments(typed(data)?)))
            }
            Kind::System | Kind::User | Kind::Assistant => {
                typed::<serde::de::IgnoredAny>(data)?;
                None
            }
        };
        Ok(Message { kind, content, data })
    }
}

/// String arguments longer than this (in characters) are abbreviated in a call summary.
pub const SUMMARY_ARG_CHARS: usize = 80;

/// `glob(pattern="*.rs", path="src")`: every argument, strings quoted, in the order given;
/// a long string shows its start and its size: `content="fn main() {\n…(12.3 KB)"`.
pub fn call_summary(name: &str, arguments: &str) -> String {
    // Read into an ordered map: the model's order, not the keys sorted.
    let ordered = serde_json::from_str::<indexmap::IndexMap<String, serde_json::Value>>(arguments);
    let args = match ordered.map_err(|_| serde_json::from_str::<serde_json::Value>(arguments)) {
        Ok(map) => map
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) if s.chars().count() > SUMMARY_ARG_CHARS => {
                    let head: String = s.chars().take(SUMMARY_ARG_CHARS / 2).collect();
                    let quoted = serde_json::Value::String(head).to_string();
                    let open = &quoted[..quoted.len() - 1];
                    format!("{k}={open}…({})\"", human_size(s.len()))
                }
                _ => format!("{k}={v}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(Ok(other)) => other.to_string(),
        Err(Err(_)) => arguments.to_string(),
    };
    format!("{name}({args})")
}

/// How a compaction summary reads to the model (every provider sends it as a user turn).
pub fn compaction_text(summary: &str) -> String {
    format!(
        "[The earlier part of this conversation was compacted to fit the context window. \
Summary of it:]\n\n{summary}"
    )
}

/// `512 B`, `12.3 KB`, `4.0 MB` (1 KB = 1024 bytes).
pub fn human_size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// A new tool-call id, unique in any session (`call_` and 24 random hex digits).
pub fn fresh_call_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("call_{}", &hex[..24])
}

/// An ordered list of canonical messages; memory is authoritative during a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conversation {
    pub messages: Vec<Message>,
}

impl Conversation {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, m: Message) {
        self.messages.push(m);
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The ids of the tool calls in the conversation.
    pub fn call_ids(&self) -> std::collections::HashSet<String> {
        self.messages
            .iter()
            .filter_map(Message::as_tool_call)
            .map(|c| c.id.clone())
            .collect()
    }

    /// Tool calls that have no result anywhere after them, in order.
    pub fn orphan_tool_calls(&self) -> Vec<ToolCallData> {
        let answered: std::collections::HashSet<&str> = self
            .messages
            .iter()
            .filter_map(|m| m.as_tool_result().map(|r| r.tool_call_id.as_str()))
            .collect();
        self.messages
            .iter()
            .filter_map(Message::as_tool_call)
            .filter(|c| !answered.contains(c.id.as_str()))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_arguments_text_borrows_a_valid_object_and_wraps_anything_else() {
        let call = |a: &str| FunctionCall {
            name: "f".into(),
            arguments: a.into(),
        };
        let ok = call(r#" {"a": [1, {"b": 2}]}"#);
        assert!(matches!(ok.wire_arguments_text(), std::borrow::Cow::Borrowed(_)));
        for bad in [r#"{"a": 1"#, "[1]", "\"x\"", "{} {}"] {
            let text = call(bad).wire_arguments_text().into_owned();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v, serde_json::json!({"invalid_arguments": bad}), "{bad}");
        }
        assert_eq!(call("  ").wire_arguments_text(), "{}");
        // Valid JSON nested deeper than ikigai accepts goes as text, in every form.
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(40), "]".repeat(40));
        let wrapped = serde_json::json!({"invalid_arguments": deep});
        assert_eq!(call(&deep).wire_arguments_value(), wrapped);
        assert_eq!(call(&deep).wire_arguments_text(), wrapped.to_string());
        let edge = format!("{{\"a\":{}{}}}", "[".repeat(31), "]".repeat(31));
        assert!(matches!(
            call(&edge).wire_arguments_text(),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_user_message_keeps_its_attachments_through_the_store_columns() {
        let m = Message::user_with_attachments(
            "see @a.rs",
            "\n\n<file path=\"a.rs\">\nfn a() {}\n</file>",
            vec!["a.rs, 1 line".into()],
        );
        assert_eq!(m.typed_text(), "see @a.rs");
        assert!(m.content.ends_with("</file>"));
        let data = m.data_json();
        assert_eq!(
            data,
            serde_json::json!({"text_len": 9, "attachments": ["a.rs, 1 line"]})
        );
        let back = Message::from_stored(Kind::User, m.content.clone(), Some(&data.to_string())).unwrap();
        assert_eq!(back, m);
        assert_eq!(
            Message::from_parts(Kind::User, m.content.clone(), data),
            Some(m.clone())
        );
        let plain = Message::from_stored(Kind::User, "hi".into(), None).unwrap();
        assert_eq!((plain.typed_text(), plain.data.is_none()), ("hi", true));
        assert_eq!(
            Message::user_with_attachments("hi", "", Vec::new()),
            Message::user("hi")
        );
    }

    #[test]
    fn images_go_through_the_store_columns_and_are_left_out_when_none() {
        let image = Image {
            mime: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let m = Message::user_with_images(
            "see @a.png",
            "",
            vec!["a.png, PNG image, 8 B".into()],
            vec![image],
        );
        let data = m.data_json();
        assert_eq!(
            data["images"],
            serde_json::json!([{"mime": "image/png", "data": "iVBORw0KGgo="}])
        );
        let back = Message::from_stored(Kind::User, m.content.clone(), Some(&data.to_string())).unwrap();
        assert_eq!((back.images(), back.typed_text()), (m.images(), "see @a.png"));
        let plain = Message::user_with_attachments("x", "b", vec!["f".into()]);
        assert!(plain.data_json().get("images").is_none());
        let r = Message::tool_result("c", "t", "s", "{}", true);
        assert!(r.data_json().get("images").is_none() && r.images().is_empty());
    }

    #[test]
    fn tool_call_serialises_to_design_shape() {
        let m = Message::tool_call("call_1", "glob", r#"{"pattern":"*.rs"}"#);
        assert_eq!(m.content, r#"glob(pattern="*.rs")"#);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["kind"], "tool_call");
        assert_eq!(v["data"]["id"], "call_1");
        assert_eq!(v["data"]["type"], "function");
        assert_eq!(v["data"]["function"]["name"], "glob");
        assert_eq!(v["data"]["function"]["arguments"], r#"{"pattern":"*.rs"}"#);
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn tool_result_round_trips_through_parts() {
        let m = Message::tool_result("c", "glob", "3 files", "{}", true);
        let back = Message::from_parts(m.kind, m.content.clone(), m.data_json()).unwrap();
        assert_eq!(back, m);
        assert!(Message::from_parts(Kind::ToolResult, String::new(), serde_json::Value::Null).is_none());
    }

    #[test]
    fn reasoning_keeps_its_provider_and_opaque_payload() {
        let m = Message::reasoning("thinking…", "anthropic", serde_json::json!({"signature": "abc"}));
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["kind"], "reasoning");
        assert_eq!(
            v["data"],
            serde_json::json!({"provider": "anthropic", "opaque": {"signature": "abc"}})
        );
        let back = Message::from_parts(
            Kind::parse("reasoning").unwrap(),
            m.content.clone(),
            m.data_json(),
        )
        .unwrap();
        assert_eq!(back, m);
        assert_eq!(back.as_reasoning().unwrap().provider, "anthropic");
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn compaction_round_trips_through_parts() {
        let m = Message::compaction("task: fix the parser", 41, 3);
        assert_eq!(m.kind.as_str(), "compaction");
        assert_eq!(
            m.data_json(),
            serde_json::json!({"replaces_through_seq": 41, "kept": 3})
        );
        let back = Message::from_parts(
            Kind::parse("compaction").unwrap(),
            m.content.clone(),
            m.data_json(),
        );
        assert_eq!(back.as_ref(), Some(&m));
        assert_eq!(back.unwrap().as_compaction().unwrap().kept, 3);
    }

    #[test]
    fn summary_keeps_the_models_argument_order() {
        assert_eq!(
            call_summary("file_read", r#"{"path":"calc.py","offset":3}"#),
            "file_read(path=\"calc.py\", offset=3)"
        );
        assert_eq!(call_summary("bash", "[1]"), "bash([1])");
    }

    #[test]
    fn summary_keeps_bad_arguments_verbatim() {
        assert_eq!(call_summary("bash", "{oops"), "bash({oops)");
        assert_eq!(call_summary("list_dir", "{}"), "list_dir()");
        // Written out: the summary keeps the order the arguments came in.
        let big = format!(r#"{{"content":"{}","path":"a.rs"}}"#, "x\\n".repeat(6300));
        assert_eq!(
            call_summary("file_write", &big),
            format!(
                "file_write(content=\"{}…(12.3 KB)\", path=\"a.rs\")",
                "x\\n".repeat(20)
            )
        );
        assert_eq!(
            (human_size(1023), human_size(1024)),
            ("1023 B".to_string(), "1.0 KB".to_string())
        );
    }

    #[test]
    fn wire_arguments_are_always_a_json_object() {
        let f = |a: &str| FunctionCall {
            name: "glob".into(),
            arguments: a.into(),
        };
        assert_eq!(
            f(r#"{"pattern": "*"}"#).wire_arguments_text(),
            r#"{"pattern": "*"}"#
        );
        assert_eq!(f("").wire_arguments_text(), "{}");
        assert_eq!(
            f(r#"{"pattern": "*"#).wire_arguments_value(),
            serde_json::json!({"invalid_arguments": r#"{"pattern": "*"#})
        );
        assert_eq!(
            f("[1]").wire_arguments_value(),
            serde_json::json!({"invalid_arguments": "[1]"})
        );
        let id = fresh_call_id();
        assert!(id.starts_with("call_") && id.len() == 29 && id != fresh_call_id());
    }
}
