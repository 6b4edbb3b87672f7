//! The text protocol's whole-file form: `write PATH` on the command's first line and the
//! file's every line after it, inside one exec tag. It needs no shell quoting (a small
//! model gets heredocs and `printf` escapes wrong, or does not try) and becomes an
//! ordinary `file_write` call, under the same permissions, sandbox and checkpoints. Also
//! which multi-line commands are whole when the response stops inside their tag (the
//! stop sequence eats the closing tag): this form and a complete heredoc. Pure: no IO.

use serde_json::json;

/// The word that opens the form.
const WORD: &str = "write";

/// The form in the prompt (`render::instructions`), shown only when `file_write` is
/// offered: a concrete example, not a placeholder (the 1.5B model copied "every line of
/// the file" into the file it wrote), and one shaped like the code a task asks for (with
/// `print("hello")` as the example it wrapped its whole function in a `print("…")`).
pub const PROMPT_LINE: &str = "To create or replace a file, write its path after `write`, then the whole file \
                               (no quoting needed): <||SYSTEM.EXEC>write greet.py\ndef greet(name):\n    \
                               return \"Hello, \" + name\n<SYSTEM.EXEC||>\n";

/// The form named without an example, where the example exchange shows it in use.
pub const PROMPT_LINE_SHOWN: &str =
    "To create or replace a file, write its path after `write`, then the whole file (no quoting needed).\n";

/// `(path, content)` when `command` is the whole-file form: a first line `write PATH`
/// (the path may be quoted or in backticks, and holds no spaces) and at least one more
/// line. A fenced block around the content is taken off (small models add one), and the
/// content ends at a line that is an output tag: the model went on to invent the write's
/// output (seen from the 1.5B model: `<SYSTEM.OUTPUT||>` and "Wrote 32 bytes…" in the
/// file). The content ends with a newline, as a text file does.
pub fn parse(command: &str) -> Option<(String, String)> {
    let command = command.trim_start_matches(['\n', '\r', ' ']);
    let (first, rest) = command.split_once('\n')?;
    let path = first.trim().strip_prefix(WORD)?;
    if !path.starts_with([' ', '\t']) {
        return None;
    }
    let path = path.trim().trim_matches(['"', '\'', '`']).trim_end_matches(':');
    if path.is_empty() || path.contains(char::is_whitespace) {
        return None;
    }
    let rest = before_made_up_output(rest);
    let content = unfence(rest.trim_end_matches(['\n', '\r', ' ', '\t']));
    if content.trim().is_empty() {
        // No line of the file (`bare` sends it on without a content): never an empty file.
        return None;
    }
    let mut content = content.to_string();
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    Some((path.to_string(), content))
}

/// `text` up to the first output tag (any form the scanner knows: `<SYSTEM.OUTPUT||>`,
/// `<||SYSTEM.OUTPUT>`, `</system.output>`, …) that ends a line: a file's own text
/// that mentions a tag mid-line (`TAG = "<SYSTEM.OUTPUT||>";`) is kept. Seen from the
/// 1.5B model: the tag on its own line, and `return not self._items<SYSTEM.OUTPUT||>`.
fn before_made_up_output(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end();
        if let Some(open) = body.rfind('<')
            && is_output_tag(&body[open..])
        {
            return &text[..at + open];
        }
        at += line.len();
    }
    text
}

fn is_output_tag(tag: &str) -> bool {
    let Some(inner) = tag.strip_prefix('<').and_then(|l| l.strip_suffix('>')) else {
        return false;
    };
    let name = inner.trim_start_matches(['/', '|', '\\']).trim_end_matches('|');
    name.eq_ignore_ascii_case("SYSTEM.OUTPUT")
}

/// The path of `write PATH` written alone on one line: the model named the file but gave
/// none of its lines. It goes to `file_write` without a content, whose answer says what
/// is missing (never to the shell's `write`, which messages logged-in users).
pub fn bare(command: &str) -> Option<String> {
    let command = before_made_up_output(command).trim();
    if command.contains('\n') {
        return None;
    }
    parse(&format!("{command}\nx")).map(|(path, _)| path)
}

