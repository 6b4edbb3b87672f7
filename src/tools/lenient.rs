//! Lenient reading of a model's arguments before any tool sees them (native calls and
//! calls recovered from text alike): a well-known alias becomes the real name
//! (`file_path` → `path`), a name the tool does not know is dropped, a number or boolean
//! written as a string becomes that type; each alias or dropped name is named in a note
//! for the result. Missing required parameters are left for the tool to refuse. Pure: knows
//! the alias table and JSON Schema's `properties`, no tool and no wire format.

use serde_json::{Map, Value};

use super::ToolSchema;

/// Names small models use for a real parameter: (alias, real name).
const ALIASES: &[(&str, &str)] = &[
    ("file_path", "path"),
    ("filename", "path"),
    ("filepath", "path"),
    ("file", "path"),
    ("cmd", "command"),
];

/// The arguments a tool gets, and what was changed to get them (one line each).
#[derive(Debug, PartialEq)]
pub(crate) struct Lenient {
    pub(crate) args: Value,
    pub(crate) notes: Vec<String>,
}

/// Reads `args` against the tool's schema. A schema without `properties`, or one that
/// allows other properties, leaves the names alone (only types are eased).
pub(crate) fn normalize(schema: &ToolSchema, args: Value) -> Lenient {
    let js = schema.to_json_schema();
    let Value::Object(map) = args else {
        return Lenient {
            args,
            notes: Vec::new(),
        };
    };
    let Some(props) = js.get("properties").and_then(Value::as_object) else {
        return Lenient {
            args: Value::Object(map),
            notes: Vec::new(),
        };
    };
    let closed = !matches!(
        js.get("additionalProperties"),
        Some(Value::Bool(true) | Value::Object(_))
    ) && !props.is_empty();
    let mut out = Map::new();
    let mut notes = Vec::new();
    let mut ignored = Vec::new();
    // Real names first, so that an alias never replaces a value given under the real name.
    let (known, other): (Vec<_>, Vec<_>) = map.into_iter().partition(|(k, _)| props.contains_key(k));
    for (k, v) in known {
        let v = ease(props.get(&k), v);
        out.insert(k, v);
    }
    for (k, v) in other {
        if !closed {
            out.insert(k, v);
            continue;
        }
        let real = ALIASES
            .iter()
            .find(|(alias, real)| *alias == k && props.contains_key(*real) && !out.contains_key(*real))
            .map(|(_, real)| *real);
        match real {
            Some(real) => {
                notes.push(format!("read parameter \"{k}\" as \"{real}\""));
                out.insert(real.to_string(), ease(props.get(real), v));
            }
            None => ignored.push(k),
        }
    }
    if !ignored.is_empty() {
        let plural = if ignored.len() == 1 { "" } else { "s" };
        let names: Vec<String> = ignored.iter().map(|k| format!("\"{k}\"")).collect();
        notes.push(format!("ignored unknown parameter{plural} {}", names.join(", ")));
    }
    Lenient {
        args: Value::Object(out),
        notes,
    }
}

/// A string standing for the number or boolean the property wants, as that type.
fn ease(prop: Option<&Value>, v: Value) -> Value {
    let Value::String(s) = &v else { return v };
    let types: Vec<&str> = match prop.and_then(|p| p.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return v,
    };
    if types.contains(&"string") {
        return v;
    }
    let t = s.trim();
    if types.contains(&"integer")
        && let Ok(n) = t.parse::<i64>()
    {
        return Value::from(n);
    }
    if types.contains(&"number") {
        if let Ok(n) = t.parse::<i64>() {
            return Value::from(n);
        }
        if let Some(n) = t.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            return Value::Number(n);
        }
    }
    if types.contains(&"boolean") {
        match t.to_ascii_lowercase().as_str() {
            "true" => return Value::Bool(true),
            "false" => return Value::Bool(false),
            _ => {}
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;
    use serde_json::json;

    fn schema(name: &str) -> ToolSchema {
        Registry::builtin()
            .schemas()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
    }

    #[test]
    fn unknown_names_are_dropped_and_named() {
        let l = normalize(
            &schema("file_read"),
            json!({"path": "a.txt", "pattern": "**/*.md"}),
        );
        assert_eq!(l.args, json!({"path": "a.txt"}));
        assert_eq!(l.notes, ["ignored unknown parameter \"pattern\""]);
        let l = normalize(&schema("glob"), json!({"pattern": "*", "x": 1, "y": 2}));
        assert_eq!(l.args, json!({"pattern": "*"}));
        assert_eq!(l.notes, ["ignored unknown parameters \"x\", \"y\""]);
    }

    #[test]
    fn aliases_become_the_real_name_unless_it_is_given() {
        for alias in ["file_path", "filename", "filepath", "file"] {
            let l = normalize(&schema("file_read"), json!({alias: "a.txt"}));
            assert_eq!(l.args, json!({"path": "a.txt"}), "{alias}");
            assert_eq!(l.notes, [format!("read parameter \"{alias}\" as \"path\"")]);
        }
        let l = normalize(&schema("bash"), json!({"cmd": "ls"}));
        assert_eq!(l.args, json!({"command": "ls"}));
        let l = normalize(&schema("file_read"), json!({"file_path": "b", "path": "a"}));
        assert_eq!(l.args, json!({"path": "a"}));
        assert_eq!(l.notes, ["ignored unknown parameter \"file_path\""]);
        // An alias is only read when the tool has the real name.
        let l = normalize(&schema("glob"), json!({"pattern": "*", "cmd": "ls"}));
        assert_eq!(l.args, json!({"pattern": "*"}));
    }

    #[test]
    fn numbers_and_booleans_written_as_strings_take_their_type() {
        let l = normalize(
            &schema("file_read"),
            json!({"path": "a", "offset": "3", "limit": " 10 "}),
        );
        assert_eq!(l.args, json!({"path": "a", "offset": 3, "limit": 10}));
        assert!(l.notes.is_empty());
        let open = ToolSchema {
            name: "t".into(),
            description: String::new(),
            parameters: vec![],
            json_schema: Some(json!({"type": "object", "properties": {
                "n": {"type": "number"}, "b": {"type": "boolean"}, "s": {"type": "string"}
            }})),
        };
        let l = normalize(&open, json!({"n": "1.5", "b": "True", "s": "7"}));
        assert_eq!(l.args, json!({"n": 1.5, "b": true, "s": "7"}));
        // Not a number: left for the tool to refuse with the parameter's name and type.
        let l = normalize(&open, json!({"n": "many"}));
        assert_eq!(l.args, json!({"n": "many"}));
    }

    #[test]
    fn open_schemas_keep_every_name() {
        let open = ToolSchema {
            name: "t".into(),
            description: String::new(),
            parameters: vec![],
            json_schema: Some(json!({"type": "object", "properties": {"a": {"type": "string"}},
                "additionalProperties": true})),
        };
        let l = normalize(&open, json!({"a": "x", "file_path": "y"}));
        assert_eq!(l.args, json!({"a": "x", "file_path": "y"}));
        assert!(l.notes.is_empty());
        let none = ToolSchema {
            name: "t".into(),
            description: String::new(),
            parameters: vec![],
            json_schema: Some(json!({"type": "object"})),
        };
        assert_eq!(normalize(&none, json!({"q": 1})).args, json!({"q": 1}));
    }
}
