//! Issue 34 §2 against the real binary, in scripted mode: the shell forms that got past
//! `deny = ["bash(rm *)"]` (a representative of every class, and forms of our own) are
//! refused with `NOT_APPROVED` and the file stays; the read-only list refuses options it
//! does not list (`sort --compress-program`, getopt's `--out` for `--output`) and a
//! redirection whose file is decided when it runs (`/dev/tcp` through an expansion);
//! bash ≥ 5.3's `${ cmd; }` is not read-only; a path rule refuses a bash line naming the
//! path; `web_fetch` rules match the URL's parts and a loopback deny covers its names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::site::{Site, answer};
use serde_json::{Value, json};

fn config(home: &Path, text: &str) {
    let dir = home.join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn run(home: &Path, fake: &FakeProvider, mode: &str) -> Output {
    common::ikigai(home)
        .args(["--base-url", &fake.base_url, "-p", "go", "--approval", mode])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .expect("run ikigai")
}

/// The tool results the model got back, in order (from the last request).
fn tool_results(fake: &FakeProvider) -> Vec<Value> {
    let reqs = fake.requests();
    let last = reqs.last().expect("a request");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

/// Every call of one response: each line (with `{v}` for its own victim file) is
/// refused and its victim stays.
fn all_refused(cfg: &str, mode: &str, lines: &[&str], prepare: impl Fn(&Path)) {
    let h = tempfile::tempdir().unwrap();
    config(h.path(), cfg);
    prepare(h.path());
    let ids: Vec<String> = (0..lines.len()).map(|i| format!("c{i}")).collect();
    let args: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            std::fs::write(h.path().join(format!("victim{i}")), "x").unwrap();
            json!({ "command": l.replace("{v}", &format!("victim{i}")) }).to_string()
        })
        .collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(&args)
        .map(|(id, a)| (id.as_str(), "bash", a.as_str()))
        .collect();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&calls));
    fake.push(Reply::text("ok"));
    let out = run(h.path(), &fake, mode);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let results = tool_results(&fake);
    assert_eq!(results.len(), lines.len());
    assert!(
        !h.path().join("pwned").exists(),
        "{mode}: a line ran a program or wrote a file"
    );
    for (i, line) in lines.iter().enumerate() {
        assert!(
            h.path().join(format!("victim{i}")).exists(),
            "{mode}: `{line}` got past the deny rule"
        );
        assert_eq!(
            results[i]["error_code"], "NOT_APPROVED",
            "{mode}: `{line}`: {}",
            results[i]
        );
    }
}

/// The seen forms and our own, by class, with `deny = ["bash(rm *)"]`; scripted runs
/// default to `auto`, where only the rule stands in the way.
#[test]
fn every_bypass_class_is_refused_with_a_deny_rule_in_scripted_mode() {
    let lines = [
        // A name made by expansion, globbing or quoting.
        "{rm,-rf,{v}}",
        "/bin/r? -rf {v}",
        "$'\\x72m' -rf {v}",
        "${X:-rm} -rf {v}",
        "x=rm; $x -rf {v}",
        "\"r\"\"m\" -rf {v}",
        // Text fed to a shell.
        "echo \"rm -rf {v}\" | bash",
        "bash <<< \"rm -rf {v}\"",
        "bash <<EOF\nrm -rf {v}\nEOF",
        "source <(echo rm -rf {v})",
        "bash <(echo rm -rf {v})",
        "echo rm -rf {v} | base64 | base64 -d | sh",
        // Wrappers.
        "env -u X rm -rf {v}",
        "env --split-string='rm -rf {v}'",
        "exec -a foo rm -rf {v}",
        "echo {v} > list; xargs -a list rm",
        "echo {v} | xargs -I{} sh -c 'rm -rf {}'",
        "prlimit --nofile=100 rm -rf {v}",
        "setpriv --reuid=0 rm -rf {v}",
        "runuser -u root -- rm -rf {v}",
        "chroot / rm -rf $PWD/{v}",
        "nsenter --target 1 --no-fork rm -rf {v}",
        "command -p rm -rf {v}",
        "timeout -k 1 5 rm -rf {v}",
        // Builtins that run text.
        "hash -p /bin/rm ls; ls -rf {v}",
        "mapfile -C 'rm -rf {v} #' -c 1 < /etc/hostname",
        "readarray -C 'rm -rf {v} #' -c 1 < /etc/hostname",
        "declare -a 'x=([0]=$(rm -rf {v}))'",
        "shopt -s expand_aliases\nalias ls='rm -rf {v}'\nls",
        "x='a[$(rm -rf {v})]'; echo $((x))",
        "printf -v 'a[$(rm -rf {v})]' x",
        // Variables a program runs.
        "PROMPT_COMMAND='rm -rf {v}' bash -i < /dev/null",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm -rf {v}' git x",
        "git -c alias.x='!rm -rf {v}' x",
        // Interpreters.
        "python3 -c \"import os; os.remove('{v}')\"",
        "perl -e 'unlink \"{v}\"'",
        "awk 'BEGIN{system(\"rm -rf {v}\")}'",
        "sed -n '1e rm -rf {v}' /etc/hostname",
    ];
    all_refused("[permissions]\ndeny = [\"bash(rm *)\"]\n", "auto", &lines, |_| {});
}

