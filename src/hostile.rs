//! Test support: values of any protocol type with a hostile text in every string, built
//! through serde (`Hostile`), so that a test over "every field of every event" covers a
//! field or variant added later without listing it. Compiled for tests only; knows no
//! front end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};

use crate::message::{Kind, Message};
use crate::protocol::History;

/// Every kind of character a terminal could act on or that hides text: an OSC 0 title
/// change, an OSC 52 clipboard write, a DCS query, a CSI cursor-position query (also as
/// the C1 byte), CR, backspace, DEL, NUL, bidirectional overrides and isolates, a
/// zero-width space, a BOM, an Arabic letter mark, an invisible tag character, a line
/// separator, and a newline and tab.
pub(crate) const TEXT: &str = "H\u{1b}]0;OWNED\u{7}\u{1b}]52;c;SGVsbG8=\u{7}\u{1b}P+q\u{1b}\\\u{9b}6n\u{1b}[6n\r\u{8}\u{7f}\u{0}\u{202E}\u{2066}\u{200B}\u{FEFF}\u{061C}\u{E0041}\u{2028}\n\tZ";

/// The characters of `TEXT` that must never reach a terminal as they are.
pub(crate) const RAW: [char; 14] = [
    '\u{7}',
    '\u{8}',
    '\u{7f}',
    '\u{0}',
    '\u{9b}',
    '\u{202E}',
    '\u{2066}',
    '\u{200B}',
    '\u{FEFF}',
    '\u{061C}',
    '\u{E0041}',
    '\u{2028}',
    '\u{90}',
    '\u{9d}',
];

/// The escape sequences of `TEXT` (the title change, the clipboard write, the DCS query,
/// the cursor query) as they would act.
pub(crate) const SEQUENCES: [&str; 4] = ["\u{1b}]0;", "\u{1b}]52;", "\u{1b}P", "\u{1b}[6n"];

/// What in `out` (bytes a front end wrote for a terminal) a terminal would act on, or
/// would hide: a character of `RAW`, an escape sequence of `TEXT`, a string-introducing
/// escape (OSC, DCS, APC, PM, SOS) or a reset, a CR that does not end a line
/// (`crlf_ends_lines`) or any CR. Only the escapes the front end makes itself (CSI
/// sequences, DECSC/DECRC) may be there.
pub(crate) fn violations(out: &[u8], crlf_ends_lines: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(out);
    let mut found = Vec::new();
    for c in RAW {
        if text.contains(c) {
            found.push(format!("raw {c:?}"));
        }
    }
    for seq in SEQUENCES {
        if text.contains(seq) {
            found.push(format!("sequence {seq:?}"));
        }
    }
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\u{1b}', Some(']' | 'P' | '_' | '^' | 'X' | 'c' | '\\')) | ('\u{1b}', None) => {
                found.push(format!("escape {:?}", chars.peek()));
            }
            ('\r', Some('\n')) if crlf_ends_lines => {}
            ('\r', _) => found.push("carriage return".into()),
            _ => {}
        }
    }
    found
}

/// Every string in `v` (keys included), depth first.
pub(crate) fn strings(v: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => stack.extend(a),
            serde_json::Value::Object(o) => {
                out.extend(o.keys().cloned());
                stack.extend(o.values());
            }
            _ => {}
        }
    }
    out
}

/// How many times `out` shows `TEXT`'s title change visibly (`␛]0;OWNED`).
pub(crate) fn shown(out: &[u8]) -> usize {
    String::from_utf8_lossy(out).matches("␛]0;OWNED").count()
}

/// A value of the type with `TEXT` in every string.
pub(crate) trait Hostile {
    fn hostile() -> Self;
}

/// A value of `T` built by serde from `Gen`: every string `TEXT`, every option `Some`,
/// every list three long, every enum the next of its variants.
pub(crate) fn from_serde<T: DeserializeOwned>() -> T {
    T::deserialize(Gen).expect("every type serde can build is built")
}

macro_rules! via_serde {
    ($($t:ty),* $(,)?) => {
        $(impl Hostile for $t {
            fn hostile() -> Self {
                from_serde()
            }
        })*
    };
}

// The types of the protocol's fields. A field of a new type does not compile until its
// type is here: none can be left out unseen.
via_serde!(
    String,
    Option<String>,
    bool,
    u32,
    u64,
    usize,
    f64,
    Option<u32>,
    Option<f64>,
    Vec<String>,
    Vec<usize>,
    Vec<crate::protocol::ProviderInfo>,
    Vec<crate::protocol::SessionInfo>,
    Vec<crate::protocol::PlanStep>,
    Vec<crate::spend::ModelSpend>,
    crate::protocol::NoticeLevel,
    crate::protocol::TurnEndReason,
    crate::policy::Mode,
    crate::policy::record::Record,
);

/// A sub-agent's event: a call with a hostile name and arguments.
impl Hostile for Box<crate::protocol::Event> {
    fn hostile() -> Self {
        Box::new(crate::protocol::Event::ToolCallStarted {
            id: TEXT.to_string(),
            name: TEXT.to_string(),
            arguments: TEXT.to_string(),
        })
    }
}

