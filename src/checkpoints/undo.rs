//! Undoing checkpoints: which files go back to what, which of them somebody else changed
//! since ikigai's turn left them (refused unless forced), putting them back from the
//! content store, and one summary line per file. Touches only the files the checkpoints
//! name, each at exactly its recorded path: the project folder is opened once and every
//! file in it reached from there, folder by folder, never through a link (a folder that
//! became a link since is refused, "not restored"; a file that became a link is
//! replaced or removed as the link it is) — so nothing outside the project is touched
//! but a file a turn wrote there itself, after your approval. Never the shadow
//! repository or any `.git`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Checkpoint;
use super::blobs::{self, Blobs};

/// Why an undo did not happen.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum UndoError {
    #[error("nothing to undo: no turn of this session changed files")]
    Nothing,
    #[error("only {have} turn(s) of this session can be undone")]
    TooFew { have: usize },
    /// Files that were changed since the turn left them (shown paths).
    #[error(
        "not undone: {} changed since ikigai's turn; undo anyway (overwriting those changes) with --force",
        list(.0)
    )]
    ChangedSince(Vec<String>),
    /// `/` or the project folder could not be opened.
    #[error("cannot open the project folder: {0}")]
    Io(String),
}

fn list(paths: &[String]) -> String {
    match paths {
        [one] => one.clone(),
        many => format!("{} files ({})", many.len(), many.join(", ")),
    }
}

/// What an undo did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// The checkpoints undone, newest first.
    pub(crate) ids: Vec<String>,
    pub(crate) turns: Vec<usize>,
    /// One line per file: `restored src/a.rs (+3 −1)`.
    pub(crate) lines: Vec<String>,
    /// Shown paths of the files put back.
    pub(crate) files: Vec<String>,
    /// Files that could not be put back, with why.
    pub(crate) failed: Vec<String>,
    /// Some undone turn ran tools whose changes are not covered.
    pub(crate) uncovered: bool,
}

/// What one file goes back to.
struct Target {
    /// The state ikigai's newest turn left it in.
    expect: Option<String>,
    /// What it held before the oldest undone turn: (hash, mode), `None` = absent.
    back: Option<(String, u32)>,
    /// Changed by somebody else between two undone turns.
    changed_between: bool,
}

/// `path` as the user sees it: relative to `cwd` when inside it.
pub(crate) fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// Undoes the newest `n` of `list` (oldest first): every file they changed goes back to
/// what it held before the oldest of them. Refused when a file is not as the newest turn
/// left it (somebody changed it since), unless `force`.
pub(crate) fn undo(
    list: &[Checkpoint],
    n: usize,
    blobs: &Blobs,
    cwd: &Path,
    force: bool,
) -> Result<Outcome, UndoError> {
    if list.is_empty() {
        return Err(UndoError::Nothing);
    }
    if n > list.len() {
        return Err(UndoError::TooFew { have: list.len() });
    }
    let undone = &list[list.len() - n..];
    let mut targets: BTreeMap<PathBuf, Target> = BTreeMap::new();
    for c in undone.iter().rev() {
        for f in &c.files {
            let back = f.before.clone().map(|h| (h, f.mode));
            match targets.get_mut(Path::new(&f.path)) {
                None => {
                    targets.insert(
                        PathBuf::from(&f.path),
                        Target {
                            expect: f.after.clone(),
                            back,
                            changed_between: false,
                        },
                    );
                }
                Some(t) => {
                    // A later turn started from what this one left, or somebody changed it.
                    if t.back.as_ref().map(|b| &b.0) != f.after.as_ref() {
                        t.changed_between = true;
                    }
                    t.back = back;
                }
            }
        }
    }
    // The project opened once: every path inside it is reached from this descriptor.
    let anchors = match blobs::anchors(Some(cwd)) {
        Ok(a) => a,
        Err(e) => return Err(UndoError::Io(e.to_string())),
    };
    let mut conflicts = Vec::new();
    let mut now = BTreeMap::new();
    for (path, t) in &targets {
        let current = blobs::state_in(&anchors, path).ok().flatten();
        if t.changed_between || current.as_ref().map(|s| &s.hash) != t.expect.as_ref() {
            conflicts.push(shown(path, cwd));
        }
        now.insert(path.clone(), current);
    }
    if !conflicts.is_empty() && !force {
        return Err(UndoError::ChangedSince(conflicts));
    }
    let mut out = Outcome {
        ids: undone.iter().rev().map(|c| c.id.clone()).collect(),
        turns: undone.iter().rev().map(|c| c.turn).collect(),
        uncovered: undone.iter().any(|c| c.uncovered),
        ..Outcome::default()
    };
    for (path, t) in targets {
        let name = shown(&path, cwd);
        let current = now.remove(&path).flatten();
        let result = match &t.back {
            None => blobs::remove_state(&anchors, &path).map(|()| {
                anchors.remove_empty_parents(&path);
                current.map(|_| format!("removed {name} (the turn created it)"))
            }),
            Some((hash, mode)) => blobs.get(hash, *mode).and_then(|bytes| {
                if current.as_ref().is_some_and(|c| c.hash == *hash) {
                    return Ok(None);
                }
                blobs::write_state(&anchors, &path, &bytes, *mode)?;
                Ok(Some(match &current {
                    None => format!("recreated {name}{}", stats(b"", &bytes)),
                    Some(c) => format!("restored {name}{}", stats(&c.bytes, &bytes)),
                }))
            }),
        };
        match result {
            Ok(Some(line)) => {
                out.lines.push(line);
                out.files.push(name);
            }
            Ok(None) => {}
            Err(e) => out.failed.push(format!("{name}: {e}")),
        }
    }
    Ok(out)
}

