//! File operations cannot be raced (issue 34 §5), against the real binary: while a thread
//! swaps a folder between a real folder and a link to a folder outside the project
//! (`renameat2(RENAME_EXCHANGE)`, as fast as it can — what a background process a
//! command left behind would do), ikigai runs many `file_write` and `file_edit` calls
//! (sandbox on and off, `ask` with writes approved as inside the working directory or by
//! a rule naming a folder outside, `auto`), and `ikigai undo` deletes and restores the
//! files of a turn. Whatever the race does, nothing outside the folder the calls were
//! judged in is created, changed or deleted, and no temporary file is left anywhere.
//! Each test asserts only that, which the fixed code cannot fail; on the code before it,
//! each failed every run (see the counts in the assertion messages). The same race is
//! then made deterministic in the TUI: the folder changes while the approval question
//! waits, and the approved write lands at the place the question showed, or nowhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use serde_json::json;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

/// `file_write` calls per run.
const WRITES: usize = 150;
/// `file_edit` calls per run.
const EDITS: usize = 60;

/// A test's folders: `home` (ikigai's HOME and working directory, the project), `out`
/// (outside it, what a swapped folder leads to), `approved` (outside it, a folder a rule
/// allows writes in) and `tmp` (its TMPDIR).
struct Place {
    _root: tempfile::TempDir,
    home: PathBuf,
    out: PathBuf,
    approved: PathBuf,
    tmp: PathBuf,
}

fn place() -> Place {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = root.path().canonicalize().unwrap();
    let p = Place {
        home: base.join("home"),
        out: base.join("out"),
        approved: base.join("approved"),
        tmp: base.join("tmp"),
        _root: root,
    };
    for d in [&p.home, &p.out, &p.approved, &p.tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    p
}

impl Place {
    fn config(&self, text: &str) {
        let dir = self.home.join(".config/ikigai");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), format!("max_tool_turns = 1000\n{text}")).unwrap();
    }

    /// `ikigai ARGS` in the project, stdin closed.
    fn run(&self, args: &[&str]) -> Output {
        common::ikigai(&self.home)
            .env("TMPDIR", &self.tmp)
            .env("OPENAI_API_KEY", "sk-test")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// One `-p` turn running `calls`, then "done".
    fn turn(&self, fake: &FakeProvider, calls: &[(String, &str, String)], extra: &[&str]) -> Output {
        let calls: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(i, n, a)| (i.as_str(), *n, a.as_str()))
            .collect();
        fake.push(Reply::tool_calls(&calls));
        fake.push(Reply::text("done"));
        let mut args = vec!["-p", "go", "--base-url", &fake.base_url];
        args.extend_from_slice(extra);
        self.run(&args)
    }
}

/// The folder `dir` holds files `w*` to write and `e*` to edit; the folder `out` holds
/// files of the same names (what a write through the swapped folder would reach).
fn stock(dir: &Path, out: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..EDITS {
        std::fs::write(dir.join(format!("e{i}.txt")), format!("old {i}\n")).unwrap();
    }
    for i in 0..WRITES.max(EDITS) {
        std::fs::write(out.join(format!("w{i}.txt")), format!("outside w{i}\n")).unwrap();
        std::fs::write(out.join(format!("e{i}.txt")), format!("old {i}\n")).unwrap();
    }
}

/// `WRITES` writes and `EDITS` edits of files in `dir` (as the model writes them: `dir`
/// relative or absolute).
fn calls(dir: &str) -> Vec<(String, &'static str, String)> {
    let mut out = Vec::new();
    for i in 0..WRITES {
        let args = json!({"path": format!("{dir}/w{i}.txt"), "content": format!("model {i}\n")});
        out.push((format!("w{i}"), "file_write", args.to_string()));
    }
    for i in 0..EDITS {
        let args = json!({"path": format!("{dir}/e{i}.txt"), "old_string": "old", "new_string": "new"});
        out.push((format!("e{i}"), "file_edit", args.to_string()));
    }
    out
}

/// A thread exchanging folder `dir` with a link to `to` as fast as it can.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
    dir: PathBuf,
    link: PathBuf,
}

