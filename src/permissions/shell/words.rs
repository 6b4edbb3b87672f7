//! One shell word as the engine can prove it: a *literal* (plain text, single-quoted,
//! double-quoted without expansions, backslash escapes: its value is known), a *glob*
//! (`*.rs`: file names decided when it runs) or *dynamic* (an expansion, a substitution,
//! brace expansion, `$'…'`, `$"…"`, `~user`: decided when it runs). Command substitutions
//! inside a word are walked as commands of their own; expansions that run code by
//! themselves (a subscript, an offset or arithmetic over a variable, `${!x}`, `${x@P}`,
//! a bash ≥ 5.3 `${ cmd; }`) make the line opaque. Never expands anything.

use brush_parser::word::{
    self, Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource,
};

use super::analysis::{Analysis, Word, WordKind};
use super::walk;

/// Characters after which a word needs a real parse (anything else is literal as is).
fn plain(raw: &str) -> bool {
    !raw.is_empty()
        && raw.bytes().all(|b| {
            !matches!(
                b,
                b'$' | b'`'
                    | b'\\'
                    | b'\''
                    | b'"'
                    | b'*'
                    | b'?'
                    | b'['
                    | b'{'
                    | b'}'
                    | b'~'
                    | b'('
                    | b')'
                    | b'!'
                    | b'@'
                    | b'+'
                    | b'\n'
            )
        })
}

/// Takes `raw` (a word as the parser tokenised it) apart; walks its substitutions.
pub(super) fn classify(raw: &str, a: &mut Analysis, depth: usize) -> Word {
    if plain(raw) {
        return Word::literal(raw);
    }
    let pieces = match word::parse(raw, &super::analysis::options()) {
        Ok(p) => p,
        Err(_) => {
            a.set_opaque(format!("the word `{raw}` has a form the engine does not know"));
            return dynamic(raw, true);
        }
    };
    let mut w = Pieces::default();
    w.walk(&pieces, false, a, depth);
    if w.unknown_dollar {
        a.set_opaque(format!("`{raw}` holds a `$` form the engine does not know"));
        return dynamic(raw, true);
    }
    let kind = if w.dynamic {
        WordKind::Dynamic
    } else if w.glob {
        WordKind::Glob
    } else {
        WordKind::Literal
    };
    if kind == WordKind::Literal && w.brace {
        return dynamic(raw, true);
    }
    Word {
        text: if kind == WordKind::Literal {
            w.text
        } else {
            raw.to_string()
        },
        kind,
        may_be_option: kind != WordKind::Literal && (w.unquoted_expansion || w.starts_dynamic || w.brace),
    }
}

fn dynamic(raw: &str, may_be_option: bool) -> Word {
    Word {
        text: raw.to_string(),
        kind: WordKind::Dynamic,
        may_be_option,
    }
}

#[derive(Default)]
struct Pieces {
    text: String,
    dynamic: bool,
    glob: bool,
    brace: bool,
    unquoted_expansion: bool,
    /// The first piece is not literal text.
    starts_dynamic: bool,
    /// Unquoted `{` seen, waiting for `,` / `..` and `}`.
    open_brace: Option<usize>,
    /// The text so far ends in a `$` the parser left as text.
    dollar: bool,
    /// A `$` form the parser did not take apart (`$[…]`, `${ cmd; }`).
    unknown_dollar: bool,
}

impl Pieces {
    fn non_literal(&mut self, quoted: bool) {
        if self.text.is_empty() && !self.dynamic && !self.glob {
            self.starts_dynamic = true;
        }
        self.dynamic = true;
        if !quoted {
            self.unquoted_expansion = true;
        }
    }

    /// A `$` left as text by the parser is literal only at the end of the word or before
    /// a character that starts no expansion; anything else is a form it did not read
    /// (`$[…]` arithmetic, bash 5.3's `${ cmd; }`).
    fn dollars(&mut self, t: &str) {
        for c in t.chars() {
            if self.dollar && (c.is_ascii_alphanumeric() || "{([_'\"@*#?$!-".contains(c)) {
                self.unknown_dollar = true;
            }
            self.dollar = c == '$';
        }
    }

