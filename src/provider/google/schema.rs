//! JSON Schema → the OpenAPI subset Gemini's `functionDeclarations.parameters` accepts:
//! unknown keywords dropped, `type: [x, "null"]` → `type` + `nullable`, `const` → `enum`,
//! `oneOf` → `anyOf`, local `$ref`s inlined, empty object properties removed. Pure.

use serde_json::{Map, Value};

/// Keywords Gemini's Schema object knows.
const KEPT: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// String formats Gemini accepts.
const FORMATS: &[&str] = &["enum", "date-time", "int32", "int64", "float", "double"];

/// The schema adapted for Gemini; `None` for an object with no properties (Gemini
/// rejects an empty `properties`, so a tool without parameters sends none).
pub fn adapt(schema: &Value) -> Option<Value> {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    let out = convert(schema, &defs, 0);
    let empty = out.get("type").and_then(Value::as_str) == Some("object")
        && out
            .get("properties")
            .is_none_or(|p| p.as_object().is_none_or(Map::is_empty));
    if empty { None } else { Some(out) }
}

fn convert(schema: &Value, defs: &Value, depth: u32) -> Value {
    let Some(obj) = schema.as_object() else {
        return Value::Object(Map::new());
    };
    if depth > 16 {
        return Value::Object(Map::new());
    }
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or("");
        if let Some(target) = defs.get(name) {
            return convert(target, defs, depth + 1);
        }
        return Value::Object(Map::new());
    }
    let mut out = Map::new();
    for (k, v) in obj {
        match k.as_str() {
            "type" => match v {
                Value::Array(types) => {
                    let real: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
                    if let Some(t) = real.first() {
                        out.insert("type".into(), (*t).clone());
                    }
                    if real.len() < types.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            "const" => {
                if let Some(s) = v.as_str() {
                    out.insert("enum".into(), Value::Array(vec![Value::String(s.into())]));
                }
            }
            "enum" => {
                let strings: Vec<Value> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|e| e.is_string())
                    .cloned()
                    .collect();
                if !strings.is_empty() {
                    out.insert("enum".into(), Value::Array(strings));
                }
            }
            "format" if v.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.insert(k.clone(), v.clone());
            }
            "format" => {}
            "properties" => {
                let props: Map<String, Value> = v
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, s)| (name.clone(), convert(s, defs, depth + 1)))
                    .collect();
                if !props.is_empty() {
                    out.insert(k.clone(), Value::Object(props));
                }
            }
            "items" => {
                out.insert(k.clone(), convert(v, defs, depth + 1));
            }
            "anyOf" | "oneOf" => {
                let alts: Vec<Value> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
                    .map(|s| convert(s, defs, depth + 1))
                    .collect();
                if alts.len() < v.as_array().map_or(0, Vec::len) {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                if alts.len() == 1 {
                    if let Some(Value::Object(only)) = alts.into_iter().next() {
                        for (ok, ov) in only {
                            out.entry(ok).or_insert(ov);
                        }
                    }
                } else if !alts.is_empty() {
                    out.insert("anyOf".into(), Value::Array(alts));
                }
            }
            _ if KEPT.contains(&k.as_str()) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    // `required` may only name properties that exist.
    let names: Vec<String> = out
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(Value::Array(req)) = out.get_mut("required") {
        req.retain(|r| r.as_str().is_some_and(|r| names.iter().any(|n| n == r)));
        if req.is_empty() {
            out.remove("required");
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unsupported_keywords_are_adapted() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": {"type": ["string", "null"], "format": "uri", "description": "p"},
                "mode": {"const": "fast"},
                "item": {"$ref": "#/$defs/Item"},
                "n": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
            },
            "required": ["path", "ghost"],
            "$defs": {"Item": {"type": "object", "properties": {"x": {"type": "number"}}}},
        });
        assert_eq!(
            adapt(&s).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "nullable": true, "description": "p"},
                    "mode": {"enum": ["fast"]},
                    "item": {"type": "object", "properties": {"x": {"type": "number"}}},
                    "n": {"type": "integer", "nullable": true},
                },
                "required": ["path"],
            })
        );
    }

    #[test]
    fn a_tool_without_parameters_sends_none() {
        assert_eq!(
            adapt(&json!({"type": "object", "properties": {}, "required": []})),
            None
        );
    }
}
