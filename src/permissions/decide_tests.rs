use super::*;
use crate::policy::rule::Source;
use serde_json::json;

fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
    let p = |v: &[&str]| {
        v.iter()
            .map(|t| Rule::parse(t, Source::User, None).unwrap())
            .collect()
    };
    Rules {
        allow: p(allow),
        ask: p(ask),
        deny: p(deny),
    }
}

fn bash(cmd: &str) -> String {
    json!({ "command": cmd }).to_string()
}

fn path(p: &str) -> String {
    json!({ "path": p, "content": "x" }).to_string()
}

#[test]
fn deny_wins_over_ask_over_allow_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let p = Policy::new(
        rules(
            &["bash(rm *)", "bash(git *)"],
            &["bash(git push*)"],
            &["bash(rm -rf*)"],
        ),
        dir.path(),
    );
    for mode in Mode::ALL {
        let d = p.decide(mode, "bash", &bash("rm -rf build"));
        assert_eq!(d.verdict, Verdict::Deny, "{mode}");
        assert!(matches!(&d.by, By::Rule { list: List::Deny, rule, .. } if rule == "bash(rm -rf*)"));
        let d = p.decide(mode, "bash", &bash("git push origin"));
        assert_eq!(d.verdict, Verdict::Ask, "{mode}");
        assert_eq!(p.decide(mode, "bash", &bash("rm x")).verdict, Verdict::Allow);
        assert_eq!(
            p.decide(mode, "bash", &bash("git commit -m x")).verdict,
            Verdict::Allow
        );
    }
}

#[test]
fn a_compound_command_is_allowed_only_when_every_part_is() {
    let dir = tempfile::tempdir().unwrap();
    let p = Policy::new(rules(&["bash(cargo test*)"], &[], &["bash(curl *)"]), dir.path());
    let ask = |c: &str| p.decide(Mode::Ask, "bash", &bash(c));
    assert_eq!(ask("cargo test && ls").verdict, Verdict::Allow, "ls is read-only");
    assert_eq!(ask("cargo test && rm -rf /").verdict, Verdict::Ask);
    assert_eq!(ask("cargo test; touch x").verdict, Verdict::Ask);
    assert_eq!(ask("cargo test $(touch x)").verdict, Verdict::Ask);
    assert_eq!(
        ask("cargo test > out.txt").verdict,
        Verdict::Ask,
        "a write to a file"
    );
    // Deny looks into every part, in auto too.
    for c in [
        "ls && curl x",
        "echo $(curl x)",
        "sudo curl x",
        "bash -c 'curl x'",
        "(curl x)",
    ] {
        assert_eq!(
            p.decide(Mode::Auto, "bash", &bash(c)).verdict,
            Verdict::Deny,
            "{c}"
        );
    }
    // A name computed at run time cannot be cleared of a deny rule.
    assert_eq!(p.decide(Mode::Auto, "bash", &bash("$c x")).verdict, Verdict::Ask);
}

#[test]
fn modes_without_rules() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let p = Policy::new(Rules::default(), dir.path());
    let d = |m, n: &str, a: &str| p.decide(m, n, a).verdict;
    assert_eq!(d(Mode::Auto, "bash", &bash("rm -rf build")), Verdict::Allow);
    assert_eq!(d(Mode::Ask, "bash", &bash("rm -rf build")), Verdict::Ask);
    assert_eq!(d(Mode::Ask, "bash", &bash("git status")), Verdict::Allow);
    assert_eq!(d(Mode::Ask, "file_edit", &path("src/a.rs")), Verdict::Allow);
    assert_eq!(
        d(Mode::Ask, "file_write", &path("../elsewhere.txt")),
        Verdict::Ask
    );
    assert_eq!(d(Mode::Ask, "file_write", &path("/etc/x")), Verdict::Ask);
    assert_eq!(d(Mode::Ask, "file_read", &path("/etc/hosts")), Verdict::Allow);
    assert_eq!(d(Mode::Ask, "github__create_issue", "{}"), Verdict::Ask);
    assert_eq!(d(Mode::ReadOnly, "file_edit", &path("src/a.rs")), Verdict::Deny);
    assert_eq!(d(Mode::ReadOnly, "bash", &bash("touch x")), Verdict::Deny);
    assert_eq!(d(Mode::ReadOnly, "bash", &bash("ls | wc -l")), Verdict::Allow);
    assert_eq!(
        d(Mode::ReadOnly, "grep", &json!({"pattern": "x"}).to_string()),
        Verdict::Allow
    );
}