/// The form's arguments for `file_write`.
pub fn arguments(path: &str, content: &str) -> String {
    json!({ "path": path, "content": content }).to_string()
}

/// A stored `file_write` call as the form the model writes (`None` when its arguments
/// are not exactly a path and a content: then the `name(…)` form shows it).
pub fn to_form(arguments: &str) -> Option<String> {
    let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(arguments).ok()?;
    if v.len() != 2 {
        return None;
    }
    let path = v.get("path")?.as_str()?;
    let content = v.get("content")?.as_str()?;
    if path.is_empty() || path.contains(char::is_whitespace) {
        return None;
    }
    Some(format!("{WORD} {path}\n{}", content.trim_end_matches('\n')))
}

/// The content inside one fenced block, when the whole text is that block.
fn unfence(text: &str) -> &str {
    let Some(open) = text.strip_prefix("```") else {
        return text;
    };
    let Some((_, body)) = open.split_once('\n') else {
        return text;
    };
    match body.strip_suffix("```") {
        Some(inner) if !inner.contains("\n```") => inner.trim_end_matches(['\n', '\r']),
        _ => text,
    }
}

/// Whether a command of several lines is whole as written, so that it may run when the
/// response stopped inside its tag: the whole-file form, or a heredoc whose last line is
/// its delimiter (`cat > f <<'EOF'` … `EOF`). Any other multi-line text left in an open
/// tag may be a model rambling on, and is not run.
pub fn is_whole(command: &str) -> bool {
    let command = command.trim();
    if parse(command).is_some() {
        return true;
    }
    let Some((first, _)) = command.split_once('\n') else {
        return false;
    };
    let Some(delimiter) = heredoc_delimiter(first) else {
        return false;
    };
    command.lines().last().map(str::trim) == Some(delimiter.as_str())
}