    fn walk(&mut self, pieces: &[WordPieceWithSource], quoted: bool, a: &mut Analysis, depth: usize) {
        for p in pieces {
            if self.dollar && !matches!(p.piece, WordPiece::Text(_)) {
                self.unknown_dollar = true;
            }
            match &p.piece {
                WordPiece::Text(t) => {
                    if !quoted {
                        self.unquoted_text(t);
                    }
                    self.dollars(t);
                    self.text.push_str(t);
                    continue;
                }
                WordPiece::SingleQuotedText(t) => self.text.push_str(t),
                WordPiece::EscapeSequence(e) => {
                    // `\x` is `x`; a backslash-newline is nothing. Inside double quotes a
                    // backslash stays before any character but `$`, `` ` ``, `"`, `\`.
                    let c = e.strip_prefix('\\').unwrap_or(e);
                    if c == "\n" {
                        continue;
                    }
                    if quoted && !matches!(c, "$" | "`" | "\"" | "\\") {
                        self.text.push('\\');
                    }
                    self.text.push_str(c);
                }
                WordPiece::DoubleQuotedSequence(inner) => self.walk(inner, true, a, depth),
                WordPiece::AnsiCQuotedText(_) | WordPiece::GettextDoubleQuotedSequence(_) => {
                    // Decoded (or translated) when it runs: not a text the rules can read.
                    if let WordPiece::GettextDoubleQuotedSequence(inner) = &p.piece {
                        let mut scratch = Pieces::default();
                        scratch.walk(inner, true, a, depth);
                    }
                    self.non_literal(true);
                }
                WordPiece::TildeExpansion(t) => match t {
                    word::TildeExpr::Home => self.text.push('~'),
                    _ => self.non_literal(quoted),
                },
                WordPiece::ParameterExpansion(expr) => {
                    parameter(expr, a, depth);
                    self.non_literal(quoted);
                }
                WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                    walk::source(s, a, depth + 1);
                    self.non_literal(quoted);
                }
                WordPiece::ArithmeticExpression(e) => {
                    arithmetic(&e.value, a, depth);
                    self.non_literal(quoted);
                }
            }
            self.dollar = false;
        }
    }

    /// Unquoted text: glob characters and brace expansion.
    fn unquoted_text(&mut self, t: &str) {
        let base = self.text.len();
        for (i, c) in t.char_indices() {
            match c {
                // `[` globs only with a `]` after it (`[ -d x ]` is the command `[`).
                '[' if !t[i..].contains(']') => {}
                '*' | '?' | '[' => {
                    if self.text.is_empty() && i == 0 && !self.dynamic && !self.glob {
                        self.starts_dynamic = true;
                    }
                    self.glob = true;
                }
                // Extended globs (`@(a|b)`, `!(x)`): shown as globs.
                '(' | ')' => self.glob = true,
                '{' => self.open_brace = Some(base + i),
                ',' if self.open_brace.is_some() => self.brace = self.brace || t[i..].contains('}'),
                '.' if self.open_brace.is_some() && t[i..].starts_with("..") => {
                    self.brace = self.brace || t[i..].contains('}')
                }
                _ => {}
            }
        }
    }
}

/// A parameter expansion that runs code by itself makes the line opaque: an indirect
/// name (`${!x}` expands `x`'s value as a name, subscript included), an array subscript
/// or offset that is not a plain number (arithmetic evaluates a variable's value as an
/// expression, and `a[$(cmd)]` in it runs `cmd`), `${x@P}` (prompt expansion runs `$(…)`
/// in the value). Words inside it (defaults, patterns) are words too.
fn parameter(expr: &ParameterExpr, a: &mut Analysis, depth: usize) {
    use ParameterExpr as P;
    let (param, indirect, inner): (Option<&Parameter>, bool, Vec<&str>) = match expr {
        P::Parameter { parameter, indirect } | P::ParameterLength { parameter, indirect } => {
            (Some(parameter), *indirect, vec![])
        }
        P::UseDefaultValues {
            parameter,
            indirect,
            default_value: v,
            ..
        }
        | P::AssignDefaultValues {
            parameter,
            indirect,
            default_value: v,
            ..
        }
        | P::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            error_message: v,
            ..
        }
        | P::UseAlternativeValue {
            parameter,
            indirect,
            alternative_value: v,
            ..
        }
        | P::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | P::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | P::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | P::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | P::UppercaseFirstChar {
            parameter,
            indirect,
            pattern: v,
        }
        | P::UppercasePattern {
            parameter,
            indirect,
            pattern: v,
        }
        | P::LowercaseFirstChar {
            parameter,
            indirect,
            pattern: v,
        }
        | P::LowercasePattern {
            parameter,
            indirect,
            pattern: v,
        } => (Some(parameter), *indirect, v.iter().map(String::as_str).collect()),
        P::Substring {
            parameter,
            indirect,
            offset,
            length,
        } => {
            for e in std::iter::once(offset).chain(length.iter()) {
                arithmetic(&e.value, a, depth);
            }
            (Some(parameter), *indirect, vec![])
        }
        P::Transform {
            parameter,
            indirect,
            op,
        } => {
            if matches!(op, ParameterTransformOp::PromptExpand) {
                a.set_opaque("`${…@P}` expands a value as a prompt, which runs the commands in it");
            }
            (Some(parameter), *indirect, vec![])
        }
        P::ReplaceSubstring {
            parameter,
            indirect,
            pattern,
            replacement,
            ..
        } => {
            let mut v = vec![pattern.as_str()];
            v.extend(replacement.as_deref());
            (Some(parameter), *indirect, v)
        }
        P::VariableNames { .. } | P::MemberKeys { .. } => (None, false, vec![]),
    };
    if indirect {
        a.set_opaque("`${!…}` expands a name held in a variable (a subscript in it runs commands)");
    }
    let name = match param {
        Some(Parameter::Named(n)) | Some(Parameter::NamedWithIndex { name: n, .. }) => Some(n.as_str()),
        Some(Parameter::NamedWithAllIndices { name: n, .. }) => Some(n.as_str()),
        _ => None,
    };
    if let Some(n) = name.filter(|n| !super::assign::is_identifier(n)) {
        // bash 5.3's `${ cmd; }` and `${| cmd; }` run commands; any other form too.
        a.set_opaque(format!(
            "`${{{n}}}` is a form of expansion the engine does not know"
        ));
    }
    if let Some(Parameter::NamedWithIndex { index, .. }) = param
        && !index.trim().chars().all(|c| c.is_ascii_digit())
    {
        a.set_opaque(format!(
            "the subscript `[{index}]` is evaluated when it runs (arithmetic can run commands)"
        ));
    }
    for w in inner {
        classify(w, a, depth);
    }
}

