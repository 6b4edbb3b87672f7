use super::*;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_ALLOW_PROTOCOL", "file")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

const CLONED: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                      [remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                      [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";

#[test]
fn a_cloned_config_is_plain_and_commands_hooks_and_includes_are_not() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(runs_own_programs(d.path()), None, "no repository");
    let git_dir = d.path().join(".git");
    std::fs::create_dir_all(git_dir.join("hooks")).unwrap();
    std::fs::write(git_dir.join("hooks/pre-commit.sample"), "").unwrap();
    std::fs::write(git_dir.join("config"), CLONED).unwrap();
    assert_eq!(runs_own_programs(&d.path().join("sub")), None);
    for bad in [
        "[core]\n\tfsmonitor = touch x\n",
        "[core] pager = less\n",
        "[core]\n\tsshCommand = x\n",
        "[core]\n\teditor = x\n",
        "[core]\n\thooksPath = h\n",
        "[Core]\n\tHooksPath = h\n",
        "[diff]\n\texternal = x\n",
        "[diff \"x\"]\n\ttextconv = x\n",
        "[filter \"x\"]\n\tprocess = x\n",
        "[filter \"x\"]\n\tclean = x\n",
        "[include]\n\tpath = ../evil\n",
        "[includeIf \"gitdir:/\"]\n\tpath = ../evil\n",
        "[sequence]\n\teditor = x\n",
        "[credential]\n\thelper = x\n",
        "[gpg]\n\tprogram = x\n",
        "[alias]\n\tst = !x\n",
        "[core]\n\tfsmonitor = \\\n  touch x\n",
    ] {
        std::fs::write(git_dir.join("config"), format!("{CLONED}{bad}")).unwrap();
        assert!(runs_own_programs(d.path()).is_some(), "{bad}");
    }
    std::fs::write(git_dir.join("config"), CLONED).unwrap();
    std::fs::write(git_dir.join("hooks/post-index-change"), "").unwrap();
    assert!(runs_own_programs(d.path()).unwrap().contains("post-index-change"));
}

/// Seen: `git status` ran `core.fsmonitor` from `config.worktree`, from a submodule's
/// config in `.git/modules/`, and from an embedded repository's config.
#[test]
fn every_configuration_git_reads_is_checked() {
    // config.worktree (with extensions.worktreeConfig).
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q"]);
    git(d.path(), &["config", "extensions.worktreeConfig", "true"]);
    assert_eq!(runs_own_programs(d.path()), None);
    std::fs::write(
        d.path().join(".git/config.worktree"),
        "[core]\n\tfsmonitor = touch x\n",
    )
    .unwrap();
    assert!(runs_own_programs(d.path()).unwrap().contains("config.worktree"));

    // A submodule's config under .git/modules/.
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q"]);
    let m = d.path().join(".git/modules/lib");
    std::fs::create_dir_all(m.join("objects")).unwrap();
    std::fs::create_dir_all(m.join("refs")).unwrap();
    std::fs::write(m.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(m.join("config"), "[core]\n\tbare = false\n").unwrap();
    assert_eq!(runs_own_programs(d.path()), None);
    std::fs::write(m.join("config"), "[core]\n\tfsmonitor = touch x\n").unwrap();
    assert!(runs_own_programs(d.path()).unwrap().contains("modules"));

    // An embedded repository the index records (a gitlink), populated.
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q"]);
    let inner = d.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    git(&inner, &["init", "-q"]);
    std::fs::write(inner.join("f"), "x").unwrap();
    git(&inner, &["add", "f"]);
    git(&inner, &["commit", "-qm", "x"]);
    git(d.path(), &["add", "inner"]);
    assert_eq!(runs_own_programs(d.path()), None);
    git(&inner, &["config", "core.fsmonitor", "touch x"]);
    let why = runs_own_programs(d.path()).unwrap();
    assert!(why.contains("submodule inner"), "{why}");
}

#[test]
fn a_git_file_a_bare_folder_and_an_unreadable_index_are_followed_or_fail_closed() {
    // A `.git` file pointing elsewhere: that directory's config counts.
    let d = tempfile::tempdir().unwrap();
    let elsewhere = d.path().join("store");
    std::fs::create_dir_all(elsewhere.join("hooks")).unwrap();
    std::fs::write(elsewhere.join("config"), "[core]\n\tfsmonitor = x\n").unwrap();
    let proj = d.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join(".git"), "gitdir: ../store\n").unwrap();
    assert!(runs_own_programs(&proj).is_some());
    std::fs::write(proj.join(".git"), "not a gitdir line\n").unwrap();
    assert!(
        runs_own_programs(&proj).is_some(),
        "an unreadable .git file fails closed"
    );

    // A folder that is itself a git directory (bare): git uses its `config`.
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("objects")).unwrap();
    std::fs::create_dir(d.path().join("refs")).unwrap();
    std::fs::write(d.path().join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(d.path().join("config"), "[core]\n\tfsmonitor = touch x\n").unwrap();
    assert!(runs_own_programs(d.path()).is_some());

    // An index this reader does not know.
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q"]);
    std::fs::write(d.path().join(".git/index"), "DIRC\0\0\0\x07\0\0\0\0").unwrap();
    assert!(runs_own_programs(d.path()).unwrap().contains("index"));
}
