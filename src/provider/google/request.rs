//! The Gemini `generateContent` request body: `systemInstruction`, `tools`
//! (`functionDeclarations`) and `generationConfig`, then `contents` (`user` / `model`
//! turns with text, `functionCall` and `functionResponse` parts, `thoughtSignature`s
//! where they came from), made one turn at a time from the normalised history as the
//! body is written. Pure: no IO.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::schema;
use crate::provider::Request;
use crate::provider::body::JsonBody;
use crate::provider::history::{Arguments, Envelope, History, Item, any_id, system_prompt};

/// The signature Google documents for replaying a function call that has none (history
/// from another provider); Gemini 3 rejects an unsigned call otherwise.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Settings of one request body that are not in the history.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// The configured provider name: signatures produced under it are sent back.
    pub name: &'a str,
    pub max_output_tokens: Option<u64>,
    pub temperature: Option<f64>,
    /// `generationConfig.thinkingConfig`, for models that think.
    pub thinking: Option<Value>,
}

/// True for models that think (and so stream thought summaries and signatures).
pub fn is_thinking_model(model: &str) -> bool {
    let m = model.rsplit('/').next().unwrap_or(model);
    m.starts_with("gemini-2.5") || m.starts_with("gemini-3") || m.contains("thinking")
}

fn requires_signatures(model: &str) -> bool {
    model.rsplit('/').next().unwrap_or(model).starts_with("gemini-3")
}

/// Everything but the `contents`.
pub fn rest(req: &Request<'_>, opts: &Options<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    let system = system_prompt(req.system, req.messages);
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
    }
    if !req.tools.is_empty() {
        let decls: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut d = json!({"name": t.name, "description": t.description});
                if let Some(p) = schema::adapt(&t.to_json_schema()) {
                    d["parameters"] = p;
                }
                d
            })
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": decls}]));
    }
    let mut config = Map::new();
    if let Some(n) = opts.max_output_tokens {
        config.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(t) = opts.temperature {
        config.insert("temperature".into(), json!(t));
    }
    if !req.stop.is_empty() {
        config.insert("stopSequences".into(), json!(req.stop));
    }
    if let Some(t) = &opts.thinking {
        config.insert("thinkingConfig".into(), t.clone());
    }
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    body
}

/// The whole request body.
pub fn body<'a>(
    req: Request<'a>,
    opts: &Options<'a>,
) -> serde_json::Result<JsonBody<impl Fn() -> Contents<'a> + Send + Sync + use<'a>>> {
    let (messages, name, sign) = (req.messages, opts.name, requires_signatures(req.model));
    JsonBody::new(&rest(&req, opts), "contents", move || {
        Contents::new(messages, name, sign)
    })
}

/// The body as a JSON value (tests and callers that inspect it).
pub fn body_value(req: Request<'_>, opts: &Options<'_>) -> Value {
    use crate::provider::body::Source;
    body(req, opts)
        .and_then(|b| b.to_vec())
        .and_then(|bytes| serde_json::from_slice(&bytes))
        .unwrap_or(Value::Null)
}

/// One part of a turn.
#[derive(Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<Call<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<Response<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_data: Option<InlineData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

/// An image part: `{"inlineData":{"mimeType":"image/png","data":"…"}}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InlineData<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
struct Call<'a> {
    id: Cow<'a, str>,
    name: &'a str,
    args: Arguments<'a>,
}

#[derive(Serialize)]
struct Response<'a> {
    id: Cow<'a, str>,
    name: &'a str,
    response: Envelope<'a>,
}

/// One turn of `contents`.
#[derive(Serialize)]
pub struct Turn<'a> {
    role: &'static str,
    parts: Vec<Part<'a>>,
    /// The thought signatures met in a model turn, with the index of the part that
    /// followed each.
    #[serde(skip)]
    signatures: Vec<(&'a str, usize)>,
}