/// The start of every note that tells the model about an undo.
pub(crate) const NOTE_PREFIX: &str = "[ikigai note]";

/// Why an undo was refused, as the user reads it (`asking`: the TUI put the command that
/// confirms into the input).
pub fn refused_text(turns: usize, files: &[String], asking: bool) -> String {
    let what = UndoError::ChangedSince(files.to_vec()).to_string();
    let head = what.split("; undo anyway").next().unwrap_or(&what).to_string();
    if asking {
        format!(
            "/undo: {head}. Overwrite your changes? Press Enter to undo anyway ({}), or clear the input to keep them.",
            force_command(turns)
        )
    } else {
        format!(
            "/undo: {head}; undo anyway, overwriting those changes, with {}",
            force_command(turns)
        )
    }
}

/// The command that undoes `turns` turns overwriting files changed since.
pub fn force_command(turns: usize) -> String {
    if turns == 1 {
        "/undo --force".to_string()
    } else {
        format!("/undo {turns} --force")
    }
}

/// What the model is told in the next request: which turns were undone and which files
/// are back to what they held before.
pub(crate) fn note(out: &Outcome) -> String {
    let turns = turns(&out.turns);
    let files = if out.files.is_empty() {
        "no file needed restoring".to_string()
    } else {
        format!("{} are back to what they held before", out.files.join(", "))
    };
    format!(
        "{NOTE_PREFIX} The user undid {turns} (/undo): {files}. The changes made in {it} are \
         gone; read the files again before relying on them.",
        it = if out.turns.len() == 1 {
            "that turn"
        } else {
            "those turns"
        }
    )
}

/// `turn 3` or `turns 3, 2`.
fn turns(turns: &[usize]) -> String {
    let n: Vec<String> = turns.iter().map(usize::to_string).collect();
    match n.as_slice() {
        [one] => format!("turn {one}"),
        _ => format!("turns {}", n.join(", ")),
    }
}

/// What the user is shown: the turns undone and one line per file.
pub(crate) fn summary(out: &Outcome) -> String {
    let mut text = format!("Undid {}.", turns(&out.turns));
    if out.lines.is_empty() {
        text.push_str(" No file needed restoring.");
    }
    for l in &out.lines {
        text.push_str(&format!("\n  {l}"));
    }
    for f in &out.failed {
        text.push_str(&format!("\n  not restored: {f}"));
    }
    if out.uncovered {
        text.push_str(
            "\n  (some tools of these turns ran without a snapshot: their changes were not undone)",
        );
    }
    text
}