impl Swapper {
    fn start(dir: &Path, to: &Path) -> Swapper {
        let link = dir.with_extension("swap");
        std::os::unix::fs::symlink(to, &link).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, a, b) = (stop.clone(), dir.to_path_buf(), link.clone());
        let thread = std::thread::spawn(move || {
            let mut swaps = 0;
            while !flag.load(Ordering::Relaxed) {
                exchange(&a, &b);
                swaps += 1;
            }
            swaps
        });
        Swapper {
            stop,
            thread: Some(thread),
            dir: dir.to_path_buf(),
            link,
        }
    }

    /// Stops swapping, leaves the real folder at `dir` and the link gone; how many swaps.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let swaps = self.thread.take().map_or(0, |t| t.join().unwrap());
        if std::fs::symlink_metadata(&self.dir)
            .unwrap()
            .file_type()
            .is_symlink()
        {
            exchange(&self.dir, &self.link);
        }
        std::fs::remove_file(&self.link).unwrap();
        swaps
    }
}

fn exchange(a: &Path, b: &Path) {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).unwrap();
}

/// Everything under `dir`, by path relative to it: a folder, a link's target, a file's
/// text. Never follows a link.
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(base).unwrap().to_path_buf();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(
                    rel,
                    format!("link to {}", std::fs::read_link(&p).unwrap().display()),
                );
            } else if m.is_dir() {
                out.insert(rel, "folder".into());
                walk(base, &p, out);
            } else {
                out.insert(
                    rel,
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What became of `before` (a `tree`) in `dir`: created, changed and deleted entries, and
/// temporary files left there.
fn changes(before: &BTreeMap<PathBuf, String>, dir: &Path) -> String {
    let after = tree(dir);
    let created: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let deleted: Vec<_> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    let changed: Vec<_> = after
        .iter()
        .filter(|(k, v)| before.get(*k).is_some_and(|b| b != *v))
        .map(|(k, _)| k)
        .collect();
    if created.is_empty() && deleted.is_empty() && changed.is_empty() {
        return String::new();
    }
    format!(
        "{} created, {} changed, {} deleted in {}: created {created:?}, changed {changed:?}, deleted {deleted:?}",
        created.len(),
        changed.len(),
        deleted.len(),
        dir.display()
    )
}

/// ikigai's temporary files (`.ikigai-…`) left anywhere under `dirs`.
fn temporaries(dirs: &[&Path]) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|d| tree(d).into_keys().map(move |k| d.join(k)))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".ikigai-"))
        })
        .collect()
}

/// How the calls ended (for the log: the race decides the mix).
fn outcomes(fake: &FakeProvider) -> String {
    let reqs = fake.requests();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in reqs
        .last()
        .unwrap()
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
    {
        let text = m["content"].as_str().unwrap_or_default();
        let kind = if text.contains("changed while it was being reached") {
            "refused: a folder became a link"
        } else if text.contains("NOT_APPROVED") {
            "not approved (where it led when judged needs a question)"
        } else if text.contains("\"error\"") {
            "other error"
        } else {
            "done"
        };
        *counts.entry(kind).or_default() += 1;
    }
    format!("{counts:?}")
}

/// Runs the calls on `dir` (written as `given`) under `settings` and `extra` arguments
/// while `dir` is swapped with a link to `to`, which holds files of the same names;
/// nothing in `to` may change, nor outside the project.
fn race_writes(p: &Place, settings: &str, extra: &[&str], dir: &Path, given: &str, to: &Path) {
    p.config(settings);
    stock(dir, to);
    let (target, outside, approved) = (tree(to), tree(&p.out), tree(&p.approved));
    let fake = FakeProvider::start();
    let swapper = Swapper::start(dir, to);
    let out = p.turn(&fake, &calls(given), extra);
    let swaps = swapper.stop();
    assert!(swaps > 100, "the folder was swapped {swaps} times only");
    assert_eq!(fake.requests().len(), 2, "{}", common::text(&out.stderr));
    eprintln!("{swaps} swaps; {}", outcomes(&fake));
    let escaped = [changes(&target, to), changes(&outside, &p.out)].join(" ");
    let temps = temporaries(&[&p.home, &p.out, &p.approved]);
    assert!(
        escaped.trim().is_empty() && temps.is_empty(),
        "{escaped}; {} temporary files left: {temps:?}",
        temps.len()
    );
    // In the approved folder, only the swapped folder's own files changed.
    if dir.starts_with(&p.approved) {
        let now = tree(&p.approved);
        let strays: Vec<_> = now
            .keys()
            .filter(|k| !approved.contains_key(*k) && !p.approved.join(k).starts_with(dir))
            .collect();
        assert!(strays.is_empty(), "{strays:?}");
    }
}

