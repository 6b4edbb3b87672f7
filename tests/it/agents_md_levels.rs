//! AGENTS.md at every level, and a repository's settings from a subfolder. The user's
//! global AGENTS.md, then one file per folder from the git root down to the working
//! directory (CLAUDE.md where no AGENTS.md stands), each followed by its `@path` imports,
//! reach the vendor in that order; `/memory` lists them with their sizes. Run in a
//! subfolder, the repository root's `.ikigai/` applies under the root's trust: `ikigai
//! trust` there trusts the root, and trusting only the subfolder loads none of it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

const KEY: &str = "sk-levels-KEY-0123456789";

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(home: &Path, dir: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = common::ikigai(home)
        .current_dir(dir)
        .args(args)
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn system_prompt(fake: &FakeProvider, i: usize) -> String {
    fake.requests()[i].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Where each marker stands in `text`; panics naming the one missing.
fn positions(text: &str, markers: &[&str]) -> Vec<usize> {
    markers
        .iter()
        .map(|m| {
            text.find(m)
                .unwrap_or_else(|| panic!("{m} missing from:\n{text}"))
        })
        .collect()
}

#[test]
fn every_level_is_sent_in_order_with_claude_md_where_no_agents_md_stands() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let global = home.join(".config/ikigai");
    let repo = home.join("work/repo");
    let deep = repo.join("crates/core/src");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(global.join("AGENTS.md"), "G-GLOBAL rules.\n").unwrap();
    // Above the repository: never read.
    std::fs::write(home.join("work/AGENTS.md"), "G-ABOVE\n").unwrap();
    std::fs::write(repo.join("AGENTS.md"), "G-ROOT. Style: @docs/style.md\n").unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "G-ROOT-CLAUDE\n").unwrap();
    std::fs::create_dir(repo.join("docs")).unwrap();
    std::fs::write(repo.join("docs/style.md"), "G-STYLE\n").unwrap();
    std::fs::write(repo.join("crates/CLAUDE.md"), "G-CRATES-CLAUDE\n").unwrap();
    std::fs::write(deep.join("AGENTS.md"), "G-DEEP\n").unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("ok"));
    let out = run(home, &deep, &["--base-url", &fake.base_url], "hi\n/memory\n");
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let prompt = system_prompt(&fake, 0);
    let at = positions(
        &prompt,
        &[
            "G-GLOBAL",
            "G-ROOT.",
            "G-STYLE",
            "G-CRATES-CLAUDE",
            "G-DEEP",
            "Working directory:",
        ],
    );
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{prompt}");
    assert!(
        !prompt.contains("G-ABOVE") && !prompt.contains("G-ROOT-CLAUDE"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(
            "The user's instructions ({}",
            global.join("AGENTS.md").display()
        )),
        "{prompt}"
    );
    // /memory: the same files, in the same order, with their sizes.
    let shown = format!("{}{}", s(&out.stdout), err);
    let listed = positions(
        &shown,
        &[
            &format!(
                "1. {} (16 bytes, yours, global)",
                global.join("AGENTS.md").display()
            ),
            &format!(
                "2. {} (30 bytes, the project's)",
                repo.join("AGENTS.md").display()
            ),
            &format!(
                "3. {} (8 bytes, imported by",
                repo.join("docs/style.md").display()
            ),
            &format!(
                "4. {} (16 bytes, the project's)",
                repo.join("crates/CLAUDE.md").display()
            ),
            &format!("5. {} (7 bytes, the project's)", deep.join("AGENTS.md").display()),
        ],
    );
    assert!(listed.windows(2).all(|w| w[0] < w[1]), "{shown}");
}

fn tool(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn offered(fake: &FakeProvider, i: usize) -> Vec<String> {
    let body = &fake.requests()[i].body;
    body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_subfolder_uses_the_repository_roots_settings_under_the_roots_trust() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let repo = home.join("repo");
    let sub = repo.join("pkg/app");
    std::fs::create_dir_all(repo.join(".ikigai/tools")).unwrap();
    std::fs::create_dir_all(repo.join(".ikigai/commands")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    tool(
        &repo.join(".ikigai/tools/roottool"),
        "if [ \"$1\" = --schema ]; then echo '{\"name\":\"roottool\",\"description\":\"Root tool.\",\"parameters\":{}}'; exit 0; fi\n\
         echo '{\"output\":\"root tool ran\"}'",
    );
    std::fs::write(
        repo.join(".ikigai/config.toml"),
        "[permissions]\ndeny = [\"bash(make deploy*)\"]\n",
    )
    .unwrap();
    std::fs::write(repo.join(".ikigai/commands/ship.md"), "Ship it: ROOT-COMMAND\n").unwrap();

    // Untrusted: the root's tools are named in the notice, not offered.
    let fake = FakeProvider::start();
    fake.push(Reply::text("ok"));
    let out = run(home, &sub, &["-p", "hi", "--base-url", &fake.base_url], "");
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("~/repo/.ikigai/tools not loaded"), "{err}");
    assert!(!offered(&fake, 0).contains(&"roottool".to_string()));

    // Trusting only the subfolder does not trust the root's settings.
    let out = run(home, &sub, &["trust", sub.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    fake.push(Reply::text("ok"));
    let out = run(home, &sub, &["-p", "hi", "--base-url", &fake.base_url], "");
    assert!(!offered(&fake, 1).contains(&"roottool".to_string()));
    assert!(s(&out.stderr).contains("not loaded"), "{}", s(&out.stderr));
    run(home, &sub, &["trust", "--revoke", sub.to_str().unwrap()], "");

    // `ikigai trust` from the subfolder trusts the root, whose settings then apply there:
    // its tools, its rules and its commands.
    let out = run(home, &sub, &["trust"], "");
    let said = s(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(
        said.contains(&format!("Trusted: {}", repo.canonicalize().unwrap().display())),
        "{said}"
    );
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        r#"{"command":"make deploy now"}"#,
    )]));
    fake.push(Reply::text("done"));
    let out = run(
        home,
        &sub,
        &["-p", "deploy", "--base-url", &fake.base_url, "--approval", "auto"],
        "",
    );
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(offered(&fake, 2).contains(&"roottool".to_string()), "{err}");
    // The root's deny rule holds (auto runs everything else).
    let result = fake.requests()[3].body["messages"].to_string();
    assert!(result.contains("make deploy*"), "{result}");
    fake.push(Reply::text("shipped"));
    let out = run(home, &sub, &["--base-url", &fake.base_url], "/ship\n");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let last = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(last.contains("ROOT-COMMAND"), "{last}");
}