/// `/checkpoints`: one line per turn that can be undone, newest first.
pub(crate) fn listing(list: &[Checkpoint], cwd: &Path) -> String {
    if list.is_empty() {
        return "No checkpoints: no turn of this session changed files yet.".to_string();
    }
    let mut text = String::from("Checkpoints (/undo N undoes the newest N):");
    for (i, c) in list.iter().rev().enumerate() {
        let time = chrono::DateTime::parse_from_rfc3339(&c.at)
            .map(|t| t.with_timezone(&chrono::Local).format("%H:%M:%S").to_string())
            .unwrap_or_else(|_| c.at.clone());
        let names: Vec<String> = c
            .files
            .iter()
            .take(4)
            .map(|f| shown(Path::new(&f.path), cwd))
            .collect();
        let more = c.files.len().saturating_sub(names.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let prompt: String = c.prompt.chars().take(40).collect();
        text.push_str(&format!(
            "\n  {n:>2}. turn {turn}  {time}  {files} file(s): {list}{more}  \"{prompt}\"",
            n = i + 1,
            turn = c.turn,
            files = c.files.len(),
            list = names.join(", "),
        ));
    }
    text
}

/// ` (+3 −1)`: lines the undo adds and removes (` (binary)` when either is not text).
fn stats(from: &[u8], to: &[u8]) -> String {
    let (Ok(a), Ok(b)) = (std::str::from_utf8(from), std::str::from_utf8(to)) else {
        return " (binary)".to_string();
    };
    let diff = similar::TextDiff::from_lines(a, b);
    let (mut add, mut del) = (0, 0);
    for c in diff.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => add += 1,
            similar::ChangeTag::Delete => del += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    format!(" (+{add} −{del})")
}

#[cfg(test)]
mod tests {
    use super::super::FileChange;
    use super::*;
    use std::fs;

    fn save(blobs: &Blobs, path: &Path) -> Option<String> {
        let s = blobs::state_of(path).unwrap()?;
        blobs.put(&s.hash, &s.bytes).unwrap();
        Some(s.hash)
    }

    fn write_made(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "x").unwrap();
        fs::remove_file(path).unwrap();
    }

    fn checkpoint(id: &str, files: Vec<FileChange>) -> Checkpoint {
        Checkpoint {
            id: id.into(),
            turn: 1,
            at: String::new(),
            prompt: String::new(),
            files,
            uncovered: false,
        }
    }

    #[test]
    fn two_turns_go_back_and_a_changed_file_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("p");
        fs::create_dir_all(&cwd).unwrap();
        let blobs = Blobs::new(dir.path().join("blobs"));
        let a = cwd.join("a.txt");
        let b = cwd.join("b.txt");
        fs::write(&a, "one\n").unwrap();
        // Turn 1 edits a.txt; turn 2 edits it again and creates b.txt.
        let a0 = save(&blobs, &a);
        fs::write(&a, "one\ntwo\n").unwrap();
        let a1 = save(&blobs, &a);
        fs::write(&a, "one\ntwo\nthree\n").unwrap();
        fs::write(&b, "new").unwrap();
        let a2 = save(&blobs, &a);
        let b2 = save(&blobs, &b);
        let fc = |p: &Path, before: Option<String>, after| FileChange {
            path: p.display().to_string(),
            before,
            mode: blobs::MODE_FILE,
            after,
        };
        let list = vec![
            checkpoint("t1", vec![fc(&a, a0, a1.clone())]),
            checkpoint("t2", vec![fc(&a, a1, a2), fc(&b, None, b2)]),
        ];
        assert_eq!(
            undo(&list, 3, &blobs, &cwd, false),
            Err(UndoError::TooFew { have: 2 })
        );
        assert_eq!(undo(&[], 1, &blobs, &cwd, false), Err(UndoError::Nothing));
        // The user changed b.txt since: refused, nothing touched.
        fs::write(&b, "mine").unwrap();
        let refused = undo(&list, 2, &blobs, &cwd, false).unwrap_err();
        assert_eq!(refused, UndoError::ChangedSince(vec!["b.txt".into()]));
        assert!(refused.to_string().contains("b.txt changed since"), "{refused}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "one\ntwo\nthree\n");
        let done = undo(&list, 2, &blobs, &cwd, true).unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "one\n");
        assert!(!b.exists());
        assert_eq!(done.ids, ["t2", "t1"]);
        // Folders left empty by a removed file go, up to the project and never it.
        let anchors = blobs::anchors(Some(&cwd)).unwrap();
        let made = cwd.join("made/deep/x.txt");
        write_made(&made);
        anchors.remove_empty_parents(&made);
        assert!(!cwd.join("made").exists() && cwd.exists());
        let odd = cwd.join("made/../y.txt");
        write_made(&odd);
        anchors.remove_empty_parents(&odd);
        assert!(cwd.join("made").exists(), "`..` paths are left alone");
        assert_eq!(
            done.lines,
            ["restored a.txt (+0 −2)", "removed b.txt (the turn created it)"]
        );
    }
}