/// What one history item adds to a turn.
enum Piece<'a> {
    Part(Part<'a>),
    Signature(&'a str),
}

/// `contents` alternating `user` / `model`, starting with `user`; results first in a
/// user turn. Made one turn at a time.
pub struct Contents<'a> {
    items: History<'a>,
    sign_calls: bool,
    /// A piece that belongs to the turn after the one being gathered.
    stash: Option<(&'static str, Piece<'a>)>,
    /// The turn after the one going out (an empty model turn between two user turns is
    /// dropped, and they become one).
    ahead: Option<Turn<'a>>,
    started: bool,
}

impl<'a> Contents<'a> {
    pub fn new(history: &'a [crate::message::Message], name: &'a str, sign_calls: bool) -> Self {
        Contents {
            items: History::new(history, name, any_id),
            sign_calls,
            stash: None,
            ahead: None,
            started: false,
        }
    }

    fn piece(item: Item<'a>) -> Option<(&'static str, Piece<'a>)> {
        let text = |t: Cow<'a, str>| Part {
            text: Some(t),
            ..Part::default()
        };
        Some(match item {
            Item::System(_) => return None,
            Item::User(t) => ("user", Piece::Part(text(t))),
            Item::Image { mime, data } => (
                "user",
                Piece::Part(Part {
                    inline_data: Some(InlineData {
                        mime_type: mime,
                        data,
                    }),
                    ..Part::default()
                }),
            ),
            Item::Assistant(t) if t.trim().is_empty() => return None,
            Item::Assistant(t) => ("model", Piece::Part(text(Cow::Borrowed(t)))),
            Item::Reasoning { opaque, .. } => (
                "model",
                Piece::Signature(opaque.get("thoughtSignature").and_then(Value::as_str)?),
            ),
            Item::Call { id, function } => (
                "model",
                Piece::Part(Part {
                    function_call: Some(Call {
                        id,
                        name: &function.name,
                        args: Arguments::of(function),
                    }),
                    ..Part::default()
                }),
            ),
            Item::Result { id, name, output, .. } => (
                "user",
                Piece::Part(Part {
                    function_response: Some(Response {
                        id,
                        name,
                        response: Envelope::of(output),
                    }),
                    ..Part::default()
                }),
            ),
        })
    }

    /// The next turn: consecutive pieces of one role.
    fn gather(&mut self) -> Option<Turn<'a>> {
        let (role, first) = match self.stash.take() {
            Some(p) => p,
            None => loop {
                if let Some(p) = Self::piece(self.items.next()?) {
                    break p;
                }
            },
        };
        let mut turn = Turn {
            role,
            parts: Vec::new(),
            signatures: Vec::new(),
        };
        let add = |turn: &mut Turn<'a>, piece| match piece {
            Piece::Part(p) => turn.parts.push(p),
            Piece::Signature(s) => turn.signatures.push((s, turn.parts.len())),
        };
        add(&mut turn, first);
        for item in self.items.by_ref() {
            let Some((r, piece)) = Self::piece(item) else {
                continue;
            };
            if r != role {
                self.stash = Some((r, piece));
                break;
            }
            add(&mut turn, piece);
        }
        if role == "model" {
            place_signatures(&mut turn, self.sign_calls);
        } else {
            turn.parts.sort_by_key(|p| p.function_response.is_none());
        }
        Some(turn)
    }
}

impl<'a> Iterator for Contents<'a> {
    type Item = Turn<'a>;

    fn next(&mut self) -> Option<Turn<'a>> {
        let mut current = match self.ahead.take() {
            Some(t) => t,
            None => loop {
                let t = self.gather()?;
                if !t.parts.is_empty() {
                    break t;
                }
            },
        };
        if !std::mem::replace(&mut self.started, true) && current.role == "model" {
            self.ahead = Some(current);
            return Some(Turn {
                role: "user",
                parts: vec![Part {
                    text: Some(Cow::Borrowed("(continued)")),
                    ..Part::default()
                }],
                signatures: Vec::new(),
            });
        }
        loop {
            match self.gather() {
                Some(t) if t.parts.is_empty() => continue,
                Some(t) if t.role == current.role => current.parts.extend(t.parts),
                other => {
                    self.ahead = other;
                    break;
                }
            }
        }
        Some(current)
    }
}