#[test]
fn file_rules_see_through_dot_dot_and_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("src/out")).unwrap();
    let p = Policy::new(
        rules(&["file_write(src/**)"], &[], &["file_read(.env)"]),
        dir.path(),
    );
    assert_eq!(
        p.decide(Mode::ReadOnly, "file_write", &path("src/a.rs")).verdict,
        Verdict::Allow
    );
    assert_eq!(
        p.decide(Mode::ReadOnly, "file_write", &path("src/../b.rs"))
            .verdict,
        Verdict::Deny
    );
    assert_eq!(
        p.decide(Mode::Ask, "file_write", &path("src/out/x")).verdict,
        Verdict::Ask,
        "the link leaves the project"
    );
    assert_eq!(
        p.decide(Mode::Auto, "file_read", &path("sub/.env")).verdict,
        Verdict::Deny
    );
    assert_eq!(
        p.decide(Mode::Auto, "bash", &bash("echo x > .env")).verdict,
        Verdict::Allow,
        "a read rule is not a write rule"
    );
    let p = Policy::new(rules(&[], &[], &["file_write(.env)"]), dir.path());
    assert_eq!(
        p.decide(Mode::Auto, "bash", &bash("echo x > .env")).verdict,
        Verdict::Deny
    );
}

#[test]
fn always_suggests_prefixes_folders_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let p = Policy::new(Rules::default(), dir.path());
    assert_eq!(
        p.suggest(Mode::Ask, "bash", &bash("cargo test --release")),
        ["bash(cargo test *)"]
    );
    assert_eq!(
        p.suggest(Mode::Ask, "bash", &bash("ls && rm -rf x")),
        ["bash(rm *)"]
    );
    assert_eq!(
        p.suggest(Mode::Ask, "bash", &bash("make > log")),
        ["bash(make *)", "file_write(/log)"]
    );
    assert!(p.suggest(Mode::Ask, "bash", &bash("$x")).is_empty());
    assert_eq!(
        p.suggest(Mode::Ask, "file_write", &path("src/a/b.rs")),
        ["file_write(/src/a/**)"]
    );
    assert_eq!(p.suggest(Mode::Ask, "mcp__x", "{}"), ["mcp__x"]);
    // What "always" stores allows the call next time.
    for (tool, args) in [
        ("bash", bash("cargo test --release")),
        ("file_write", path("src/a/b.rs")),
    ] {
        let texts = p.suggest(Mode::Ask, tool, &args);
        let allow = texts
            .iter()
            .map(|t| Rule::parse(t, Source::Remembered, None).unwrap())
            .collect();
        let q = Policy::new(
            Rules {
                allow,
                ..Rules::default()
            },
            dir.path(),
        );
        assert_eq!(
            q.decide(Mode::ReadOnly, tool, &args).verdict,
            Verdict::Allow,
            "{tool}"
        );
    }
}

#[test]
fn always_for_a_file_outside_the_project_allows_that_folder_only() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let p = Policy::new(Rules::default(), dir.path());
    let file = outside.path().join("notes.txt");
    let args = path(file.to_str().unwrap());
    assert_eq!(p.decide(Mode::Ask, "file_write", &args).verdict, Verdict::Ask);
    let texts = p.suggest(Mode::Ask, "file_write", &args);
    assert_eq!(texts.len(), 1);
    assert!(texts[0].starts_with("file_write(//"), "{texts:?}");
    let allow = texts
        .iter()
        .map(|t| Rule::parse(t, Source::Remembered, None).unwrap())
        .collect();
    let q = Policy::new(
        Rules {
            allow,
            ..Rules::default()
        },
        dir.path(),
    );
    assert_eq!(q.decide(Mode::Ask, "file_write", &args).verdict, Verdict::Allow);
    let elsewhere = path("/var/tmp/other.txt");
    assert_eq!(
        q.decide(Mode::Ask, "file_write", &elsewhere).verdict,
        Verdict::Ask
    );
}

