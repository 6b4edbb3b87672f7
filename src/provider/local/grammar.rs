//! The GBNF grammar the engine samples under once the model has opened an exec tag
//! (constrained decoding, issue 22): what follows `<||SYSTEM.EXEC>` is either a known tool's
//! `name(key=value, …)` with that tool's parameter names and typed values, or a shell
//! command on one line, or the whole-file form (`write PATH`, then the file's lines), and
//! then the closing tag `<SYSTEM.EXEC||>` (or the line's end). Pure text: builds the
//! grammar from the offered tools; it never loads it (the worker does, and runs
//! unconstrained when llama.cpp rejects it) and knows nothing of text outside tags.
//!
//! A command must not start like a tool call (`file_read(`), or the call form would
//! constrain nothing: the command's first characters walk a trie of the tools' names, and
//! at each step leave it with any character that no name continues with.

use std::collections::BTreeSet;

use crate::provider::text_protocol::calls::SHELL_TOOL;
use crate::provider::text_protocol::tags::EXEC_CLOSE;
use crate::tool_vocab::ToolSchema;
use crate::tool_vocab::meta::FILE_WRITE;

/// The grammar's start rule.
pub(crate) const ROOT: &str = "root";

/// The grammar for the body of an open exec tag, its closing tag included.
pub(crate) fn exec_body(tools: &[ToolSchema]) -> String {
    let tools: Vec<&ToolSchema> = tools
        .iter()
        .filter(|t| t.name != SHELL_TOOL && !t.name.is_empty())
        .collect();
    let mut g = String::new();
    let calls: Vec<String> = (0..tools.len()).map(|i| format!("call-{i}")).collect();
    // The whole-file form (`text_protocol::write`), when file_write is offered: its
    // lines run to the closing tag (a `<S` inside the file would end it: rare in code).
    let write = tools.iter().any(|t| t.name == FILE_WRITE.name);
    let mut alts = vec!["cmd".to_string()];
    if write {
        alts.push("write".into());
    }
    alts.extend(calls.iter().cloned());
    g.push_str(&format!("root ::= {}\n", alts.join(" | ")));
    if write {
        g.push_str("write ::= \"write \" [^ \\t\\n]+ \"\\n\" ( [^<] | \"<\" [^S] )* close\n");
    }
    g.push_str(&format!("close ::= {}\n", literal(EXEC_CLOSE)));
    // A tag ends with its closing tag, or with the end of its line: a model kept from
    // writing the newline it wants would ramble on inside the tag. After a newline only
    // the end of the response may follow, and the scanner runs a one-line command the
    // model left open.
    g.push_str("end ::= close | \"\\n\"\n");
    // The rest of a one-line command, then its end.
    g.push_str("line ::= [^\\n]* end\n");
    g.push_str("string ::= \"\\\"\" ( [^\"\\\\] | \"\\\\\" [^\\n] )* \"\\\"\"\n");
    g.push_str("number ::= \"-\"? [0-9]+ ( \".\" [0-9]+ )?\n");
    g.push_str("bool ::= \"true\" | \"false\"\n");
    g.push_str("value ::= string | number | bool | \"null\"\n");
    g.push_str("sep ::= \",\" \" \"?\n");
    for (i, t) in tools.iter().enumerate() {
        let args: Vec<String> = t
            .parameters
            .iter()
            .map(|p| {
                let value = match p.param_type.as_str() {
                    "string" => "string",
                    "integer" | "number" => "number",
                    "boolean" => "bool",
                    _ => "value",
                };
                format!("{} \" \"? \"=\" \" \"? {value}", literal(&p.name))
            })
            .collect();
        let arg = if args.is_empty() {
            "[a-zA-Z_] [a-zA-Z0-9_]* \" \"? \"=\" \" \"? value".to_string()
        } else {
            format!("( {} )", args.join(" | "))
        };
        g.push_str(&format!("arg-{i} ::= {arg}\n"));
        g.push_str(&format!(
            "call-{i} ::= {} ( arg-{i} ( sep arg-{i} )* )? \")\" end\n",
            literal(&format!("{}(", t.name))
        ));
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    trie(&mut g, &names);
    g
}

/// `cmd`: a command that does not start with `name(` for any of `names`. One rule per
/// trie node (a prefix of some name): continue along the trie, or leave it with any
/// other character, or end (not at the root: a command is never empty).
fn trie(g: &mut String, names: &[&str]) {
    let mut prefixes: Vec<String> = vec![String::new()];
    for n in names {
        for (i, _) in n.char_indices().skip(1) {
            prefixes.push(n[..i].to_string());
        }
        prefixes.push((*n).to_string());
    }
    prefixes.sort();
    prefixes.dedup();
    let id = |p: &str| prefixes.iter().position(|q| q == p).unwrap_or(0);
    for p in &prefixes {
        let nexts: BTreeSet<char> = names
            .iter()
            .filter_map(|n| n.strip_prefix(p.as_str()).and_then(|r| r.chars().next()))
            .collect();
        let mut banned: BTreeSet<char> = nexts.clone();
        banned.insert('\n');
        if names.contains(&p.as_str()) {
            banned.insert('(');
        }
        if p.is_empty() {
            // No leading blank: `<||SYSTEM.EXEC> file_read(` must not escape the trie.
            banned.insert(' ');
            banned.insert('\t');
        }
        let mut alts: Vec<String> = nexts
            .iter()
            .map(|c| format!("{} node-{}", literal(&c.to_string()), id(&format!("{p}{c}"))))
            .collect();
        let class: String = banned.iter().map(|c| class_char(*c)).collect();
        alts.push(format!("[^{class}] line"));
        if !p.is_empty() {
            alts.push("end".into());
        }
        g.push_str(&format!("node-{} ::= {}\n", id(p), alts.join(" | ")));
    }
    g.push_str("cmd ::= node-0\n");
}

/// A GBNF string literal.
fn literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One character inside a GBNF `[…]` class.
fn class_char(c: char) -> String {
    match c {
        '\n' => "\\n".into(),
        '\t' => "\\t".into(),
        '\r' => "\\r".into(),
        // `^` needs none: it is never first (`\n` always is banned and sorts before it).
        ']' | '[' | '\\' | '-' => format!("\\{c}"),
        c if c.is_control() => format!("\\x{:02X}", c as u32),
        c => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool_vocab::ParamSpec;

    fn tool(name: &str, params: &[(&str, &str)]) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: String::new(),
            parameters: params
                .iter()
                .map(|(n, t)| ParamSpec::new(n, t, "", true))
                .collect(),
            json_schema: None,
        }
    }

    fn rule<'a>(g: &'a str, name: &str) -> &'a str {
        g.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ::= ")))
            .unwrap_or_else(|| panic!("no rule {name} in\n{g}"))
    }

    #[test]
    fn without_tools_the_body_is_one_line_then_the_closing_tag() {
        let g = exec_body(&[tool("bash", &[("command", "string")])]);
        assert_eq!(rule(&g, "root"), "cmd");
        assert_eq!(rule(&g, "close"), "\"<SYSTEM.EXEC||>\"");
        assert_eq!(rule(&g, "end"), "close | \"\\n\"");
        assert_eq!(rule(&g, "line"), "[^\\n]* end");
        assert_eq!(rule(&g, "cmd"), "node-0");
        // A command is never empty and never starts with a blank.
        assert_eq!(rule(&g, "node-0"), "[^\\t\\n ] line");
    }

    #[test]
    fn a_known_tool_is_its_name_typed_keyword_arguments_and_the_closing_tag() {
        let g = exec_body(&[
            tool("bash", &[("command", "string")]),
            tool("file_read", &[("path", "string"), ("offset", "integer")]),
        ]);
        assert_eq!(rule(&g, "root"), "cmd | call-0");
        assert_eq!(
            rule(&g, "arg-0"),
            "( \"path\" \" \"? \"=\" \" \"? string | \"offset\" \" \"? \"=\" \" \"? number )"
        );
        assert_eq!(
            rule(&g, "call-0"),
            "\"file_read(\" ( arg-0 ( sep arg-0 )* )? \")\" end"
        );
    }

    #[test]
    fn a_command_cannot_start_like_a_call_but_may_share_a_prefix_with_a_name() {
        let g = exec_body(&[tool("ab", &[]), tool("ac", &[])]);
        // Nodes: "" (0), "a" (1), "ab" (2), "ac" (3).
        assert_eq!(rule(&g, "node-0"), "\"a\" node-1 | [^\\t\\n a] line");
        assert_eq!(
            rule(&g, "node-1"),
            "\"b\" node-2 | \"c\" node-3 | [^\\nbc] line | end"
        );
        // At a whole name, `(` is the call's, not a command's.
        assert_eq!(rule(&g, "node-2"), "[^\\n(] line | end");
        // No parameters known: any keyword.
        assert!(rule(&g, "arg-0").starts_with("[a-zA-Z_]"));
    }

    #[test]
    fn with_file_write_offered_the_whole_file_form_runs_to_the_closing_tag() {
        let g = exec_body(&[
            tool("bash", &[("command", "string")]),
            tool("file_write", &[("path", "string"), ("content", "string")]),
        ]);
        assert_eq!(rule(&g, "root"), "cmd | write | call-0");
        assert_eq!(
            rule(&g, "write"),
            "\"write \" [^ \\t\\n]+ \"\\n\" ( [^<] | \"<\" [^S] )* close"
        );
        // Without file_write, no form to offer.
        let g = exec_body(&[tool("bash", &[("command", "string")])]);
        assert!(!g.contains("write"), "{g}");
    }

    #[test]
    fn names_and_parameters_are_escaped() {
        assert_eq!(literal("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(class_char(']'), "\\]");
        assert_eq!(class_char('-'), "\\-");
        let g = exec_body(&[tool("x-y", &[("q\"", "string")])]);
        assert!(g.contains("\"x-y(\""), "{g}");
        assert!(g.contains("\"q\\\"\""), "{g}");
        assert!(rule(&g, "node-1").contains("[^\\n\\-]"), "{g}");
    }
}
