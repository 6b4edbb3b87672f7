//! Undo and checkpoints from the outside (the real binary, the fake vendor, a project that
//! is a real git repository): `/undo` after a `file_edit`, a `file_write` of a new file and
//! a `bash` that deletes and creates files puts all of them back and leaves the project's
//! `.git` as it was; the model is told in the next request; `/undo` works across a
//! resume; `ikigai undo` from the shell does the same, lists checkpoints, and refuses to
//! overwrite a file the user changed since (naming it) unless `--force`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::json;

/// A home folder with a project in it that is a git repository with one commit.
struct Project {
    home: tempfile::TempDir,
}

impl Project {
    fn new(files: &[(&str, &str)]) -> Project {
        let home = tempfile::tempdir().unwrap();
        let p = home.path().join("project");
        std::fs::create_dir_all(&p).unwrap();
        for (name, text) in files {
            std::fs::write(p.join(name), text).unwrap();
        }
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "start",
            ],
        ] {
            let st = Command::new("git")
                .args(args)
                .current_dir(&p)
                .env("HOME", home.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .status()
                .unwrap();
            assert!(st.success(), "git {args:?}");
        }
        Project { home }
    }

    fn dir(&self) -> PathBuf {
        self.home.path().join("project")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.path(name)).ok()
    }

    /// Every file of the project's `.git` with its content.
    fn git_state(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if e.file_type().unwrap().is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.path(".git"), &mut out);
        out
    }

    /// `ikigai ARGS` in the project, with `stdin` piped in.
    fn run(&self, fake: &FakeProvider, args: &[&str], stdin: &str) -> Output {
        let mut child = common::ikigai(self.home.path())
            .current_dir(self.dir())
            .args(["--base-url", &fake.base_url])
            .args(args)
            .env("OPENAI_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).unwrap();
        drop(input);
        child.wait_with_output().unwrap()
    }

    /// `ikigai undo ARGS` in the project.
    fn undo(&self, args: &[&str]) -> Output {
        common::ikigai(self.home.path())
            .current_dir(self.dir())
            .arg("undo")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn edit(path: &str, old: &str, new: &str) -> String {
    json!({"path": path, "old_string": old, "new_string": new}).to_string()
}

fn write(path: &str, content: &str) -> String {
    json!({"path": path, "content": content}).to_string()
}

fn bash(cmd: &str) -> String {
    json!({ "command": cmd }).to_string()
}

/// The text of the user messages of the last request.
fn last_user_texts(fake: &FakeProvider) -> Vec<String> {
    let reqs = fake.requests();
    let last = reqs.last().expect("a request");
    last.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect()
}

#[test]
fn undo_puts_back_an_edit_a_new_file_and_what_bash_deleted_and_created() {
    let p = Project::new(&[
        ("main.rs", "fn main() {\n    old();\n}\n"),
        ("doomed.txt", "keep me\n"),
        ("script.sh", "#!/bin/sh\necho hi\n"),
    ]);
    std::fs::create_dir_all(p.path("docs")).unwrap();
    std::fs::write(p.path("docs/guide.md"), "# Guide\n").unwrap();
    std::fs::write(p.path(".gitignore"), "build/\n").unwrap();
    let git_before = p.git_state();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "file_edit", &edit("main.rs", "old();", "new();")),
        ("c2", "file_write", &write("notes/new.md", "fresh\n")),
        (
            "c3",
            "bash",
            &bash("rm doomed.txt && rm -r docs && echo made > created.txt && mkdir -p build && echo x > build/out"),
        ),
    ]));
    fake.push(Reply::text("Done."));
    fake.push(Reply::text("Understood."));
    let out = p.run(&fake, &[], "change everything\n/checkpoints\n/undo\nwhat now?\n");
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The turn did change them.
    assert!(
        stderr.contains("turn 1"),
        "/checkpoints lists the turn:\n{stderr}"
    );
    assert!(stderr.contains("\"change everything\""), "{stderr}");
    // All back.
    assert_eq!(p.read("main.rs").as_deref(), Some("fn main() {\n    old();\n}\n"));
    assert_eq!(p.read("doomed.txt").as_deref(), Some("keep me\n"));
    assert_eq!(p.read("docs/guide.md").as_deref(), Some("# Guide\n"));
    assert!(
        !p.path("notes").exists(),
        "the new file is gone, with the folder made for it"
    );
    assert!(!p.path("created.txt").exists(), "what bash created is gone");
    assert_eq!(
        p.read("build/out").as_deref(),
        Some("x\n"),
        "ignored files are not covered"
    );
    assert_eq!(p.git_state(), git_before, "the project's .git is untouched");
    // A diff summary of what was restored.
    for line in [
        "Undid turn 1.",
        "restored main.rs (+1 −1)",
        "removed notes/new.md (the turn created it)",
        "recreated doomed.txt (+1 −0)",
        "recreated docs/guide.md (+1 −0)",
        "removed created.txt (the turn created it)",
    ] {
        assert!(stderr.contains(line), "`{line}` in:\n{stderr}");
    }
    // The model hears of it in the next request.
    let users = last_user_texts(&fake);
    let note = users.iter().find(|t| t.contains("undid turn 1")).expect("a note");
    assert!(note.contains("main.rs") && note.contains("created.txt"), "{note}");
    assert!(users.last().unwrap().contains("what now?"));
    assert_eq!(fake.requests().len(), 3, "/undo and /checkpoints send nothing");
}

