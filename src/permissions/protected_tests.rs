use super::*;

/// A home folder with a project in it; `why` computed with this environment (never the
/// process's own).
struct Home {
    _t: tempfile::TempDir,
    home: PathBuf,
    vars: Vec<(&'static str, String)>,
}

impl Home {
    fn new() -> Home {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap().join("home");
        std::fs::create_dir_all(home.join("proj/.git")).unwrap();
        std::fs::create_dir_all(home.join(".local/bin")).unwrap();
        std::fs::create_dir_all(home.join("dotfiles")).unwrap();
        std::fs::write(home.join("dotfiles/zshrc"), "").unwrap();
        std::os::unix::fs::symlink("dotfiles/zshrc", home.join(".zshrc")).unwrap();
        let path = format!("{}:/usr/bin:relative/bin", home.join(".local/bin").display());
        Home {
            vars: vec![("HOME", home.display().to_string()), ("PATH", path)],
            home,
            _t: t,
        }
    }

    fn why(&self, root: &str, abs: &str) -> Option<String> {
        let env = |k: &str| self.vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        let root = self.home.join(root);
        let known = Known::compute(&root, Vec::new(), &env);
        known.why(&root, &self.home.join(abs))
    }
}

#[test]
fn files_that_run_later_are_protected_wherever_the_working_directory_is() {
    let h = Home::new();
    std::fs::write(
        h.home.join("proj/.git/config"),
        "[core]\n\trepositoryformatversion = 0\n[Core]\n\tHooksPath = \"tools/hooks\"\n",
    )
    .unwrap();
    std::fs::write(
        h.home.join(".gitconfig"),
        "[core]\n  hooksPath = ~/.global-hooks\n",
    )
    .unwrap();
    let cases = [
        // The reported ones, run in the home folder.
        (".bashrc", "a shell start-up file"),
        (".profile", "a shell start-up file"),
        (".gitconfig", "git's configuration"),
        (".ssh/authorized_keys", "ssh's settings"),
        // The same class, forms of our own.
        (".zshenv", "a shell start-up file"),
        (".bash_logout", "a shell start-up file"),
        (".inputrc", "a shell start-up file"),
        (".config/fish/conf.d/x.fish", "a shell start-up file"),
        (".ssh/config", "ssh's settings"),
        (".config/git/config", "git's configuration"),
        (".vimrc", "an editor's start-up"),
        (".config/nvim/init.lua", "an editor's start-up"),
        (".config/autostart/x.desktop", "started at login"),
        (".config/systemd/user/x.service", "started at login"),
        (".cargo/config.toml", "a tool's settings"),
        (".xsessionrc", "a login start-up file"),
        // Through a link: the dotfile's real file.
        ("dotfiles/zshrc", "a shell start-up file"),
        // A folder on PATH.
        (".local/bin/ls", "a folder on PATH"),
        // ikigai's own.
        (".ikigai/tools/x", "ikigai's own"),
        (".config/ikigai/config.toml", "ikigai's own"),
        (".local/share/ikigai/trusted.json", "ikigai's own"),
        // Any project's git, ikigai and hook settings.
        ("proj/.git/hooks/pre-commit", ".git settings"),
        ("proj/.ikigai/commands/r.md", ".ikigai settings"),
        ("proj/.husky/pre-commit", "git hooks"),
        ("proj/.pre-commit-config.yaml", "git hooks"),
        ("proj/.vscode/tasks.json", "editor's settings for this folder"),
        ("proj/sub/.nvim.lua", "editor's settings for this folder"),
        // core.hooksPath: the repository's (relative to its top) and the user's.
        ("proj/tools/hooks/pre-push", "core.hooksPath"),
        (".global-hooks/pre-commit", "core.hooksPath"),
    ];
    for root in ["", "proj", "proj/sub"] {
        for (path, what) in cases {
            let why = h.why(root, path);
            assert!(
                why.as_deref().is_some_and(|w| w.contains(what)),
                "run in ~/{root}: {path}: {why:?}"
            );
        }
    }
    for ordinary in [
        "notes.txt",
        ".bashrc.orig",
        ".local/share/notes.txt",
        ".local/bin/sub/x",
        "proj/src/main.rs",
        "proj/Makefile",
        "proj/package.json",
        "proj/tools/build.sh",
        "proj/relative/bin/x",
    ] {
        assert_eq!(h.why("", ordinary), None, "{ordinary}");
        assert_eq!(h.why("proj", ordinary), None, "{ordinary}");
    }
}

#[test]
fn husky_hooks_and_the_system_are_covered() {
    let h = Home::new();
    std::fs::write(h.home.join("proj/.git/config"), "[core] hooksPath = .hooks/_\n").unwrap();
    let why = h.why("proj", "proj/.hooks/pre-commit");
    assert!(
        why.as_deref().is_some_and(|w| w.contains("core.hooksPath")),
        "{why:?}"
    );
    assert!(h.why("proj", "proj/.hooks/_/h").is_some());
    let env = |k: &str| (k == "HOME").then(|| "/nonexistent-home".to_string());
    let known = Known::compute(Path::new("/"), Vec::new(), &env);
    for p in [
        "/etc/profile.d/x.sh",
        "/etc/ld.so.preload",
        "/var/spool/cron/crontabs/root",
    ] {
        assert!(known.why(Path::new("/"), Path::new(p)).is_some(), "{p}");
    }
    assert_eq!(known.why(Path::new("/"), Path::new("/srv/data/x.txt")), None);
}

#[test]
fn the_files_the_project_settings_run_are_protected() {
    let h = Home::new();
    let p = h.home.join("proj");
    std::fs::create_dir_all(p.join("scripts")).unwrap();
    std::fs::create_dir_all(p.join(".ikigai/tools")).unwrap();
    std::fs::write(p.join("scripts/mcp.sh"), "").unwrap();
    std::fs::write(p.join("scripts/tool.sh"), "").unwrap();
    std::os::unix::fs::symlink("../../scripts/tool.sh", p.join(".ikigai/tools/mytool")).unwrap();
    std::fs::write(
        p.join(".ikigai/config.toml"),
        "[mcp_servers.helper]\ncommand = \"sh\"\nargs = [\"scripts/mcp.sh\"]\n",
    )
    .unwrap();
    let why = h.why("proj", "proj/scripts/mcp.sh");
    assert!(
        why.as_deref().is_some_and(|w| w.contains("MCP server helper")),
        "{why:?}"
    );
    let why = h.why("proj", "proj/scripts/tool.sh");
    assert!(
        why.as_deref().is_some_and(|w| w.contains("project tool mytool")),
        "{why:?}"
    );
    assert_eq!(h.why("proj", "proj/scripts/other.sh"), None);
}

#[test]
fn hooks_path_is_read_from_core_only() {
    let text = "[core]\n\tfsmonitor = x\n\thooksPath=a\n[alias]\n\thooksPath = b\n[core \"x\"]\n# hooksPath = c\n[ CORE ]  hookspath = \"d\"\n";
    assert_eq!(hooks_path(text), ["a", "d"]);
}

#[test]
fn the_cache_follows_the_settings_files() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(p.join(".ikigai")).unwrap();
    std::fs::write(p.join("a.sh"), "").unwrap();
    std::fs::write(p.join("b.sh"), "").unwrap();
    let config = |arg: &str| {
        std::fs::write(
            p.join(".ikigai/config.toml"),
            format!("[mcp_servers.s]\ncommand = \"sh\"\nargs = [\"{arg}\"]\n"),
        )
        .unwrap();
    };
    config("a.sh");
    assert!(why(&p, &p.join("a.sh")).is_some());
    assert!(why(&p, &p.join("b.sh")).is_none());
    config("b.sh");
    assert!(why(&p, &p.join("a.sh")).is_none());
    assert!(why(&p, &p.join("b.sh")).is_some());
}

#[test]
fn the_readme_lists_every_entry_of_the_table() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("### Files that run later")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .unwrap();
    for e in TABLE {
        let shown = match e.base {
            Base::Home => format!("`~/{}", e.path),
            Base::Config => format!("`~/.config/{}", e.path),
            Base::Root | Base::Named => format!("`{}", e.path),
        };
        assert!(section.contains(&shown), "the README's table lacks {shown}`");
    }
}
