//! Tags that name a known tool directly (`<||file_read(path="x")||>`), and exec tags in
//! any letter case, split at every byte.

use super::*;

fn run(tools: &[&str], chunks: &[&str], end: End) -> Vec<Piece> {
    let mut s = Scanner::with_tools(tools.iter().map(|t| t.to_string()).collect());
    let mut out = Vec::new();
    for c in chunks {
        out.extend(s.push(c));
    }
    out.extend(s.finish(end));
    let mut merged: Vec<Piece> = Vec::new();
    for p in out {
        match (merged.last_mut(), p) {
            (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
            (_, p) => merged.push(p),
        }
    }
    merged
}

const TOOLS: &[&str] = &["file_read", "file_write", "glob"];

fn text(s: &str) -> Piece {
    Piece::Text(s.to_string())
}

fn exec(s: &str) -> Piece {
    Piece::Exec(s.to_string())
}

/// `whole` gives `want` in one piece, cut at every byte, and one byte at a time.
fn every_split(whole: &str, want: &[Piece]) {
    assert_eq!(run(TOOLS, &[whole], End::Stop), want, "whole");
    for cut in 1..whole.len() {
        if whole.is_char_boundary(cut) {
            let (a, b) = whole.split_at(cut);
            assert_eq!(run(TOOLS, &[a, b], End::Stop), want, "cut at {cut}");
        }
    }
    let chars: Vec<String> = whole.chars().map(|c| c.to_string()).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(run(TOOLS, &refs, End::Stop), want, "char by char");
}

#[test]
fn a_tag_naming_a_known_tool_is_that_call() {
    every_split(
        "Reading.\n<||file_read(path=\"notes.txt\")||>\nthen <b>done</b>",
        &[
            text("Reading.\n"),
            exec("file_read(path=\"notes.txt\")"),
            text("\nthen <b>done</b>"),
        ],
    );
    // Any run of pipes, none included; parentheses and `>` inside quoted strings.
    for (tag, call) in [
        ("<|glob(pattern=\"*.rs\")|>", "glob(pattern=\"*.rs\")"),
        ("<glob(pattern=\"*\")>", "glob(pattern=\"*\")"),
        (
            "<||file_write(path=\"a\", content=\"x)>\\\"y\")||>",
            "file_write(path=\"a\", content=\"x)>\\\"y\")",
        ),
    ] {
        assert_eq!(run(TOOLS, &[tag], End::Stop), vec![exec(call)], "{tag}");
    }
}

#[test]
fn an_unknown_name_prose_or_a_tag_in_code_is_never_run() {
    // The in-process example: no tool of that name.
    for prose in [
        "<||system.count_lines(\"notes.txt\")>",
        "<||count_lines(\"x\")||>",
        "a <file_reader> b",
        "<glob(pattern=\"*\") and more",
        "x <glob",
    ] {
        assert_eq!(run(TOOLS, &[prose], End::Stop), vec![text(prose)], "{prose}");
    }
    // Without tools the scanner reads exec tags only.
    let tag = "<||file_read(path=\"x\")||>";
    assert_eq!(run(&[], &[tag], End::Stop), vec![text(tag)]);
    let quoted = "Use `<||file_read(path=\"x\")||>` like this.";
    let got = run(TOOLS, &[quoted], End::Stop);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], text("Use `<||file_read(path=\"x\")||>"));
    assert!(
        matches!(&got[1], Piece::Notice(n) if n.contains("inside code")),
        "{got:?}"
    );
    assert_eq!(got[2], text("` like this."));
}

#[test]
fn exec_tags_in_any_case_split_anywhere_give_one_command() {
    every_split(
        "Ok.\n<||system.exec>wc -l notes.txt<system.exec||>\nDone",
        &[text("Ok.\n"), exec("wc -l notes.txt"), text("\nDone")],
    );
}

#[test]
fn a_whole_file_or_closed_heredoc_left_open_by_the_stop_sequence_runs_and_rambling_does_not() {
    // The stop sequence ate the closing tag of several lines that are whole as written.
    for body in [
        "write calc.py\ndef add(a, b):\n    return a + b\n",
        "cat > calc.py <<'EOF'\ndef add(a, b):\n    return a + b\nEOF\n",
    ] {
        let got = run(TOOLS, &["Here it is.\n<||SYSTEM.EXEC>", body], End::Stop);
        assert_eq!(got, vec![text("Here it is.\n"), exec(body.trim())], "{body:?}");
        // Cut off by the length limit, the same text is never run.
        let got = run(TOOLS, &["<||SYSTEM.EXEC>", body], End::Length);
        assert!(!got.iter().any(|p| matches!(p, Piece::Exec(_))), "{got:?}");
    }
    // A heredoc never ended, or lines after it, stay text with a notice.
    for body in [
        "cat > a.py <<'EOF'\nx = 1\n",
        "cat > a.py <<EOF\nx = 1\nEOF\nThen run it.",
    ] {
        let got = run(TOOLS, &["<||SYSTEM.EXEC>", body], End::Stop);
        assert!(!got.iter().any(|p| matches!(p, Piece::Exec(_))), "{got:?}");
        assert!(
            got.iter()
                .any(|p| matches!(p, Piece::Notice(n) if n.contains("never closed")))
        );
    }
}