#[test]
fn undo_works_across_resume_and_from_the_shell() {
    let p = Project::new(&[("a.txt", "one\n")]);
    let fake = FakeProvider::start();
    // Run 1: two turns.
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_edit",
        &edit("a.txt", "one", "two"),
    )]));
    fake.push(Reply::text("ok"));
    fake.push(Reply::tool_calls(&[(
        "c2",
        "file_write",
        &write("b.txt", "bee\n"),
    )]));
    fake.push(Reply::text("ok"));
    let out = p.run(&fake, &[], "first\nsecond\n");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(p.read("a.txt").as_deref(), Some("two\n"));
    // Run 2 resumes it by id and undoes the newest turn.
    let listed = common::ikigai(p.home.path())
        .current_dir(p.dir())
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let sessions: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let out = p.run(&fake, &["--resume", &id], "/undo\n");
    let stderr = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Undid turn 2."), "{stderr}");
    assert!(!p.path("b.txt").exists());
    assert_eq!(p.read("a.txt").as_deref(), Some("two\n"), "turn 1 stays");
    // From the shell: the list, then the turn before.
    let out = p.undo(&["--list"]);
    let listed = s(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(listed.contains("turn 1") && listed.contains("a.txt"), "{listed}");
    assert!(
        !listed.contains("turn 2"),
        "undone turns are not listed:\n{listed}"
    );
    let out = p.undo(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(
        s(&out.stdout).contains("restored a.txt (+1 −1)"),
        "{}",
        s(&out.stdout)
    );
    assert_eq!(p.read("a.txt").as_deref(), Some("one\n"));
    let out = p.undo(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(s(&out.stderr).contains("nothing to undo"), "{}", s(&out.stderr));
    // `ikigai export` shows what each turn changed and what was put back.
    let out = common::ikigai(p.home.path())
        .current_dir(p.dir())
        .args(["export", &id])
        .output()
        .unwrap();
    let md = s(&out.stdout);
    assert!(
        md.contains("_checkpoint: changed ") && md.contains("b.txt_"),
        "{md}"
    );
    assert!(md.contains("_undo: put back b.txt_"), "{md}");
    // The resumed session tells the model about both undos.
    fake.push(Reply::text("noted"));
    let out = p.run(&fake, &["-c", "-p", "go on"], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let users = last_user_texts(&fake).join("\n");
    assert!(
        users.contains("undid turn 2") && users.contains("undid turn 1"),
        "{users}"
    );
}

#[test]
fn undo_refuses_to_overwrite_a_file_the_user_changed_unless_forced() {
    let p = Project::new(&[("a.txt", "one\n"), ("b.txt", "bee\n")]);
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "file_edit", &edit("a.txt", "one", "two")),
        ("c2", "bash", &bash("echo more >> b.txt")),
    ]));
    fake.push(Reply::text("ok"));
    let out = p.run(&fake, &["-p", "edit"], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    // The user changes a.txt after ikigai's turn.
    std::fs::write(p.path("a.txt"), "mine\n").unwrap();
    // In a session: refused with a warning naming it; nothing changes.
    let out = p.run(&fake, &["-c"], "/undo\n");
    let stderr = s(&out.stderr);
    assert!(
        stderr.contains("a.txt changed since ikigai's turn") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(p.read("a.txt").as_deref(), Some("mine\n"));
    assert_eq!(p.read("b.txt").as_deref(), Some("bee\nmore\n"), "nothing undone");
    // Under --json: one `undo_refused` event naming it.
    let out = p.run(&fake, &["-c", "--json"], "/undo\n");
    let refused: Vec<serde_json::Value> = s(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "undo_refused")
        .collect();
    assert_eq!(
        refused,
        [json!({"type": "undo_refused", "turns": 1, "files": ["a.txt"]})]
    );
    assert_eq!(p.read("a.txt").as_deref(), Some("mine\n"));
    // From the shell: refused too, exit 1, naming the file.
    let out = p.undo(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        s(&out.stderr).contains("a.txt changed since"),
        "{}",
        s(&out.stderr)
    );
    assert_eq!(p.read("a.txt").as_deref(), Some("mine\n"));
    // Forced: both back.
    let out = p.undo(&["--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(p.read("a.txt").as_deref(), Some("one\n"));
    assert_eq!(p.read("b.txt").as_deref(), Some("bee\n"));
}

#[test]
fn above_the_size_limit_bash_is_not_covered_and_the_user_is_told_once() {
    let p = Project::new(&[("a.txt", "one\n")]);
    let config = p.home.path().join(".config/ikigai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "checkpoint_limit_mb = 0\n").unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", &bash("echo x > made.txt")),
        ("c2", "file_edit", &edit("a.txt", "one", "two")),
    ]));
    fake.push(Reply::text("ok"));
    fake.push(Reply::tool_calls(&[("c3", "bash", &bash("echo y > more.txt"))]));
    fake.push(Reply::text("ok"));
    let out = p.run(&fake, &[], "first\nsecond\n/undo\n");
    let stderr = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("/undo will not cover what bash").count(),
        1,
        "told once:\n{stderr}"
    );
    assert!(stderr.contains("more than 0 MB"), "{stderr}");
    // The file tool is still covered; what bash made stays.
    assert_eq!(p.read("a.txt").as_deref(), Some("one\n"));
    assert!(p.path("made.txt").exists() && p.path("more.txt").exists());
    assert!(stderr.contains("ran without a snapshot"), "{stderr}");
}