/// The repository ships `evil.sh`; the model runs "read-only" commands in `read-only`
/// and `ask` mode: an option off a command's list (getopt would take `--out` for
/// `--output`), a redirection whose file is decided when it runs (seen: a `/dev/tcp`
/// connection through `${PATH/…}`), and bash 5.3's `${ cmd; }` do not run unasked.
#[test]
fn the_read_only_list_refuses_options_it_does_not_list_and_run_time_redirections() {
    use std::os::unix::fs::PermissionsExt;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let tcp = format!("cat < ${{PATH/*//dev}}/tcp/127.0.0.1/{port}");
    for mode in ["read-only", "ask"] {
        let lines = [
            "sort --compress-program=./evil.sh -S 1 {v}",
            "sort --out=pwned {v}",
            "sort --outp=pwned {v}",
            "rg --pre ./evil.sh x {v}",
            "git diff --out=pwned",
            tcp.as_str(),
            "echo ${ touch pwned; }",
            "echo ${| touch pwned; }",
            "cat {v} > ${HOME:+pwned}",
        ];
        all_refused("", mode, &lines, |home| {
            let ok = std::process::Command::new("git")
                .args(["init", "-q"])
                .current_dir(home)
                .status()
                .unwrap()
                .success();
            assert!(ok);
            let evil = home.join("evil.sh");
            std::fs::write(&evil, "#!/bin/sh\ntouch pwned\ncat\n").unwrap();
            std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
        });
    }
    let mut buf = [0u8; 1];
    let connected = listener.accept().map(|(mut s, _)| s.read(&mut buf)).is_ok();
    assert!(!connected, "a read-only command opened a connection");
}

