//! Tab completion of the input: slash command names (built-in and custom), provider names
//! after `/model `, file paths relative to the working directory, and `@` mentions: fuzzy
//! over the project's files, ignored ones (`.gitignore`) left out. Reads directories;
//! never changes anything.

use std::path::Path;

use super::commands;

/// What Tab does: replace `range` (bytes of the input) with `insert`; `candidates` lists
/// the choices when there is more than one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    pub range: std::ops::Range<usize>,
    pub insert: String,
    pub candidates: Vec<String>,
}

/// Completes the word before `cursor` in `text`: a command name, a session id after
/// `/resume ` (from `sessions`: id and title, newest first), else a path.
pub(crate) fn complete(
    text: &str,
    cursor: usize,
    cwd: &Path,
    sessions: &[(String, Option<String>)],
    custom: &crate::ui::custom_commands::CustomCommands,
) -> Option<Completion> {
    let before = &text[..cursor];
    let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word = &before[start..];
    if before
        .trim_start()
        .strip_prefix("/resume")
        .is_some_and(|rest| rest.starts_with(char::is_whitespace) && rest.split_whitespace().count() <= 1)
        && !before.ends_with("/resume")
    {
        return session_ids(start..cursor, word, sessions);
    }
    if start == 0 && word.starts_with('/') && !word.starts_with("//") {
        let mut names: Vec<String> = commands::complete(word).iter().map(|s| s.to_string()).collect();
        names.extend(
            custom
                .iter()
                .map(|c| c.name.clone())
                .filter(|n| n.starts_with(word)),
        );
        return finish(start..cursor, word, names, " ");
    }
    if let Some(query) = word.strip_prefix('@') {
        return mention(start + 1..cursor, query, cwd);
    }
    let lead = start;
    let (dir, prefix) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let base = if dir.is_empty() {
        cwd.to_path_buf()
    } else {
        cwd.join(dir)
    };
    let mut names: Vec<String> = std::fs::read_dir(&base)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            Some(format!("{dir}{name}{}", if is_dir { "/" } else { "" }))
        })
        .collect();
    names.sort();
    finish(lead..cursor, word, names, "")
}

/// Most paths an `@` completion looks through (a huge tree is cut, not walked whole).
const MENTION_WALK: usize = 20_000;
/// Most candidates shown for an ambiguous `@` completion.
const MENTION_SHOWN: usize = 8;

/// `@query<Tab>`: the project's files and folders (not ignored ones, never `.git`) that
/// match `query` fuzzily, best first. Candidates that all start with `query` complete to
/// their common prefix; one candidate is inserted whole.
fn mention(range: std::ops::Range<usize>, query: &str, cwd: &Path) -> Option<Completion> {
    use nucleo_matcher::pattern::{AtomKind, CaseMatching, Normalization, Pattern};
    let paths = project_paths(cwd);
    let mut prefixed: Vec<String> = paths
        .iter()
        .filter(|p| p.starts_with(query) && !p[query.len()..].trim_end_matches('/').contains('/'))
        .cloned()
        .collect();
    if !prefixed.is_empty() {
        prefixed.sort();
        return finish(range, query, prefixed, " ");
    }
    let mut matcher = nucleo_matcher::Matcher::new(nucleo_matcher::Config::DEFAULT.match_paths());
    let pattern = Pattern::new(query, CaseMatching::Smart, Normalization::Smart, AtomKind::Fuzzy);
    let ranked: Vec<String> = pattern
        .match_list(paths, &mut matcher)
        .into_iter()
        .take(MENTION_SHOWN)
        .map(|(p, _)| p)
        .collect();
    match ranked.len() {
        0 => None,
        1 => finish(range, query, ranked, " "),
        _ => Some(Completion {
            range,
            insert: query.to_string(),
            candidates: ranked,
        }),
    }
}

/// Paths under `cwd` as `a/b.rs` and `a/` (folders), ignored files and `.git` left out.
fn project_paths(cwd: &Path) -> Vec<String> {
    let mut b = crate::tools::walk::builder(cwd);
    b.filter_entry(|e| !crate::tools::walk::is_git_dir(e));
    b.build()
        .filter_map(Result::ok)
        .filter(|e| e.depth() > 0)
        .take(MENTION_WALK)
        .filter_map(|e| {
            let rel = e.path().strip_prefix(cwd).ok()?.to_str()?.to_string();
            let dir = e.file_type().is_some_and(|t| t.is_dir());
            Some(if dir { format!("{rel}/") } else { rel })
        })
        .collect()
}