/// A repository ships its own `git` and `bash` (a `node_modules/.bin/` of its own, one at
/// its top, one in `bin/`), and the user's PATH reaches them: a relative entry, `.`, an
/// empty entry, an absolute one into the project, or a link to it from elsewhere. ikigai
/// runs checkpoints' `git` and the `bash` tool only from PATH's absolute folders outside
/// the project: the planted programs never run, the real ones do (the snapshot works:
/// `/undo` brings back what `bash` deleted).
#[test]
fn checkpoints_and_bash_never_run_a_program_the_repository_put_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let sys = std::env::var("PATH").unwrap();
    let p = Project::new(&[("doomed.txt", "keep me\n")]);
    let ran = p.home.path().join("planted-ran");
    for dir in ["node_modules/.bin", ".", "bin"] {
        std::fs::create_dir_all(p.path(dir)).unwrap();
        for name in ["git", "bash"] {
            let f = p.path(dir).join(name);
            std::fs::write(&f, format!("#!/bin/sh\necho \"$0 $*\" >> {}\n", ran.display())).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let elsewhere = p.home.path().join("linked-bin");
    std::os::unix::fs::symlink(p.path("bin"), &elsewhere).unwrap();
    for entry in [
        "node_modules/.bin".to_string(),
        ".".to_string(),
        String::new(),
        p.path("bin").display().to_string(),
        elsewhere.display().to_string(),
    ] {
        std::fs::write(p.path("doomed.txt"), "keep me\n").unwrap();
        let fake = FakeProvider::start();
        fake.push(Reply::tool_calls(&[(
            "c1",
            "bash",
            &bash("rm doomed.txt && echo the-real-bash"),
        )]));
        fake.push(Reply::text("ok"));
        let mut child = common::ikigai(p.home.path())
            .current_dir(p.dir())
            .args(["--base-url", &fake.base_url])
            .env("OPENAI_API_KEY", "k")
            .env("PATH", format!("{entry}:{sys}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"go\n/undo\n").unwrap();
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(
            !ran.exists(),
            "PATH entry {entry:?}: the repository's program ran: {}",
            std::fs::read_to_string(&ran).unwrap_or_default()
        );
        assert!(stdout.contains("the-real-bash"), "{stdout}\n{stderr}");
        assert_eq!(
            p.read("doomed.txt").as_deref(),
            Some("keep me\n"),
            "PATH entry {entry:?}: the snapshot did not work:\n{stderr}"
        );
    }
}

/// A folder outside the project (beside it, in the same home) holding `files`.
fn outside(p: &Project, files: &[(&str, &str)]) -> PathBuf {
    let out = p.home.path().join("outside");
    std::fs::create_dir_all(&out).unwrap();
    for (name, text) in files {
        std::fs::write(out.join(name), text).unwrap();
    }
    out
}

#[test]
fn undo_never_follows_a_folder_that_became_a_link_since_the_turn() {
    let p = Project::new(&[("README", "a project\n")]);
    std::fs::create_dir(p.path("d")).unwrap();
    std::fs::write(p.path("d/old.txt"), "old\n").unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "file_write", &write("d/new.txt", "made\n")),
        ("c2", "file_edit", &edit("d/old.txt", "old", "edited")),
    ]));
    fake.push(Reply::text("Done."));
    let out = p.run(&fake, &[], "change\n");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    // Since the turn, the folder was swapped for a link to a folder outside holding
    // files of the same names.
    let outside = outside(&p, &[("new.txt", "mine\n"), ("old.txt", "mine too\n")]);
    std::fs::rename(p.path("d"), p.path("d.moved")).unwrap();
    std::os::unix::fs::symlink(&outside, p.path("d")).unwrap();
    let undone = p.undo(&["--force"]);
    let said = s(&undone.stdout);
    assert_eq!(
        undone.status.code(),
        Some(1),
        "some files were not put back: {said}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("new.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("old.txt")).unwrap(),
        "mine too\n"
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        2,
        "nothing was added outside"
    );
    for name in ["d/new.txt", "d/old.txt"] {
        assert!(
            said.contains(&format!("not restored: {name}: "))
                && said.contains("is a symbolic link (not followed)"),
            "{name}: {said}"
        );
    }
}

