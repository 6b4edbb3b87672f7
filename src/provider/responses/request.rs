//! Canonical conversation → Responses API request body: the options, then the `input`
//! items made one at a time from the normalised history as the body is written. Pure:
//! no IO. Reasoning goes back only when this provider produced it; arguments are always
//! JSON.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::provider::body::JsonBody;
use crate::provider::history::{ArgumentsPass, ArgumentsSeen, History, Item, any_id};
use crate::provider::image::DataUrl;
use crate::provider::{Request, Spec};

/// True for models that reason (and accept the `reasoning` parameter).
pub fn is_reasoning_model(model: &str) -> bool {
    let m = model.rsplit('/').next().unwrap_or(model);
    m.starts_with("gpt-5")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
        || m.starts_with("codex")
}

/// Everything in a streaming `/responses` request but its `input` (stateless:
/// `store: false`).
pub fn rest(req: &Request<'_>, spec: &Spec) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    if !req.system.is_empty() {
        body.insert("instructions".into(), json!(req.system));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.to_json_schema(), "strict": false})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!("auto"));
    }
    if is_reasoning_model(req.model) || spec.reasoning_effort.is_some() {
        let mut reasoning = json!({"summary": "auto"});
        if let Some(e) = &spec.reasoning_effort {
            reasoning["effort"] = json!(e);
        }
        body.insert("reasoning".into(), reasoning);
        // With store:false the reasoning comes back encrypted, to be sent on later turns.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(t) = spec.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = req.output_cap(spec) {
        body.insert("max_output_tokens".into(), json!(n));
    }
    body
}

/// The whole body of a streaming `/responses` request.
pub fn body<'a>(
    req: Request<'a>,
    spec: &'a Spec,
) -> serde_json::Result<JsonBody<impl Fn() -> InputItems<'a> + Send + Sync + use<'a>>> {
    let (messages, name) = (req.messages, spec.name.as_str());
    let seen = std::sync::Arc::new(ArgumentsSeen::default());
    JsonBody::new(&rest(&req, spec), "input", move || InputItems {
        items: History::new(messages, name, any_id).peekable(),
        arguments: ArgumentsPass::new(seen.clone()),
    })
}

/// One `input` item.
#[derive(Serialize)]
#[serde(untagged)]
pub enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Cow<'a, str>,
    },
    Call {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: Cow<'a, str>,
        name: &'a str,
        arguments: Cow<'a, str>,
    },
    Output {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: Cow<'a, str>,
        output: &'a str,
    },
    /// A reasoning item as this provider returned it.
    Reasoning(&'a Value),
    /// A user message with images: `input_text` then `input_image` parts.
    Parts {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
}

/// One part of a user message with images.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part<'a> {
    InputText { text: Cow<'a, str> },
    InputImage { image_url: DataUrl<'a> },
}

/// The `input` items: messages, `function_call` / `function_call_output`, and this
/// provider's own reasoning items (with their encrypted content), made one at a time.
pub struct InputItems<'a> {
    items: std::iter::Peekable<History<'a>>,
    arguments: ArgumentsPass,
}

impl<'a> InputItems<'a> {
    /// A user message of `first` (when text) and the images that follow it.
    fn parts(&mut self, first: Option<Cow<'a, str>>) -> InputItem<'a> {
        let mut content: Vec<Part<'a>> = first.map(|text| Part::InputText { text }).into_iter().collect();
        while let Some(Item::Image { mime, data }) = self.items.peek() {
            let image_url = DataUrl { mime, data };
            self.items.next();
            content.push(Part::InputImage { image_url });
        }
        InputItem::Parts {
            role: "user",
            content,
        }
    }
}

impl<'a> Iterator for InputItems<'a> {
    type Item = InputItem<'a>;

    fn next(&mut self) -> Option<InputItem<'a>> {
        let message = |role, content| InputItem::Message { role, content };
        while let Some(item) = self.items.next() {
            return Some(match item {
                Item::System(t) => message("system", Cow::Borrowed(t)),
                Item::User(t) if matches!(self.items.peek(), Some(Item::Image { .. })) => self.parts(Some(t)),
                Item::User(t) => message("user", t),
                Item::Image { mime, data } => {
                    let first = Part::InputImage {
                        image_url: DataUrl { mime, data },
                    };
                    let mut more = self.parts(None);
                    if let InputItem::Parts { content, .. } = &mut more {
                        content.insert(0, first);
                    }
                    more
                }
                Item::Assistant(t) => message("assistant", Cow::Borrowed(t)),
                Item::Reasoning { opaque, .. } if opaque.get("encrypted_content").is_some() => {
                    InputItem::Reasoning(opaque)
                }
                Item::Reasoning { .. } => continue,
                Item::Call { id, function } => InputItem::Call {
                    kind: "function_call",
                    call_id: id,
                    name: &function.name,
                    arguments: self.arguments.text(function),
                },
                Item::Result { id, output, .. } => InputItem::Output {
                    kind: "function_call_output",
                    call_id: id,
                    output,
                },
            });
        }
        self.arguments.finish();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_item_is_written_as_serde_json_writes_it() {
        let mut h = crate::provider::history::varied("me");
        h.push(crate::message::Message::reasoning(
            "r",
            "me",
            serde_json::json!({"encrypted_content": "e\u{1}\"", "id": "rs_1"}),
        ));
        let items = InputItems {
            items: History::new(&h, "me", any_id).peekable(),
            arguments: ArgumentsPass::new(Default::default()),
        };
        crate::provider::body::assert_written_as_serde_json(items);
    }
}