#[test]
fn file_writes_under_the_sandbox_stay_in_the_workspace_while_a_folder_is_swapped() {
    let p = place();
    let dir = p.home.join("d");
    race_writes(
        &p,
        "sandbox = \"workspace-write\"\n",
        &["--approval", "auto"],
        &dir,
        "d",
        &p.out,
    );
}

#[test]
fn writes_approved_as_inside_the_working_directory_stay_inside_while_a_folder_is_swapped() {
    let p = place();
    let dir = p.home.join("d");
    race_writes(&p, "", &["--approval", "ask"], &dir, "d", &p.out);
}

#[test]
fn ordinary_edits_never_land_in_git_hooks_by_a_folder_swapped_for_a_link_to_them() {
    // The link stays inside the project: writes approved as ordinary edits inside the
    // working directory must still not reach `.git/hooks`, which asks.
    let p = place();
    let hooks = p.home.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let dir = p.home.join("d");
    race_writes(&p, "", &["--approval", "ask"], &dir, "d", &hooks);
}

#[test]
fn sandboxed_writes_in_ask_mode_stay_in_the_workspace_while_a_folder_is_swapped() {
    let p = place();
    let dir = p.home.join("src/d");
    race_writes(
        &p,
        "sandbox = \"workspace-write\"\n",
        &["--approval", "ask"],
        &dir,
        "src/d",
        &p.out,
    );
}

#[test]
fn writes_approved_outside_land_only_where_approved_while_a_folder_is_swapped() {
    let p = place();
    let dir = p.approved.join("d");
    let rules = format!(
        "[permissions]\nallow = [\"file_write(/{a}/**)\", \"file_edit(/{a}/**)\"]\n",
        a = p.approved.display()
    );
    race_writes(
        &p,
        &rules,
        &["--approval", "ask"],
        &dir,
        dir.to_str().unwrap(),
        &p.out,
    );
}