#[test]
fn an_edit_through_a_link_is_undone_at_the_file_it_changed() {
    let p = Project::new(&[("real.txt", "one\n")]);
    std::os::unix::fs::symlink("real.txt", p.path("link.txt")).unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_edit",
        &edit("link.txt", "one", "two"),
    )]));
    fake.push(Reply::text("Done."));
    let out = p.run(&fake, &[], "change\n");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(p.read("real.txt").as_deref(), Some("two\n"));
    let undone = p.undo(&[]);
    assert_eq!(
        undone.status.code(),
        Some(0),
        "{}{}",
        s(&undone.stdout),
        s(&undone.stderr)
    );
    assert_eq!(p.read("real.txt").as_deref(), Some("one\n"));
    assert!(
        std::fs::symlink_metadata(p.path("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        s(&undone.stdout).contains("restored real.txt (+1 −1)"),
        "{}",
        s(&undone.stdout)
    );
}

#[test]
fn a_file_replaced_since_by_a_link_or_a_hard_link_is_put_back_as_the_name_it_is() {
    let p = Project::new(&[("edited.txt", "before\n")]);
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "file_edit", &edit("edited.txt", "before", "after")),
        ("c2", "file_write", &write("created.txt", "new\n")),
    ]));
    fake.push(Reply::text("Done."));
    let out = p.run(&fake, &[], "change\n");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    // Since the turn: the edited file is a hard link to a file outside, the created one a
    // link to another.
    let outside = outside(&p, &[("hard.txt", "outside\n"), ("soft.txt", "outside\n")]);
    std::fs::remove_file(p.path("edited.txt")).unwrap();
    std::fs::hard_link(outside.join("hard.txt"), p.path("edited.txt")).unwrap();
    std::fs::remove_file(p.path("created.txt")).unwrap();
    std::os::unix::fs::symlink(outside.join("soft.txt"), p.path("created.txt")).unwrap();
    let undone = p.undo(&["--force"]);
    assert_eq!(
        undone.status.code(),
        Some(0),
        "{}{}",
        s(&undone.stdout),
        s(&undone.stderr)
    );
    assert_eq!(p.read("edited.txt").as_deref(), Some("before\n"));
    assert!(
        std::fs::symlink_metadata(p.path("created.txt")).is_err(),
        "the link is removed"
    );
    use std::os::unix::fs::MetadataExt;
    let hard = std::fs::metadata(outside.join("hard.txt")).unwrap();
    assert_eq!(
        hard.nlink(),
        1,
        "the project's name for it was replaced, not the file"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("hard.txt")).unwrap(),
        "outside\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("soft.txt")).unwrap(),
        "outside\n"
    );
}