/// Arithmetic with anything but numbers and operators (a name's value is evaluated as an
/// expression in turn, and `a[$(cmd)]` in it runs `cmd`) makes the line opaque.
pub(super) fn arithmetic(expr: &str, a: &mut Analysis, _depth: usize) {
    let numbers_only = expr
        .chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%()<>=!&|^~?:,".contains(c));
    if !numbers_only {
        a.set_opaque(format!(
            "the arithmetic `{}` reads names or runs substitutions when it runs",
            expr.trim()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(raw: &str) -> (Word, Analysis) {
        let mut a = Analysis::default();
        let w = classify(raw, &mut a, 0);
        (w, a)
    }

    #[test]
    fn literal_words_are_unquoted_as_the_shell_reads_them() {
        for (raw, text) in [
            ("rm", "rm"),
            ("'rm'", "rm"),
            ("\"rm\"", "rm"),
            ("r\\m", "rm"),
            ("\\rm", "rm"),
            ("'r'\"m\"", "rm"),
            ("\"a\\$b\\q\"", "a$b\\q"),
            ("'sh -c \"x\"'", "sh -c \"x\""),
            ("~/bin/x", "~/bin/x"),
            ("{}", "{}"),
            ("a,b", "a,b"),
        ] {
            let (word, a) = w(raw);
            assert_eq!(word, Word::literal(text), "{raw}");
            assert!(a.opaque.is_none(), "{raw}");
        }
    }

    #[test]
    fn globs_expansions_and_braces_are_not_literal() {
        for (raw, kind, may_be_option) in [
            ("*.rs", WordKind::Glob, true),
            ("src/*.rs", WordKind::Glob, false),
            ("/bin/r?", WordKind::Glob, false),
            ("$X", WordKind::Dynamic, true),
            ("\"$X\"", WordKind::Dynamic, true),
            ("a\"$X\"", WordKind::Dynamic, false),
            ("a$X", WordKind::Dynamic, true),
            ("{rm,-rf,x}", WordKind::Dynamic, true),
            ("x{1..3}", WordKind::Dynamic, true),
            ("$'\\x72m'", WordKind::Dynamic, true),
            ("$\"rm\"", WordKind::Dynamic, true),
            ("${X:-rm}", WordKind::Dynamic, true),
            ("~root/x", WordKind::Dynamic, true),
            ("$(echo rm)", WordKind::Dynamic, true),
        ] {
            let (word, _) = w(raw);
            assert_eq!((word.kind, word.may_be_option), (kind, may_be_option), "{raw}");
        }
    }

    #[test]
    fn expansions_that_run_code_make_the_line_opaque() {
        for raw in [
            "${!x}",
            "${x@P}",
            "${a[i]}",
            "${a[$x]}",
            "${s:x}",
            "${s:0:$n}",
            "$((x))",
            "$((a[$(id)]))",
            "${x:-$((y))}",
            "${ rm x; }",
            "${| rm x; }",
            "$[a[$(id)]]",
            "$[x]",
        ] {
            assert!(w(raw).1.opaque.is_some(), "{raw}");
        }
        for raw in [
            "${a[1]}", "${a[@]}", "${#x}", "${s:1:2}", "$((1+2))", "${x%.rs}", "${!a[@]}", "cost: $",
            "$[1+2]", "'$[x]'", "\\$[x]",
        ] {
            assert!(w(raw).1.opaque.is_none(), "{raw}");
        }
    }

    #[test]
    fn substitutions_inside_words_are_commands() {
        let (_, a) = w("\"a $(rm -rf x) b\"");
        assert_eq!(a.parts[0].text, "rm -rf x");
        let (_, a) = w("${x:-`rm y`}");
        assert_eq!(a.parts[0].text, "rm y");
    }
}
