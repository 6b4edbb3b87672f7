//! The built-in read-only list: tools and `bash` commands that `ask` and `read-only`
//! modes run without asking. An allowlist of commands **and their options**: each
//! command names the options it accepts (table.rs, find.rs, git.rs), a long option
//! counts only when written in full (an abbreviation is judged against the program's
//! whole option list, which the table does not hold, so it is not read-only), and any
//! option not on the command's list — or a word decided at run time where an option may
//! stand — makes the command not read-only. The README lists the same commands; keep
//! them in step.

mod find;
mod git;
mod table;

use std::sync::LazyLock;

use super::getopt::{Spec, Table};
use super::shell::analysis::{Part, Word};

static COMMANDS: LazyLock<Table> = LazyLock::new(|| Table::new(&table::COMMANDS));

/// Whether a built-in tool only reads, as it declares (`ToolMeta::reads_only`: `file_read`,
/// `glob`, `grep`, `list_dir`, and `update_plan`, which changes nothing: it shows the
/// model's plan). Any other tool is not on the list.
pub fn is_read_only_tool(name: &str) -> bool {
    crate::tool_vocab::meta::of(name).is_some_and(crate::tool_vocab::ToolMeta::reads_only)
}

/// Whether one simple command only reads. For `git`, also ask whether the repository
/// runs programs of its own (git_repo.rs).
pub fn is_read_only_part(part: &Part) -> bool {
    if part.assigns {
        // `GIT_EXTERNAL_DIFF=… git diff`, `PAGER=… git log`: the variable decides.
        return false;
    }
    let Some(first) = part.words.first() else {
        return false;
    };
    // A path to a program is not the program of that name (`./ls` could be anything).
    if !first.is_literal() || first.text.contains('/') {
        return false;
    }
    options_listed(&first.text, &part.words[1..])
}

/// Whether `name` is on the read-only list and every option in `args` is on its list.
pub(crate) fn options_listed(name: &str, args: &[Word]) -> bool {
    match name {
        "find" => find::read_only(args),
        "git" => git::read_only(args),
        _ if table::ANY_WORDS.contains(&name) => true,
        // `printf -v NAME` assigns a variable (`PATH`, or a subscript that runs `$(…)`).
        "printf" => scan(&Spec::parse("stop"), args).is_some(),
        // `test -v NAME[…]` evaluates a subscript.
        "test" | "[" => args.iter().all(|w| w.text != "-v" && !w.may_be_option),
        "sed" => {
            args.iter().all(|w| !w.text.starts_with("--in-place"))
                && !args
                    .iter()
                    .any(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('i'))
                && super::shell::sed::is_plain(args)
        }
        "date" => {
            let spec = Spec::parse(
                "flags=uRI arg=dfr long=utc,universal,rfc-email,debug,help,version arg-long=date,file,reference,rfc-3339 opt-long=iso-8601",
            );
            // An operand other than `+FORMAT` sets the clock.
            scan(&spec, args).is_some_and(|ops| ops.iter().all(|&i| args[i].text.starts_with('+')))
        }
        _ => {
            let Some(spec) = COMMANDS.get(name) else {
                return false;
            };
            let Some(operands) = scan(spec, args) else {
                return false;
            };
            table::max_operands(name).is_none_or(|max| operands.len() <= max)
        }
    }
}

/// The operands' indexes when every option is on `spec`.
fn scan(spec: &Spec, args: &[Word]) -> Option<Vec<usize>> {
    let texts: Vec<String> = args.iter().map(|w| w.text.clone()).collect();
    let dynamic: Vec<bool> = args.iter().map(|w| w.may_be_option).collect();
    spec.scan(&texts, &dynamic).ok().map(|s| s.operands)
}

/// The commands on the list, for the README check.
#[cfg(test)]
pub(crate) fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = table::COMMANDS.iter().map(|(n, _)| *n).collect();
    v.extend(table::ANY_WORDS);
    v.extend(["find", "git", "printf", "test", "[", "sed", "date"]);
    v
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
