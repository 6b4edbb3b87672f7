//! Options as a program's own parser reads them (getopt and getopt_long): a compact spec
//! of the options one command accepts, and a scan of its words against it that says which
//! words are options (with their values) and which are operands. Long options are matched
//! **exactly**: getopt would also take an unambiguous abbreviation (`--out` for `--output`),
//! but an abbreviation is judged against the program's whole option list, which a spec of
//! the options that are safe does not hold, so any abbreviation is unknown. Knows nothing
//! of what an option does; the tables that use it decide that.

use std::collections::HashMap;

/// The options one command accepts, parsed once from a line of the form
/// `flags=ab arg=cd optarg=u num long=all,human-readable arg-long=block-size opt-long=color stop`:
/// short options without, with and with an optional attached argument, whether `-5` is an
/// option (a count),
/// long options without, with a required, and with an optional (`--color[=WHEN]`)
/// argument, and whether parsing stops at the first operand (`stop`: POSIX, `+` in
/// getopt's string; otherwise options may follow operands, as GNU programs allow).
#[derive(Clone, Debug, Default)]
pub(crate) struct Spec {
    flags: Vec<char>,
    with_arg: Vec<char>,
    /// Short options whose argument is optional and attached (`-uno`, `-M50%`).
    opt_arg: Vec<char>,
    numbers: bool,
    long: Vec<String>,
    long_arg: Vec<String>,
    long_opt: Vec<String>,
    stop: bool,
}

/// One option seen: its name as written (`-o`, `--output`) and its value, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Opt {
    pub name: String,
    pub value: Option<String>,
}

/// What a scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scanned {
    pub options: Vec<Opt>,
    /// Indexes (into the scanned words) of the operands.
    pub operands: Vec<usize>,
}

/// Why a scan failed: the word is not an option of the spec (or lacks its argument).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an option the engine knows for this command")]
pub(crate) struct Unknown(pub String);

impl Spec {
    /// Parses the compact form (see the type). Unknown keys are a programming error in a
    /// table; they are ignored here and caught by the tables' tests.
    pub(crate) fn parse(text: &str) -> Spec {
        let mut s = Spec::default();
        for item in text.split_whitespace() {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let list = || {
                value
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(String::from)
                    .collect::<Vec<_>>()
            };
            match key {
                "flags" => s.flags.extend(value.chars()),
                "arg" => s.with_arg.extend(value.chars()),
                "optarg" => s.opt_arg.extend(value.chars()),
                "num" => s.numbers = true,
                "long" => s.long.extend(list()),
                "arg-long" => s.long_arg.extend(list()),
                "opt-long" => s.long_opt.extend(list()),
                "stop" => s.stop = true,
                _ => {}
            }
        }
        s
    }

    /// Every key of the compact form is known (for the tables' tests).
    #[cfg(test)]
    pub(crate) fn well_formed(text: &str) -> bool {
        text.split_whitespace().all(|item| {
            let key = item.split_once('=').map_or(item, |(k, _)| k);
            matches!(
                key,
                "flags" | "arg" | "optarg" | "num" | "long" | "arg-long" | "opt-long" | "stop"
            )
        })
    }

