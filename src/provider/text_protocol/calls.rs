//! Commands inside SYSTEM.EXEC tags ⇄ canonical tool calls. A command of the form
//! `name(key="value", …)` naming a registered tool other than bash calls that tool;
//! `write PATH` and the file's lines call `file_write` (`write.rs`); anything else is a
//! shell command for `bash`. Pure: no IO.

use indexmap::IndexMap;
use serde_json::{Value, json};

use crate::tool_vocab::ToolSchema;

/// The tool every plain command goes to.
pub const SHELL_TOOL: &str = crate::tool_vocab::meta::BASH.name;
/// The tool the whole-file form (`write PATH`, then the lines) calls.
const WRITE_TOOL: &str = crate::tool_vocab::meta::FILE_WRITE.name;

/// The canonical call a tagged command stands for: `(tool name, arguments JSON)`.
pub fn to_call(command: &str, tools: &[ToolSchema]) -> (String, String) {
    if tools.iter().any(|t| t.name == WRITE_TOOL)
        && let Some((path, content)) = super::write::parse(command)
    {
        return (WRITE_TOOL.to_string(), super::write::arguments(&path, &content));
    }
    if tools.iter().any(|t| t.name == WRITE_TOOL)
        && let Some(path) = super::write::bare(command)
    {
        return (WRITE_TOOL.to_string(), json!({ "path": path }).to_string());
    }
    if let Some((name, args)) = tool_form(command, tools) {
        // In the order written, as the call line shows it.
        return (name, serde_json::to_string(&args).unwrap_or_default());
    }
    (SHELL_TOOL.to_string(), json!({ "command": command }).to_string())
}

/// A stored call as the command text the model would have written.
pub fn to_command(name: &str, arguments: &str) -> String {
    if name == WRITE_TOOL
        && let Some(form) = super::write::to_form(arguments)
    {
        return form;
    }
    let parsed: Option<IndexMap<String, Value>> = serde_json::from_str(arguments).ok();
    if name == SHELL_TOOL
        && let Some(cmd) = parsed
            .as_ref()
            .and_then(|m| m.get("command"))
            .and_then(Value::as_str)
    {
        return cmd.to_string();
    }
    let args = match parsed {
        Some(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        // Raw text that never parsed is shown as the model wrote it.
        None => arguments.to_string(),
    };
    format!("{name}({args})")
}

/// The short `name(arg, opt?)` line a prompt lists for a tool.
pub fn signature(tool: &ToolSchema) -> String {
    let params: Vec<String> = tool
        .parameters
        .iter()
        .map(|p| {
            if p.required {
                p.name.clone()
            } else {
                format!("{}?", p.name)
            }
        })
        .collect();
    format!("{}({})", tool.name, params.join(", "))
}

/// `name(...)` where name is a registered tool other than the shell, with its arguments.
fn tool_form(command: &str, tools: &[ToolSchema]) -> Option<(String, IndexMap<String, Value>)> {
    let command = command.trim();
    let open = command.find('(')?;
    let name = command[..open].trim();
    let inner = command[open + 1..].strip_suffix(')')?;
    let tool = tools.iter().find(|t| t.name == name && t.name != SHELL_TOOL)?;
    // Positional values follow the declared order (required parameters come first).
    let order: Vec<String> = tool.parameters.iter().map(|p| p.name.clone()).collect();
    // Keyword arguments, JSON object, or positional values in the schema's order.
    if inner.trim_start().starts_with('{') {
        let map: IndexMap<String, Value> = serde_json::from_str(inner).ok()?;
        return Some((tool.name.clone(), map));
    }
    let mut args = IndexMap::new();
    for (i, part) in split_args(inner)?.into_iter().enumerate() {
        let (key, value) = match keyword(&part) {
            Some((k, v)) => (k.to_string(), v),
            None => (order.get(i)?.clone(), part.as_str()),
        };
        args.insert(key, literal(value.trim()));
    }
    Some((tool.name.clone(), args))
}

/// `key=value` (or `key: value`) when `part` starts with an identifier.
fn keyword(part: &str) -> Option<(&str, &str)> {
    let idx = part.find(['=', ':'])?;
    let key = part[..idx].trim();
    let ok = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then(|| (key, &part[idx + 1..]))
}

/// A value: JSON when it parses, a single-quoted string, else the bare text.
fn literal(v: &str) -> Value {
    if let Ok(j) = serde_json::from_str::<Value>(v) {
        return j;
    }
    if let Some(s) = v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return Value::String(s.to_string());
    }
    Value::String(v.to_string())
}

