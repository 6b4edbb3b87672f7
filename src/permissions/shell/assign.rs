//! Variable assignments (`X=1 cmd`, `x=1`, `export X=1`, `declare -a a=(…)`, `read x`,
//! `for x in …`): which names the engine lets through. A variable can be a program's
//! code (`PROMPT_COMMAND`, `BASH_ENV`, `GIT_CONFIG_*`, `LD_PRELOAD`, `PAGER`, `PYTHONSTARTUP`
//! …) or change which program a name runs (`PATH`); the list of such names has no end, so
//! the list is of names that are safe: names with a lower-case letter (shell variables by
//! convention; no program reads one as code) and a short positive list of environment
//! variables that only tune output, locale and logging. Any other name makes the line
//! opaque. Subscripts and compound values are checked as arithmetic and words.

use brush_parser::ast;

use super::analysis::Analysis;
use super::words;

/// Upper-case environment variables that only tune output, locale or logging.
const INERT: [&str; 30] = [
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLORTERM",
    "CI",
    "DEBUG",
    "VERBOSE",
    "QUIET",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "CARGO_TARGET_DIR",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "TIMEFORMAT",
];

/// Whether `name` is a plain variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub(super) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether setting `name` can change what a program runs.
pub(super) fn is_safe_name(name: &str) -> bool {
    is_identifier(name)
        && (name.chars().any(|c| c.is_ascii_lowercase()) || INERT.contains(&name) || name.starts_with("LC_"))
}

/// Checks a name a builtin assigns (`read NAME`, `printf -v NAME`, `getopts … NAME`,
/// `unset NAME`): a plain identifier (`a[$(cmd)]` as a name runs `cmd`) that is safe.
pub(super) fn name(name: &str, a: &mut Analysis) {
    let base = match name.split_once('[') {
        Some((base, rest)) => {
            let index = rest.strip_suffix(']').unwrap_or(rest);
            if index.is_empty() || !index.chars().all(|c| c.is_ascii_digit()) {
                a.set_opaque(format!(
                    "`{name}` names an array element whose subscript is evaluated when it runs"
                ));
            }
            base
        }
        None => name,
    };
    if !is_identifier(base) {
        a.set_opaque(format!("`{name}` is not a plain variable name"));
    } else if !is_safe_name(base) {
        a.set_opaque(format!(
            "it sets `{base}`, which a program or the shell may run or read as a command"
        ));
    }
}

/// Checks one assignment word (prefix, standalone or a declaration's operand); walks
/// the substitutions in its value. `declaration` is true for `declare`/`local`/…
/// operands, where a value that starts with `(` is evaluated as a compound assignment.
pub(super) fn assignment(asg: &ast::Assignment, a: &mut Analysis, depth: usize, declaration: bool) {
    match &asg.name {
        ast::AssignmentName::VariableName(n) => name(n, a),
        ast::AssignmentName::ArrayElementName(n, index) => name(&format!("{n}[{index}]"), a),
    }
    match &asg.value {
        ast::AssignmentValue::Scalar(w) => {
            let value = words::classify(&w.value, a, depth);
            if declaration && value.text.trim_start().starts_with('(') {
                a.set_opaque(format!(
                    "`{}` is evaluated as a compound assignment, which can run commands",
                    w.value
                ));
            }
        }
        ast::AssignmentValue::Array(elements) => {
            for (key, value) in elements {
                if let Some(k) = key
                    && !k.value.trim().chars().all(|c| c.is_ascii_digit())
                {
                    a.set_opaque(format!("the subscript `[{}]` is evaluated when it runs", k.value));
                }
                words::classify(&value.value, a, depth);
            }
        }
    }
}

/// A `declare`-style operand given as a plain word (`'x=(…)'` quoted, `x`): its name is
/// checked, and a value that starts with `(` is a compound assignment the builtin
/// evaluates (`declare -a 'x=([0]=$(cmd))'` runs `cmd`).
pub(super) fn declaration_word(text: &str, a: &mut Analysis) {
    let (n, value) = match text.split_once('=') {
        Some((n, v)) => (n.strip_suffix('+').unwrap_or(n), Some(v)),
        None => (text, None),
    };
    name(n, a);
    if value.is_some_and(|v| v.trim_start().starts_with('(')) {
        a.set_opaque(format!(
            "`{text}` is evaluated as a compound assignment, which can run commands"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_a_lower_case_letter_and_inert_ones_are_safe() {
        for ok in ["x", "myVar", "_tmp", "LANG", "LC_ALL", "RUST_LOG", "f1"] {
            assert!(is_safe_name(ok), "{ok}");
        }
        for bad in [
            "PATH",
            "PROMPT_COMMAND",
            "BASH_ENV",
            "ENV",
            "PS4",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "LD_PRELOAD",
            "PAGER",
            "IFS",
            "HOME",
            "SHELLOPTS",
            "BASHOPTS",
            "PYTHONSTARTUP",
            "NODE_OPTIONS",
            "1x",
            "a-b",
        ] {
            assert!(!is_safe_name(bad), "{bad}");
        }
    }

    #[test]
    fn names_with_a_subscript_are_opaque_unless_it_is_a_number() {
        let mut a = Analysis::default();
        name("a[1]", &mut a);
        assert!(a.opaque.is_none());
        for bad in ["a[$(id)]", "a[i]", "a[]", "PATH"] {
            let mut a = Analysis::default();
            name(bad, &mut a);
            assert!(a.opaque.is_some(), "{bad}");
        }
    }
}