/// A history with one message of every kind, every text in it `TEXT`: calls with a
/// hostile name and arguments, their results.
impl Hostile for History {
    fn hostile() -> Self {
        let kinds = [
            Kind::System,
            Kind::User,
            Kind::Assistant,
            Kind::Reasoning,
            Kind::ToolCall,
            Kind::ToolResult,
            Kind::Compaction,
        ];
        let messages: Vec<Message> = kinds
            .into_iter()
            .map(|kind| match kind {
                Kind::System => Message::system(TEXT),
                Kind::User => Message::user_with_attachments(TEXT, TEXT, vec![TEXT.to_string()]),
                Kind::Assistant => Message::assistant(TEXT),
                Kind::Reasoning => Message::reasoning(TEXT.to_string(), TEXT, serde_json::Value::Null),
                Kind::ToolCall => Message::tool_call(TEXT, TEXT, TEXT),
                Kind::ToolResult => {
                    Message::tool_result(TEXT, TEXT, TEXT.to_string(), TEXT.to_string(), false)
                }
                Kind::Compaction => Message::compaction(TEXT, 1, 0),
            })
            .collect();
        History::from(messages)
    }
}

/// Why `Gen` could not build a value (never expected).
#[derive(Debug)]
pub(crate) struct GenError(String);

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GenError {}

impl de::Error for GenError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        GenError(msg.to_string())
    }
}

thread_local! {
    /// Which variant the next enum takes (each enum cycles through its variants).
    static NEXT_VARIANT: Cell<usize> = const { Cell::new(0) };
}

/// Items in every generated list.
const LIST: usize = 3;

/// Deserializer methods that answer with one fixed value each.
macro_rules! scalars {
    ($($method:ident => $visit:ident($value:expr),)*) => {
        $(fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
            v.$visit($value)
        })*
    };
}

/// A deserializer that makes up a value for whatever asks.
#[derive(Clone, Copy)]
struct Gen;

impl<'de> de::Deserializer<'de> for Gen {
    type Error = GenError;

    // The scalars: one made-up value each (strings and characters the hostile ones).
    scalars! {
        deserialize_any => visit_str(TEXT),
        deserialize_bool => visit_bool(true),
        deserialize_i8 => visit_i8(7),
        deserialize_i16 => visit_i16(7),
        deserialize_i32 => visit_i32(7),
        deserialize_i64 => visit_i64(7),
        deserialize_u8 => visit_u8(7),
        deserialize_u16 => visit_u16(7),
        deserialize_u32 => visit_u32(7),
        deserialize_u64 => visit_u64(7),
        deserialize_f32 => visit_f32(1.5),
        deserialize_f64 => visit_f64(1.5),
        deserialize_char => visit_char('\u{202E}'),
        deserialize_str => visit_str(TEXT),
        deserialize_string => visit_string(TEXT.to_string()),
        deserialize_bytes => visit_bytes(TEXT.as_bytes()),
        deserialize_byte_buf => visit_byte_buf(TEXT.as_bytes().to_vec()),
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_some(self)
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, GenError> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, GenError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_seq(Items(LIST))
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, GenError> {
        v.visit_seq(Items(len))
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, GenError> {
        v.visit_seq(Items(len))
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_map(Fields {
            names: &[],
            at: 0,
            one_more: true,
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, GenError> {
        v.visit_map(Fields {
            names: fields,
            at: 0,
            one_more: false,
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, GenError> {
        let i = NEXT_VARIANT.with(|n| {
            let i = n.get();
            n.set(i + 1);
            i
        });
        v.visit_enum(Variant(variants[i % variants.len().max(1)]))
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_str(TEXT)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_unit()
    }
}

/// `n` generated items.
struct Items(usize);

impl<'de> de::SeqAccess<'de> for Items {
    type Error = GenError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, GenError> {
        if self.0 == 0 {
            return Ok(None);
        }
        self.0 -= 1;
        seed.deserialize(Gen).map(Some)
    }
}

/// A struct's fields by name (or one made-up entry of a map), each with a generated value.
struct Fields {
    names: &'static [&'static str],
    at: usize,
    one_more: bool,
}

impl<'de> de::MapAccess<'de> for Fields {
    type Error = GenError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, GenError> {
        if let Some(name) = self.names.get(self.at) {
            self.at += 1;
            return seed.deserialize((*name).into_deserializer()).map(Some);
        }
        if std::mem::take(&mut self.one_more) {
            return seed.deserialize(Gen).map(Some);
        }
        Ok(None)
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, GenError> {
        seed.deserialize(Gen)
    }
}

/// The variant an enum takes.
struct Variant(&'static str);

impl<'de> de::EnumAccess<'de> for Variant {
    type Error = GenError;
    type Variant = Self;
    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self), GenError> {
        let name: de::value::StrDeserializer<'_, GenError> = self.0.into_deserializer();
        Ok((seed.deserialize(name)?, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant {
    type Error = GenError;
    fn unit_variant(self) -> Result<(), GenError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, GenError> {
        seed.deserialize(Gen)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, GenError> {
        v.visit_seq(Items(len))
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, GenError> {
        v.visit_map(Fields {
            names: fields,
            at: 0,
            one_more: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_of_every_event_is_the_hostile_text() {
        let events = crate::protocol::Event::every_variant_hostile();
        assert!(events.len() >= 25, "{}", events.len());
        for e in &events {
            let v = serde_json::to_value(e).unwrap();
            let strings = strings(&v);
            // The tag is ours; every other string is the hostile text (or holds it).
            for s in strings.iter().filter(|s| !is_tag(s)) {
                assert!(
                    s.contains(TEXT) || !s.chars().any(char::is_alphabetic),
                    "{s:?} in {v}"
                );
            }
        }
    }

    fn is_tag(s: &str) -> bool {
        s.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c == '-')
    }
}