/// Splits on top-level commas, respecting quotes and brackets; `None` when unbalanced.
fn split_args(s: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    let mut escaped = false;
    for c in s.chars() {
        if let Some(q) = quote {
            cur.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if quote.is_some() || depth != 0 {
        return None;
    }
    if !cur.trim().is_empty() || !parts.is_empty() {
        parts.push(cur);
    }
    Some(parts.into_iter().filter(|p| !p.trim().is_empty()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;

    fn call(cmd: &str) -> (String, Value) {
        let (name, args) = to_call(cmd, &Registry::builtin().schemas());
        (name, serde_json::from_str(&args).unwrap())
    }

    #[test]
    fn a_tool_calls_arguments_keep_the_order_written() {
        let (_, args) = to_call(
            "file_read(path=\"calc.py\", offset=3)",
            &Registry::builtin().schemas(),
        );
        assert_eq!(args, r#"{"path":"calc.py","offset":3}"#);
        assert_eq!(
            to_command("file_read", &args),
            "file_read(path=\"calc.py\", offset=3)"
        );
    }

    #[test]
    fn plain_commands_go_to_bash() {
        assert_eq!(call("ls -la"), ("bash".into(), json!({"command": "ls -la"})));
        assert_eq!(
            call("echo $(date) | wc"),
            ("bash".into(), json!({"command": "echo $(date) | wc"}))
        );
        // A bash(...) form or an unknown name stays a shell command.
        assert_eq!(
            call("weather(city=\"x\")"),
            ("bash".into(), json!({"command": "weather(city=\"x\")"}))
        );
    }

    #[test]
    fn tool_forms_call_that_tool() {
        assert_eq!(
            call(r#"file_read(path="src/main.rs", limit=20)"#),
            ("file_read".into(), json!({"path": "src/main.rs", "limit": 20}))
        );
        assert_eq!(
            call("glob('**/*.rs')"),
            ("glob".into(), json!({"pattern": "**/*.rs"}))
        );
        assert_eq!(
            call(r#"grep(pattern="a, b", path=src)"#),
            ("grep".into(), json!({"pattern": "a, b", "path": "src"}))
        );
        assert_eq!(
            call(r#"list_dir({"path": "."})"#),
            ("list_dir".into(), json!({"path": "."}))
        );
        assert_eq!(call("list_dir()"), ("list_dir".into(), json!({})));
    }

    #[test]
    fn stored_calls_render_back_to_the_same_call() {
        let tools = Registry::builtin().schemas();
        for (name, args) in [
            ("bash", json!({"command": "cargo test"})),
            ("file_read", json!({"path": "a b.rs", "offset": 3})),
            ("grep", json!({"pattern": "x\"y", "case_insensitive": true})),
        ] {
            let cmd = to_command(name, &args.to_string());
            let (n, a) = to_call(&cmd, &tools);
            assert_eq!(
                (n.as_str(), serde_json::from_str::<Value>(&a).unwrap()),
                (name, args),
                "{cmd}"
            );
        }
        assert_eq!(to_command("glob", "{oops"), "glob({oops)");
    }

    #[test]
    fn the_whole_file_form_is_a_file_write_call_and_renders_back_as_the_form() {
        let tools = Registry::builtin().schemas();
        let (name, args) = to_call("write app.py\nprint('hi \"x\"')", &tools);
        assert_eq!(name, "file_write");
        let parsed: Value = serde_json::from_str(&args).unwrap();
        assert_eq!(
            parsed,
            json!({"path": "app.py", "content": "print('hi \"x\"')\n"})
        );
        assert_eq!(to_command(&name, &args), "write app.py\nprint('hi \"x\"')");
        // The word and a path alone: file_write without a content (it says so), not
        // the shell's `write`.
        assert_eq!(
            call("write app.py"),
            ("file_write".into(), json!({"path": "app.py"}))
        );
        // Without file_write offered (read-only), it is a shell command like any other.
        let bash_only: Vec<_> = tools.into_iter().filter(|t| t.name == "bash").collect();
        assert_eq!(to_call("write app.py\nx", &bash_only).0, "bash");
    }

    #[test]
    fn signatures_mark_optional_parameters() {
        let tools = Registry::builtin().schemas();
        let read = tools.iter().find(|t| t.name == "file_read").unwrap();
        let sig = signature(read);
        assert!(sig.starts_with("file_read("), "{sig}");
        assert!(sig.contains("path") && sig.contains("offset?"), "{sig}");
    }
}
