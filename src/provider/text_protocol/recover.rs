//! Recovery of a native tool call that a small model wrote as text: a whole response that
//! is a fenced ```json block, a bare JSON object or a `<tool_call>` block holding
//! `{"name": <a registered tool>, "arguments": {…}}` with arguments valid for that tool
//! once read leniently (`tools::lenient`). Anything else stays text. Pure: no IO.

use serde_json::{Map, Value};

use crate::tool_vocab::ToolSchema;

/// A call recovered from text: the tool's name and its arguments as JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub name: String,
    pub arguments: String,
}

/// The call the whole of `text` stands for, if it is exactly one valid call.
pub fn recover(text: &str, tools: &[ToolSchema]) -> Option<Recovered> {
    let body = unwrap_block(text.trim())?;
    let value: Value = serde_json::from_str(body).ok()?;
    let obj = value.as_object()?;
    let name = obj.get("name")?.as_str()?;
    let args = match obj.get("arguments").or_else(|| obj.get("parameters")) {
        None => Value::Object(Map::new()),
        // Some models put the arguments object in a string.
        Some(Value::String(s)) => serde_json::from_str(s).ok()?,
        Some(v) => v.clone(),
    };
    let allowed = |k: &str| matches!(k, "name" | "arguments" | "parameters" | "id" | "type");
    if !obj.keys().all(|k| allowed(k)) {
        return None;
    }
    let schema = tools.iter().find(|t| t.name == name)?;
    // Judged as the tool will read them (aliases, unknown names dropped, numbers in
    // strings), but kept as written: the registry eases them again and names what it did.
    let eased = crate::tools::lenient::normalize(schema, args.clone());
    if !valid_arguments(&schema.to_json_schema(), &eased.args) {
        return None;
    }
    Some(Recovered {
        name: name.to_string(),
        arguments: args.to_string(),
    })
}

/// The JSON inside a fenced block or `<tool_call>` block, or the text itself when it is a
/// bare object; `None` when the text is anything else.
fn unwrap_block(text: &str) -> Option<&str> {
    if let Some(rest) = text.strip_prefix("```") {
        let rest = rest.strip_suffix("```")?;
        let (lang, body) = rest.split_once('\n')?;
        if !matches!(lang.trim(), "" | "json" | "tool_call") {
            return None;
        }
        return Some(body.trim());
    }
    if let Some(rest) = text.strip_prefix("<tool_call>") {
        return Some(rest.strip_suffix("</tool_call>")?.trim());
    }
    (text.starts_with('{') && text.ends_with('}')).then_some(text)
}

/// Whether `args` fits a JSON Schema object: required keys present, no unknown keys when
/// properties are listed, and each value of its declared type.
pub fn valid_arguments(schema: &Value, args: &Value) -> bool {
    let Some(args) = args.as_object() else {
        return false;
    };
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    if let Some(required) = required
        && !required
            .iter()
            .filter_map(Value::as_str)
            .all(|k| args.contains_key(k))
    {
        return false;
    }
    let Some(props) = props else { return true };
    args.iter().all(|(k, v)| match props.get(k) {
        None => false,
        Some(p) => v.is_null() || type_fits(p.get("type"), v),
    })
}

fn type_fits(ty: Option<&Value>, v: &Value) -> bool {
    let one = |t: &str| match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    };
    match ty {
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;

    fn tools() -> Vec<ToolSchema> {
        Registry::builtin().schemas()
    }

    fn glob(pattern: &str) -> Option<Recovered> {
        Some(Recovered {
            name: "glob".into(),
            arguments: serde_json::json!({"pattern": pattern}).to_string(),
        })
    }

    #[test]
    fn the_recorded_fenced_json_answer_becomes_a_call() {
        // What local-04 (llama.cpp server, Qwen 0.5B) streamed as text.
        let text =
            "```json\n{\n  \"name\": \"glob\",\n  \"arguments\": {\n    \"pattern\": \"*.rs\"\n  }\n}\n```";
        assert_eq!(recover(text, &tools()), glob("*.rs"));
    }

    #[test]
    fn bare_json_tool_call_tags_and_parameters_are_recovered() {
        assert_eq!(
            recover(
                r#"  {"name": "glob", "arguments": {"pattern": "*.rs"}} "#,
                &tools()
            ),
            glob("*.rs")
        );
        assert_eq!(
            recover(
                "<tool_call>\n{\"name\": \"glob\", \"parameters\": {\"pattern\": \"**/*.rs\"}}\n</tool_call>",
                &tools()
            ),
            glob("**/*.rs")
        );
        assert_eq!(
            recover(
                r#"{"name": "glob", "arguments": "{\"pattern\": \"a\"}"}"#,
                &tools()
            ),
            glob("a")
        );
    }

    #[test]
    fn anything_else_stays_text() {
        let t = tools();
        // Names no registered tool.
        assert_eq!(
            recover(r#"{"name": "weather", "arguments": {"city": "Oslo"}}"#, &t),
            None
        );
        // Inside prose.
        assert_eq!(
            recover(
                "Here you go:\n```json\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*\"}}\n```",
                &t
            ),
            None
        );
        // Arguments that fail the schema: missing required, wrong type.
        assert_eq!(recover(r#"{"name": "glob", "arguments": {}}"#, &t), None);
        assert_eq!(
            recover(r#"{"name": "glob", "arguments": {"pattern": 3}}"#, &t),
            None
        );
        // Plain JSON data that is not a call, and another language's block.
        assert_eq!(recover(r#"{"files": ["a.rs"]}"#, &t), None);
        assert_eq!(
            recover(
                "```python\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*\"}}\n```",
                &t
            ),
            None
        );
        assert_eq!(recover("not json at all", &t), None);
    }

    #[test]
    fn arguments_are_judged_leniently_and_kept_as_written() {
        let t = tools();
        // The issue's own example: an extra key the tool does not know.
        let raw = r#"{"name": "file_read", "arguments": {"path": "/p/notes.txt", "pattern": "**/*.md"}}"#;
        assert_eq!(
            recover(raw, &t),
            Some(Recovered {
                name: "file_read".into(),
                arguments: r#"{"path":"/p/notes.txt","pattern":"**/*.md"}"#.into()
            })
        );
        // An alias of a required parameter, and a number written as a string.
        let raw = r#"{"name": "file_read", "arguments": {"file_path": "a", "limit": "5"}}"#;
        assert_eq!(recover(raw, &t).map(|r| r.name).as_deref(), Some("file_read"));
        let raw = r#"{"name": "bash", "arguments": {"cmd": "ls"}}"#;
        assert_eq!(recover(raw, &t).map(|r| r.name).as_deref(), Some("bash"));
    }

    #[test]
    fn schemas_are_checked_by_type() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "s": {"type": ["string", "null"]}, "a": {"type": "array"}
        }, "required": ["n"]});
        assert!(valid_arguments(
            &schema,
            &serde_json::json!({"n": 1, "s": null, "a": []})
        ));
        assert!(!valid_arguments(&schema, &serde_json::json!({"n": 1.5})));
        assert!(!valid_arguments(&schema, &serde_json::json!({"s": "x"})));
        assert!(!valid_arguments(&schema, &serde_json::json!([1])));
    }
}