#[test]
fn web_fetch_asks_in_ask_mode_and_its_rules_are_globs_over_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let url = |u: &str| json!({ "url": u }).to_string();
    let none = Policy::new(Rules::default(), dir.path());
    assert_eq!(
        none.decide(Mode::Auto, "web_fetch", &url("https://docs.rs/"))
            .verdict,
        Verdict::Allow
    );
    let d = none.decide(Mode::Ask, "web_fetch", &url("HTTPS://Docs.rs/htmd"));
    assert_eq!(d.verdict, Verdict::Ask);
    assert!(
        d.reason.contains("https://docs.rs/htmd reaches the network"),
        "{}",
        d.reason
    );
    let d = none.decide(Mode::ReadOnly, "web_fetch", &url("https://docs.rs/"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(
        d.reason
            .contains("reaches the network, and approval mode read-only"),
        "{}",
        d.reason
    );
    assert_eq!(
        none.suggest(Mode::Ask, "web_fetch", &url("http://127.0.0.1:8080/a/b?c")),
        ["web_fetch(http://127.0.0.1:8080/*)"]
    );
    let p = Policy::new(
        rules(
            &["web_fetch(https://docs.rs/*)"],
            &[],
            &["web_fetch(*://evil.example/*)"],
        ),
        dir.path(),
    );
    for mode in [Mode::Ask, Mode::ReadOnly] {
        let d = p.decide(mode, "web_fetch", &url("https://DOCS.rs/htmd/latest"));
        assert_eq!(d.verdict, Verdict::Allow, "{mode}");
        for elsewhere in [
            "https://docs.rs.evil.example/",
            "https://docs.rs@evil.example/",
            "http://docs.rs/",
        ] {
            assert_ne!(
                p.decide(mode, "web_fetch", &url(elsewhere)).verdict,
                Verdict::Allow,
                "{elsewhere}"
            );
        }
    }
    assert_eq!(
        p.decide(Mode::Auto, "web_fetch", &url("http://evil.example/x"))
            .verdict,
        Verdict::Deny
    );
}

#[test]
fn a_path_rule_covers_the_paths_a_bash_line_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "x").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink(".env", dir.path().join("link")).unwrap();
    let p = Policy::new(rules(&[], &[], &["file_read(.env)"]), dir.path());
    let d = |c: &str| p.decide(Mode::Auto, "bash", &bash(c)).verdict;
    for named in [
        "cat .env",
        "grep x sub/.env",
        "head --lines=5 ./.env",
        "sort --files0-from=.env",
        "cat < .env",
        "cat link",
        "ls && cat sub/../.env",
        "ssh host 'cat .env'",
    ] {
        assert_eq!(d(named), Verdict::Deny, "{named}");
    }
    // A read rule is not a write rule; what the line does not name is not seen.
    for other in [
        "echo x > .env",
        "cat README.md",
        "ls",
        "cat .envrc",
        "grep -r x .",
    ] {
        assert_eq!(d(other), Verdict::Allow, "{other}");
    }
    let p = Policy::new(rules(&[], &[], &["file_write(.env)"]), dir.path());
    let d = |c: &str| p.decide(Mode::Auto, "bash", &bash(c)).verdict;
    assert_eq!(d("cp a .env"), Verdict::Deny);
    assert_eq!(d("echo x >> sub/.env"), Verdict::Deny);
    assert_eq!(d("echo x > $F"), Verdict::Ask, "a redirection named at run time");
    assert_eq!(d("cd sub && touch x"), Verdict::Ask, "paths after a cd");
    assert_eq!(d("touch x"), Verdict::Allow);
}

#[test]
fn a_rule_that_may_match_asks_and_one_that_cannot_lets_it_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = Policy::new(rules(&[], &[], &["bash(rm -rf*)"]), dir.path());
    let d = |c: &str| p.decide(Mode::Auto, "bash", &bash(c));
    for may in [
        "rm $X",
        "/bin/rm $X",
        "strace rm -rf x",
        "prlimit --nofile=1 /bin/rm -rf x",
        "foo --exec='rm -rf x'",
        "unknown-tool $X",
        "echo 'rm -rf x' | at-like now",
        "git -c core.pager='rm -rf x' log",
    ] {
        let decision = d(may);
        assert_eq!(decision.verdict, Verdict::Ask, "{may}");
        assert!(decision.reason.contains("may"), "{may}: {}", decision.reason);
    }
    for runs in [
        "ls $X",
        "cat *.txt",
        "echo rm -rf x",
        "grep -rn 'rm -rf' src",
        "cargo test -- --rm",
        "wc -l \"$f\"",
    ] {
        assert_eq!(d(runs).verdict, Verdict::Allow, "{runs}");
    }
    // Not seen at all: asked while any bash rule is in force, run without one.
    assert_eq!(d("eval \"$X\"").verdict, Verdict::Ask);
    let none = Policy::new(Rules::default(), dir.path());
    assert_eq!(
        none.decide(Mode::Auto, "bash", &bash("eval \"$X\"")).verdict,
        Verdict::Allow
    );
}