/// Session ids starting with `word`: the one match as 8 characters (what `/resume` needs:
/// ids are random), else the candidates with their titles and their common prefix.
fn session_ids(
    range: std::ops::Range<usize>,
    word: &str,
    sessions: &[(String, Option<String>)],
) -> Option<Completion> {
    let matches: Vec<&(String, Option<String>)> =
        sessions.iter().filter(|(id, _)| id.starts_with(word)).collect();
    match matches.as_slice() {
        [] => None,
        [(id, _)] => Some(Completion {
            range,
            insert: id.chars().take(8.max(word.chars().count())).collect(),
            candidates: Vec::new(),
        }),
        many => {
            let ids: Vec<String> = many.iter().map(|(id, _)| id.clone()).collect();
            let common = common_prefix(&ids);
            let insert = if common.len() > word.len() {
                common
            } else {
                word.to_string()
            };
            let shown = insert.chars().count().max(8);
            let candidates = many
                .iter()
                .map(|(id, title)| {
                    let short: String = id.chars().take(shown).collect();
                    match title {
                        Some(t) => format!("{short} {}", super::wrap::truncate(t, 30)),
                        None => short,
                    }
                })
                .collect();
            Some(Completion {
                range,
                insert,
                candidates,
            })
        }
    }
}

/// `/model NAME<Tab>`: the provider names starting with NAME, completed with the `/` that
/// starts the model name; `None` when the input is something else.
pub(crate) fn model_provider(text: &str, cursor: usize, providers: &[String]) -> Option<Completion> {
    let before = &text[..cursor];
    let rest = before.trim_start().strip_prefix("/model")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let word = rest.trim_start();
    if word.contains(char::is_whitespace) || word.contains('/') {
        return None;
    }
    let names = providers
        .iter()
        .filter(|n| n.starts_with(word))
        .map(|n| format!("{n}/"))
        .collect();
    finish(cursor - word.len()..cursor, word, names, "")
}

fn finish(
    range: std::ops::Range<usize>,
    word: &str,
    names: Vec<String>,
    single_suffix: &str,
) -> Option<Completion> {
    match names.len() {
        0 => None,
        1 => {
            let mut insert = names[0].clone();
            if !insert.ends_with('/') {
                insert.push_str(single_suffix);
            }
            Some(Completion {
                range,
                insert,
                candidates: Vec::new(),
            })
        }
        _ => {
            let common = common_prefix(&names);
            let insert = if common.len() > word.len() {
                common
            } else {
                word.to_string()
            };
            Some(Completion {
                range,
                insert,
                candidates: names,
            })
        }
    }
}