/// Puts each signature back on a part: the first one on the turn's first function call
/// (where Gemini returns it), others on the part that followed them. A turn whose first
/// call has none gets the documented skip value when the model requires signatures.
fn place_signatures(turn: &mut Turn<'_>, sign_calls: bool) {
    let first_call = turn.parts.iter().position(|p| p.function_call.is_some());
    for (i, (sig, at)) in std::mem::take(&mut turn.signatures).into_iter().enumerate() {
        let target = match first_call {
            Some(c) if i == 0 => Some(c),
            _ => (at..turn.parts.len())
                .chain((0..at.min(turn.parts.len())).rev())
                .find(|&j| turn.parts[j].thought_signature.is_none()),
        };
        if let Some(j) = target
            && let Some(part) = turn.parts.get_mut(j)
            && part.thought_signature.is_none()
        {
            part.thought_signature = Some(sig);
        }
    }
    if sign_calls
        && let Some(c) = first_call
        && let Some(part) = turn.parts.get_mut(c)
        && part.thought_signature.is_none()
    {
        part.thought_signature = Some(SKIP_SIGNATURE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[test]
    fn raw_json_is_written_as_the_model_wrote_it_and_the_rest_parses() {
        let h = crate::provider::history::varied("me");
        crate::provider::body::assert_raw_json_kept(Contents::new(&h, "me", true), &h);
    }

    fn contents(h: &[Message], sign: bool) -> Vec<Value> {
        Contents::new(h, "google", sign)
            .map(|t| crate::provider::body::item_value(&t).unwrap())
            .collect()
    }

    #[test]
    fn turns_alternate_and_every_call_is_answered() {
        let h = vec![
            Message::reasoning("", "google", json!({"thoughtSignature": "sig1"})),
            Message::tool_call("a", "glob", r#"{"pattern":"*"}"#),
            Message::tool_call("b", "glob", "{oops"),
            Message::tool_result("a", "glob", "", r#"{"tool_success":true}"#, true),
            Message::user("next"),
        ];
        let c = contents(&h, true);
        assert_eq!(c.len(), 3, "{c:#?}");
        assert_eq!(c[0], json!({"role": "user", "parts": [{"text": "(continued)"}]}));
        let model = &c[1]["parts"];
        assert_eq!(model[0]["thoughtSignature"], "sig1");
        assert_eq!(model[0]["functionCall"]["args"], json!({"pattern": "*"}));
        assert_eq!(
            model[1]["functionCall"]["args"],
            json!({"invalid_arguments": "{oops"})
        );
        let user = c[2]["parts"].as_array().unwrap();
        assert_eq!(
            user[0]["functionResponse"]["response"],
            json!({"tool_success": true})
        );
        assert_eq!(user[1]["functionResponse"]["id"], "b");
        assert_eq!(
            user[1]["functionResponse"]["response"]["error_code"],
            "TOOL_CRASHED"
        );
        assert_eq!(user[2], json!({"text": "next"}));
    }

    #[test]
    fn a_signature_alone_makes_no_turn_and_unsigned_calls_get_the_skip_value() {
        let h = vec![
            Message::user("a"),
            Message::reasoning("", "google", json!({"thoughtSignature": "lonely"})),
            Message::user("b"),
            Message::tool_call("c", "glob", "{}"),
            Message::tool_result("c", "glob", "", "plain text", true),
        ];
        let c = contents(&h, true);
        assert_eq!(c.len(), 3, "{c:#?}");
        assert_eq!(c[0]["parts"], json!([{"text": "a"}, {"text": "b"}]));
        assert_eq!(c[1]["parts"][0]["thoughtSignature"], SKIP_SIGNATURE);
        assert_eq!(
            c[2]["parts"][0]["functionResponse"]["response"],
            json!({"output": "plain text"})
        );
        assert!(
            contents(&h, false)[1]["parts"][0]
                .get("thoughtSignature")
                .is_none()
        );
    }
}