    /// Scans `words` (the arguments, without the command's name). `dynamic[i]` says word
    /// `i` is decided when the line runs (an expansion, a glob that may start with `-`):
    /// where an option may stand, such a word fails the scan, since it may be any option.
    pub(crate) fn scan(&self, words: &[String], dynamic: &[bool]) -> Result<Scanned, Unknown> {
        let mut out = Scanned::default();
        let mut i = 0;
        let mut only_operands = false;
        while i < words.len() {
            let w = words[i].as_str();
            let is_dynamic = dynamic.get(i).copied().unwrap_or(false);
            if only_operands {
                out.operands.push(i);
                i += 1;
                continue;
            }
            if is_dynamic {
                return Err(Unknown(w.to_string()));
            }
            if w == "--" {
                only_operands = true;
                i += 1;
                continue;
            }
            if let Some(long) = w.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                let opt = |value| Opt {
                    name: format!("--{name}"),
                    value,
                };
                let has = |list: &[String]| list.iter().any(|l| l == name);
                if has(&self.long) && value.is_none() {
                    out.options.push(opt(None));
                } else if has(&self.long_opt) {
                    out.options.push(opt(value));
                } else if has(&self.long_arg) {
                    let value = match value {
                        Some(v) => v,
                        None => {
                            i += 1;
                            words.get(i).cloned().ok_or_else(|| Unknown(w.to_string()))?
                        }
                    };
                    out.options.push(opt(Some(value)));
                } else {
                    return Err(Unknown(w.to_string()));
                }
                i += 1;
                continue;
            }
            if w.len() > 1 && w.starts_with('-') {
                let group = &w[1..];
                if self.numbers && group.chars().all(|c| c.is_ascii_digit()) {
                    out.options.push(Opt {
                        name: "-".into(),
                        value: Some(group.to_string()),
                    });
                    i += 1;
                    continue;
                }
                for (at, c) in group.char_indices() {
                    if self.flags.contains(&c) {
                        out.options.push(Opt {
                            name: format!("-{c}"),
                            value: None,
                        });
                    } else if self.opt_arg.contains(&c) {
                        let rest = &group[at + c.len_utf8()..];
                        out.options.push(Opt {
                            name: format!("-{c}"),
                            value: (!rest.is_empty()).then(|| rest.to_string()),
                        });
                        break;
                    } else if self.with_arg.contains(&c) {
                        let rest = &group[at + c.len_utf8()..];
                        let value = if rest.is_empty() {
                            i += 1;
                            words.get(i).cloned().ok_or_else(|| Unknown(w.to_string()))?
                        } else {
                            rest.to_string()
                        };
                        out.options.push(Opt {
                            name: format!("-{c}"),
                            value: Some(value),
                        });
                        break;
                    } else {
                        return Err(Unknown(format!("-{c}")));
                    }
                }
                i += 1;
                continue;
            }
            // An operand (`-` alone is one: standard input).
            out.operands.push(i);
            if self.stop {
                only_operands = true;
            }
            i += 1;
        }
        Ok(out)
    }
}

/// Specs by command name, parsed once from a table of `(name, compact spec)`.
pub(crate) struct Table(HashMap<&'static str, Spec>);

impl Table {
    pub(crate) fn new<S: AsRef<str>>(rows: &[(&'static str, S)]) -> Table {
        Table(rows.iter().map(|(n, s)| (*n, Spec::parse(s.as_ref()))).collect())
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Spec> {
        self.0.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn scan(spec: &str, line: &str) -> Result<Scanned, Unknown> {
        let w = words(line);
        Spec::parse(spec).scan(&w, &vec![false; w.len()])
    }

    #[test]
    fn short_groups_long_options_and_operands_are_told_apart() {
        let spec = "flags=rn arg=ko num long=reverse arg-long=key,output opt-long=color";
        let s = scan(spec, "-rn -k2,2 file --reverse --color --color=never -5").unwrap();
        assert_eq!(s.operands, [2]);
        let names: Vec<&str> = s.options.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["-r", "-n", "-k", "--reverse", "--color", "--color", "-"]);
        assert_eq!(s.options[2].value.as_deref(), Some("2,2"));
        // `-uo out`: the `o` takes the next word; `-ofile` takes the rest of the group.
        let s = scan(spec, "-ro out a").unwrap();
        assert_eq!(s.options[1].value.as_deref(), Some("out"));
        assert_eq!(s.operands, [2]);
        let s = scan(spec, "-rofile").unwrap();
        assert_eq!(s.options[1].value.as_deref(), Some("file"));
        // After `--` everything is an operand.
        assert_eq!(scan(spec, "-- -rf").unwrap().operands, [1]);
    }

    #[test]
    fn unknown_options_and_abbreviations_fail() {
        let spec = "flags=r arg-long=output long=reverse";
        for bad in [
            "-x",
            "-rx",
            "--out=x",
            "--rev",
            "--reverse=1",
            "--output",
            "--compress-program=sh",
        ] {
            assert!(scan(spec, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stop_ends_options_at_the_first_operand_and_dynamic_words_fail_where_options_stand() {
        let s = scan("flags=i stop", "-i cmd -x").unwrap();
        assert_eq!(s.operands, [1, 2]);
        let w = words("-i $X");
        assert!(Spec::parse("flags=i").scan(&w, &[false, true]).is_err());
        let w = words("a $X");
        assert!(Spec::parse("flags=i stop").scan(&w, &[false, true]).is_ok());
    }
}