#[test]
fn allow_rules_cover_words_decided_at_run_time_only_when_they_end_open() {
    let dir = tempfile::tempdir().unwrap();
    let p = Policy::new(
        rules(&["bash(cargo test*)", "bash(rm -r ??)"], &[], &[]),
        dir.path(),
    );
    let d = |c: &str| p.decide(Mode::Ask, "bash", &bash(c)).verdict;
    assert_eq!(d("cargo test $ARGS"), Verdict::Allow);
    assert_eq!(d("cargo test --lib"), Verdict::Allow);
    assert_eq!(d("rm -r ab"), Verdict::Allow);
    assert_eq!(d("rm -r $X"), Verdict::Ask, "`??` does not cover any value");
    assert_eq!(d("cargo $X"), Verdict::Ask);
    // A line that cannot all be seen is allowed by `bash` (or `bash(*)`) alone.
    assert_eq!(d("eval \"$X\""), Verdict::Ask);
    for all in ["bash", "bash(*)"] {
        let p = Policy::new(rules(&[all], &[], &[]), dir.path());
        assert_eq!(
            p.decide(Mode::Ask, "bash", &bash("eval \"$X\"")).verdict,
            Verdict::Allow,
            "{all}"
        );
    }
}

#[test]
fn web_fetch_rules_match_parts_and_a_loopback_deny_covers_every_loopback_name() {
    let dir = tempfile::tempdir().unwrap();
    let url = |u: &str| json!({ "url": u }).to_string();
    let p = Policy::new(
        rules(
            &["web_fetch(https://*.github.com/*)"],
            &[],
            &["web_fetch(http://127.0.0.1*)"],
        ),
        dir.path(),
    );
    assert_eq!(
        p.decide(Mode::Ask, "web_fetch", &url("https://api.github.com/x"))
            .verdict,
        Verdict::Allow
    );
    assert_eq!(
        p.decide(Mode::Ask, "web_fetch", &url("https://evil.example/.github.com/"))
            .verdict,
        Verdict::Ask
    );
    for local in [
        "http://localhost:8080/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "http://127.1/",
        "http://[::1]:9/",
    ] {
        assert_eq!(
            p.decide(Mode::Auto, "web_fetch", &url(local)).verdict,
            Verdict::Deny,
            "{local}"
        );
    }
    assert_eq!(
        p.decide(Mode::Auto, "web_fetch", &url("not a url")).verdict,
        Verdict::Ask,
        "a URL that does not parse cannot be cleared of the deny rule"
    );
}

#[test]
fn an_argument_rule_sees_the_keys_sorted_whatever_order_the_model_wrote_them_in() {
    let dir = tempfile::tempdir().unwrap();
    let p = Policy::new(
        rules(
            &[],
            &[],
            &[
                r#"srv__mail(*"to":"boss"*)"#,
                r#"srv__put(*"a":1,"b":*"c":2,"d":*)"#,
            ],
        ),
        dir.path(),
    );
    for (tool, args) in [
        ("srv__mail", r#"{"body":"hi","to":"boss"}"#),
        ("srv__mail", r#"{"to":"boss","body":"hi"}"#),
        ("srv__mail", r#"{ "to" : "boss" , "body" : "hi" }"#),
        ("srv__put", r#"{"a":1,"b":{"c":2,"d":3}}"#),
        ("srv__put", r#"{"b":{"d":3,"c":2},"a":1}"#),
        ("srv__put", r#"{"b":{"d":[{"z":1,"y":2}],"c":2},"a":1}"#),
    ] {
        assert_eq!(p.decide(Mode::Auto, tool, args).verdict, Verdict::Deny, "{args}");
    }
    assert_eq!(
        p.decide(Mode::Auto, "srv__mail", r#"{"body":"hi","to":"team"}"#)
            .verdict,
        Verdict::Allow
    );
}