/// The delimiter of the first heredoc opened on `line` (`<<EOF`, `<<-'EOF'`, `<< "END"`).
fn heredoc_delimiter(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].strip_prefix('-').unwrap_or(&line[at + 2..]);
    // `<<<` is a here-string, not a heredoc.
    if rest.starts_with('<') {
        return None;
    }
    let word: String = rest
        .trim_start()
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '|' | '&' | '>' | '<' | ')'))
        .collect();
    let word = word.trim_matches(['\'', '"']).to_string();
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_becomes_a_path_and_content_whatever_dress_the_model_puts_on_it() {
        let cases = [
            ("write calc.py\ndef add(a, b):\n    return a + b", "calc.py"),
            ("write calc.py\ndef add(a, b):\n    return a + b\n", "calc.py"),
            ("\nwrite `calc.py`\ndef add(a, b):\n    return a + b", "calc.py"),
            (
                "write \"src/calc.py\"\n```python\ndef add(a, b):\n    return a + b\n```",
                "src/calc.py",
            ),
            (
                "write calc.py:\n```\ndef add(a, b):\n    return a + b\n```\n",
                "calc.py",
            ),
            // The model goes on to invent the write's output (seen from the 1.5B model
            // after a coding example exchange): the file ends before it, whatever form
            // the tag takes.
            (
                "write calc.py\ndef add(a, b):\n    return a + b\n<SYSTEM.OUTPUT||>\nWrote 32 bytes to calc.py\n<SYSTEM.OUTPUT||>",
                "calc.py",
            ),
            (
                "write calc.py\ndef add(a, b):\n    return a + b\n  <||SYSTEM.OUTPUT>\nWrote 32 bytes",
                "calc.py",
            ),
            (
                "write calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n</system.output>\n",
                "calc.py",
            ),
            (
                "write calc.py\ndef add(a, b):\n    return a + b\n<|SYSTEM.OUTPUT|>",
                "calc.py",
            ),
        ];
        for (cmd, path) in cases {
            let (p, content) = parse(cmd).unwrap_or_else(|| panic!("{cmd:?}"));
            assert_eq!(p, path, "{cmd:?}");
            let want = "def add(a, b):\n    return a + b\n";
            assert_eq!(content, want, "{cmd:?}");
        }
    }

    #[test]
    fn anything_else_is_not_the_form() {
        for cmd in [
            "write calc.py",             // one line: no content line
            "writer calc.py\nx",         // another word
            "write\nx",                  // no path
            "write my file.py\nx",       // a path with a space
            "cat > calc.py\nx",          // a shell command
            "echo write calc.py\nx",     // the word not first
            "write calc.py other.py\nx", // two paths
        ] {
            assert_eq!(parse(cmd), None, "{cmd:?}");
        }
    }

    #[test]
    fn the_word_and_a_path_alone_are_a_write_without_content() {
        assert_eq!(bare("write calc.py").as_deref(), Some("calc.py"));
        assert_eq!(bare(" write `calc.py` ").as_deref(), Some("calc.py"));
        assert_eq!(bare("write calc.py\nx"), None);
        // Blank lines or only a made-up output after the path: no content either, never
        // an emptied file.
        for cmd in [
            "write calc.py\n\n",
            "write calc.py\n<SYSTEM.OUTPUT||>\nWrote 0 bytes\n",
        ] {
            assert_eq!(parse(cmd), None, "{cmd:?}");
            assert_eq!(bare(cmd).as_deref(), Some("calc.py"), "{cmd:?}");
        }
        assert_eq!(bare("write"), None);
        assert_eq!(bare("writer calc.py"), None);
    }

    #[test]
    fn a_tag_the_file_mentions_mid_line_is_kept() {
        let cmd = "write tags.py\nCLOSE = \"<SYSTEM.OUTPUT||>\"  # the tag\nOPEN = '<||SYSTEM.OUTPUT>'\n";
        let (_, content) = parse(cmd).unwrap();
        assert_eq!(
            content,
            "CLOSE = \"<SYSTEM.OUTPUT||>\"  # the tag\nOPEN = '<||SYSTEM.OUTPUT>'\n"
        );
    }

    #[test]
    fn a_block_that_is_not_one_fence_is_kept_as_written() {
        let text = "write notes.md\n```sh\nls\n```\nand then\n```sh\npwd\n```";
        let (_, content) = parse(text).unwrap();
        assert_eq!(content, "```sh\nls\n```\nand then\n```sh\npwd\n```\n");
    }

    #[test]
    fn a_stored_write_renders_back_as_the_form_and_reads_back_the_same() {
        let args = arguments("pkg/mod.py", "x = 1\ny = \"two\"\n");
        let form = to_form(&args).unwrap();
        assert_eq!(form, "write pkg/mod.py\nx = 1\ny = \"two\"");
        let (path, content) = parse(&form).unwrap();
        assert_eq!(arguments(&path, &content), args);
        // Other arguments, or a path the form cannot carry: the name(…) form shows it.
        assert_eq!(to_form(r#"{"path":"a b.py","content":"x"}"#), None);
        assert_eq!(to_form(r#"{"path":"a.py","content":"x","mode":"append"}"#), None);
        assert_eq!(to_form("{oops"), None);
    }

    #[test]
    fn whole_multiline_commands_are_the_form_and_closed_heredocs_only() {
        for cmd in [
            "write a.py\nx = 1",
            "cat > a.py <<'EOF'\nx = 1\nEOF",
            "cat > a.py << \"END\"\nx = 1\nEND\n",
            "cat <<-EOF > a.py\n\tx = 1\n\tEOF",
        ] {
            assert!(is_whole(cmd), "{cmd:?}");
        }
        for cmd in [
            "ls",                                            // one line is decided elsewhere
            "ls\nThe files are a and b.",                    // a model rambling on
            "cat > a.py <<'EOF'\nx = 1",                     // a heredoc never ended
            "cat > a.py <<'EOF'\nx = 1\nEOF\nrm -rf /tmp/x", // more after it
            "cat <<< 'x'\nmore",                             // a here-string
            "cat > a.py <<$(x)\nx\n$(x)",                    // not a plain word
        ] {
            assert!(!is_whole(cmd), "{cmd:?}");
        }
    }
}