fn common_prefix(names: &[String]) -> String {
    let first = &names[0];
    let mut end = first.len();
    for n in &names[1..] {
        end = first
            .char_indices()
            .zip(n.chars())
            .find(|((_, a), b)| a != b)
            .map_or(end.min(n.len()), |((i, _), _)| i.min(end));
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> crate::ui::custom_commands::CustomCommands {
        Default::default()
    }

    #[test]
    fn completes_provider_names_after_model() {
        let names = [
            "openai".to_string(),
            "openai-responses".into(),
            "anthropic".into(),
        ];
        let c = model_provider("/model an", 9, &names).unwrap();
        assert_eq!((c.range, c.insert.as_str()), (7..9, "anthropic/"));
        let c = model_provider("/model op", 9, &names).unwrap();
        assert_eq!(c.insert, "openai");
        assert_eq!(c.candidates, ["openai/", "openai-responses/"]);
        assert!(model_provider("/model anthropic/cl", 19, &names).is_none());
        assert!(model_provider("/modelx", 7, &names).is_none());
        assert!(model_provider("/model zz", 9, &names).is_none());
    }

    #[test]
    fn completes_commands() {
        let c = complete("/he", 3, Path::new("."), &[], &none()).unwrap();
        assert_eq!((c.range, c.insert.as_str()), (0..3, "/help "));
        let c = complete("/to", 3, Path::new("."), &[], &none()).unwrap();
        assert_eq!(c.insert, "/tool");
        assert_eq!(c.candidates, ["/tools", "/tool"]);
        assert!(complete("/zz", 3, Path::new("."), &[], &none()).is_none());
    }

    #[test]
    fn completes_session_ids_after_resume() {
        let s = |id: &str, t: Option<&str>| (id.to_string(), t.map(str::to_string));
        let sessions = [
            s("3f9a2c11-0000-4000-8000-000000000001", Some("fix the parser")),
            s("3f9a2c99-0000-4000-8000-000000000002", None),
            s("a1b2c3d4-0000-4000-8000-000000000003", Some("docs")),
        ];
        let dir = Path::new(".");
        let text = "/resume a";
        let c = complete(text, text.len(), dir, &sessions, &none()).unwrap();
        assert_eq!((c.range, c.insert.as_str()), (8..9, "a1b2c3d4"));
        let text = "/resume 3";
        let c = complete(text, text.len(), dir, &sessions, &none()).unwrap();
        assert_eq!(c.insert, "3f9a2c");
        assert_eq!(c.candidates, ["3f9a2c11 fix the parser", "3f9a2c99"]);
        let text = "/resume ";
        let c = complete(text, text.len(), dir, &sessions, &none()).unwrap();
        assert_eq!(c.candidates.len(), 3);
        assert!(complete("/resume z", 9, dir, &sessions, &none()).is_none());
        // Not after the id, and not for other commands.
        assert!(complete("/resume a1 x", 12, dir, &sessions, &none()).is_none());
        let c = complete("/resume", 7, dir, &sessions, &none()).unwrap();
        assert_eq!(c.insert, "/resume ");
    }

    #[test]
    fn completes_paths_relative_to_cwd() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/mod.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        let text = "look at sr";
        let c = complete(text, text.len(), dir.path(), &[], &none()).unwrap();
        assert_eq!((c.range, c.insert.as_str()), (8..10, "src/"));
        let text = "read @src/m";
        let c = complete(text, text.len(), dir.path(), &[], &none()).unwrap();
        assert_eq!(c.range, 6..11);
        assert_eq!(c.insert, "src/m");
        assert_eq!(c.candidates, ["src/main.rs", "src/mod.rs"]);
        let text = "src/ma";
        let c = complete(text, text.len(), dir.path(), &[], &none()).unwrap();
        assert_eq!(c.insert, "src/main.rs");
        assert!(complete("nothing-here", 12, dir.path(), &[], &none()).is_none());
        assert!(
            complete("x ", 2, dir.path(), &[], &none())
                .unwrap()
                .candidates
                .len()
                == 2,
            "hidden files skipped"
        );
    }

    #[test]
    fn mentions_complete_fuzzily_without_ignored_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
        std::fs::create_dir_all(dir.path().join("build")).unwrap();
        std::fs::write(dir.path().join("tests/unit/test_calc.py"), "").unwrap();
        std::fs::write(dir.path().join("build/test_calc.py"), "").unwrap();
        std::fs::write(dir.path().join("calendar.md"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        let text = "look at @tcalc";
        let c = complete(text, text.len(), dir.path(), &[], &none()).unwrap();
        assert_eq!((c.range, c.insert.as_str()), (9..14, "tests/unit/test_calc.py "));
        let text = "@cal";
        let c = complete(text, text.len(), dir.path(), &[], &none()).unwrap();
        assert_eq!(c.insert, "calendar.md ");
        let text = "@calc";
        let c = complete(text, text.len(), dir.path(), &[], &none()).unwrap();
        assert_eq!(c.insert, "tests/unit/test_calc.py ", "build/ is ignored: {c:?}");
        assert!(complete("@zzzq", 5, dir.path(), &[], &none()).is_none());
    }

    #[test]
    fn custom_commands_complete_after_builtins() {
        let home = tempfile::tempdir().unwrap();
        let user = home.path().join("cmds");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(user.join("review.md"), "Review.").unwrap();
        std::fs::write(user.join("resume-notes.md"), "Notes.").unwrap();
        let (custom, _) =
            crate::ui::custom_commands::CustomCommands::load_from(Some(&user), home.path(), false);
        let c = complete("/rev", 4, Path::new("."), &[], &custom).unwrap();
        assert_eq!(c.insert, "/review ");
        let c = complete("/res", 4, Path::new("."), &[], &custom).unwrap();
        assert_eq!(c.candidates, ["/resume", "/resume-notes"]);
    }
}