/// `deny = ["file_read(.env)"]` (the README's example) is about the file, whatever reads
/// it: a bash line naming it (as an argument, an option's value or a redirection) is
/// refused, and the `grep` tool does not search it (seen: grep on `.` and `cat .env`
/// showed it).
#[test]
fn a_path_rule_refuses_a_bash_line_naming_the_path() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    config(h.path(), "[permissions]\ndeny = [\"file_read(.env)\"]\n");
    std::fs::write(h.path().join(".env"), "TOKEN=secret-value\n").unwrap();
    std::fs::create_dir(h.path().join("sub")).unwrap();
    std::fs::write(h.path().join("sub/.env"), "TOKEN=secret-value\n").unwrap();
    std::os::unix::fs::symlink(".env", h.path().join("link")).unwrap();
    let lines = [
        "cat .env",
        "grep TOKEN sub/.env",
        "head --lines=5 ./.env",
        "cat < .env",
        "cat link",
        "sort --files0-from=sub/.env",
    ];
    let args: Vec<String> = lines
        .iter()
        .map(|l| json!({ "command": l }).to_string())
        .collect();
    let ids: Vec<String> = (0..lines.len()).map(|i| format!("c{i}")).collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(&args)
        .map(|(id, a)| (id.as_str(), "bash", a.as_str()))
        .collect();
    fake.push(Reply::tool_calls(&calls));
    fake.push(Reply::text("ok"));
    let out = run(h.path(), &fake, "auto");
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let results = tool_results(&fake);
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(
            results[i]["error_code"], "NOT_APPROVED",
            "`{line}`: {}",
            results[i]
        );
        assert!(!results[i].to_string().contains("secret-value"), "`{line}`");
    }
    // The `grep` tool does not read a file the rule covers, searching a folder or the file.
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("g1", "grep", &json!({ "pattern": "TOKEN" }).to_string()),
        (
            "g2",
            "grep",
            &json!({ "pattern": "TOKEN", "path": "sub/.env" }).to_string(),
        ),
        (
            "g3",
            "grep",
            &json!({ "pattern": "TOKEN", "path": "link" }).to_string(),
        ),
    ]));
    fake.push(Reply::text("ok"));
    std::fs::write(h.path().join("notes.txt"), "TOKEN is documented here\n").unwrap();
    run(h.path(), &fake, "auto");
    let results = tool_results(&fake);
    assert!(results[0].to_string().contains("notes.txt"), "{}", results[0]);
    for r in &results {
        assert!(!r.to_string().contains("secret-value"), "{r}");
    }
}

/// `web_fetch` rules match the URL's parts: `*` in the host does not cross into the path
/// (seen: `https://*.github.com/*` allowed `https://evil.example/.github.com/`), and a
/// deny rule on a loopback address covers its other names and forms (seen: `localhost`
/// and `[::ffff:127.0.0.1]` got past `deny web_fetch(http://127.0.0.1*)`). The server
/// must get no request.
#[test]
fn web_fetch_rules_match_the_urls_parts_and_a_loopback_deny_covers_its_names() {
    let site = Site::start(|_| Some(answer("200 OK", "text/plain", "reached")));
    let p = site.port;
    for (cfg, mode, urls) in [
        (
            "[permissions]\nallow = [\"web_fetch(http://*.github.com/*)\"]\n".to_string(),
            "ask",
            vec![
                format!("http://127.0.0.1:{p}/.github.com/"),
                format!("http://127.0.0.1:{p}/x.github.com/y"),
            ],
        ),
        (
            "[permissions]\ndeny = [\"web_fetch(http://127.0.0.1*)\"]\n".to_string(),
            "auto",
            vec![
                format!("http://localhost:{p}/"),
                format!("http://[::ffff:127.0.0.1]:{p}/"),
                format!("http://2130706433:{p}/"),
                format!("http://127.1:{p}/"),
                format!("http://0x7f.0.0.1:{p}/"),
                format!("http://LOCALHOST.:{p}/"),
            ],
        ),
    ] {
        let h = tempfile::tempdir().unwrap();
        config(h.path(), &cfg);
        let args: Vec<String> = urls.iter().map(|u| json!({ "url": u }).to_string()).collect();
        let ids: Vec<String> = (0..urls.len()).map(|i| format!("c{i}")).collect();
        let calls: Vec<(&str, &str, &str)> = ids
            .iter()
            .zip(&args)
            .map(|(id, a)| (id.as_str(), "web_fetch", a.as_str()))
            .collect();
        let fake = FakeProvider::start();
        fake.push(Reply::tool_calls(&calls));
        fake.push(Reply::text("ok"));
        let out = run(h.path(), &fake, mode);
        assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
        let results = tool_results(&fake);
        for (i, url) in urls.iter().enumerate() {
            assert_eq!(
                results[i]["error_code"], "NOT_APPROVED",
                "{cfg} {url}: {}",
                results[i]
            );
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        site.seen().is_empty(),
        "a request reached the server: {:?}",
        site.seen()
    );
}