/// A turn that creates files in `d/` and edits others there, then `ikigai undo --force`
/// while `d` is swapped with a link to `out`, which holds files of the same names.
fn race_undo(settings: &str) {
    let p = place();
    p.config(settings);
    let dir = p.home.join("d");
    stock(&dir, &p.out);
    let fake = FakeProvider::start();
    let out = p.turn(&fake, &calls("d"), &["--approval", "auto"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(dir.join("w0.txt")).unwrap(),
        "model 0\n",
        "the turn wrote"
    );
    let outside = tree(&p.out);
    let swapper = Swapper::start(&dir, &p.out);
    let undone = p.run(&["undo", "--force"]);
    let swaps = swapper.stop();
    assert!(swaps > 100, "the folder was swapped {swaps} times only");
    let said = common::text(&undone.stdout);
    eprintln!(
        "{swaps} swaps; {} files put back, {} not",
        said.lines()
            .filter(|l| l.starts_with("  restored") || l.starts_with("  removed"))
            .count(),
        said.lines().filter(|l| l.starts_with("  not restored")).count()
    );
    assert!(
        said.starts_with("Undid turn 1."),
        "{said}{}",
        common::text(&undone.stderr)
    );
    let escaped = changes(&outside, &p.out);
    let temps = temporaries(&[&p.home, &p.out]);
    assert!(
        escaped.is_empty() && temps.is_empty(),
        "{escaped}; {} temporary files left: {temps:?}",
        temps.len()
    );
}

#[test]
fn undo_with_the_sandbox_on_touches_nothing_outside_while_a_folder_is_swapped() {
    race_undo("sandbox = \"workspace-write\"\n");
}

#[test]
fn undo_with_the_sandbox_off_touches_nothing_outside_while_a_folder_is_swapped() {
    race_undo("");
}

/// A turn of `grep` calls over the project while its folder `sub` is swapped with a link
/// to a folder outside holding files of the same names: no search reads a file outside.
#[test]
fn grep_never_reads_through_a_folder_swapped_for_a_link_during_its_walk() {
    let p = place();
    p.config("");
    let sub = p.home.join("sub");
    std::fs::create_dir(&sub).unwrap();
    for i in 0..40 {
        std::fs::write(sub.join(format!("f{i}.txt")), format!("public {i}\n")).unwrap();
        std::fs::write(p.out.join(format!("f{i}.txt")), format!("SECRET-OUTSIDE {i}\n")).unwrap();
    }
    // Searches of the project folder, judged as such: what they read must lie beneath it.
    let calls: Vec<(String, &str, String)> = (0..200)
        .map(|i| {
            let args = json!({"pattern": format!("SECRET|public|call{i}"), "glob": "*.txt"});
            (format!("g{i}"), "grep", args.to_string())
        })
        .collect();
    let fake = FakeProvider::start();
    let swapper = Swapper::start(&sub, &p.out);
    let out = p.turn(&fake, &calls, &["--approval", "auto"]);
    let swaps = swapper.stop();
    assert!(swaps > 100, "the folder was swapped {swaps} times only");
    assert_eq!(fake.requests().len(), 2, "{}", common::text(&out.stderr));
    let reqs = fake.requests();
    let results: Vec<&str> = reqs
        .last()
        .unwrap()
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let leaked = results.iter().filter(|r| r.contains("SECRET-OUTSIDE")).count();
    let found = results.iter().filter(|r| r.contains("public")).count();
    eprintln!(
        "{swaps} swaps; {found} of {} searches found the project's files",
        results.len()
    );
    assert_eq!(
        leaked,
        0,
        "{leaked} of {} searches read files outside",
        results.len()
    );
}

// The same race made deterministic: the folder changes while the question about the call
// waits, between the decision and the call.

fn send(t: &Tmux, text: &str) {
    t.wait_text("Ask anything");
    t.type_text(text);
    t.keys(&["Enter"]);
}

/// The tool results of the last request the model got.
fn tool_results(fake: &FakeProvider) -> Vec<serde_json::Value> {
    let reqs = fake.requests();
    let last = reqs.last().expect("a request");
    last.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

#[test]
fn a_write_approved_outside_lands_at_the_path_the_question_showed_or_nowhere() {
    let p = place();
    let dir = p.approved.join("d");
    std::fs::create_dir(&dir).unwrap();
    let target = dir.join("x.txt");
    let fake = FakeProvider::start();
    let args = json!({ "path": target, "content": "approved\n" }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "file_write", &args)]));
    fake.push(Reply::text("Turn over."));
    let t = Tmux::start(&p.home, &fake.base_url, "--approval ask");
    send(&t, "go");
    let pane = t.wait_text("y yes · n no");
    let joined: String = pane.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    assert!(joined.contains("outside the working directory"), "{pane}");
    // While the question waits, the folder becomes a link to another one.
    std::fs::rename(&dir, p.approved.join("d.real")).unwrap();
    std::os::unix::fs::symlink(&p.out, &dir).unwrap();
    t.keys(&["y"]);
    t.wait_text("Turn over.");
    assert!(
        !p.out.join("x.txt").exists(),
        "the write went where the link leads now"
    );
    assert!(!p.approved.join("d.real/x.txt").exists());
    let r = &tool_results(&fake)[0];
    let error = r["result"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("changed while it was being reached"), "{r}");
}

#[test]
fn a_write_run_outside_the_sandbox_lands_where_the_question_said() {
    let p = place();
    std::os::unix::fs::symlink(&p.approved, p.home.join("link")).unwrap();
    let fake = FakeProvider::start();
    let args = json!({ "path": "link/x.txt", "content": "approved\n" }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "file_write", &args)]));
    fake.push(Reply::text("Turn over."));
    let t = Tmux::start(
        &p.home,
        &fake.base_url,
        "--approval auto --sandbox workspace-write",
    );
    send(&t, "go");
    let pane = t.wait_text("OUTSIDE the sandbox");
    let joined: String = pane.lines().map(str::trim).collect::<Vec<_>>().join("");
    let shown = p.approved.join("x.txt");
    assert!(joined.contains(shown.to_str().unwrap()), "{pane}");
    // While the question waits, the link is made to lead elsewhere.
    std::fs::remove_file(p.home.join("link")).unwrap();
    std::os::unix::fs::symlink(&p.out, p.home.join("link")).unwrap();
    t.keys(&["y"]);
    t.wait_text("Turn over.");
    assert!(
        !p.out.join("x.txt").exists(),
        "the write went where the link leads now"
    );
    assert_eq!(std::fs::read_to_string(&shown).unwrap(), "approved\n");
}
