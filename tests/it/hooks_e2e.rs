//! Hooks against the real binary and the loopback fake vendor: Claude Code–style scripts
//! (JSON on stdin, exit 2 blocks with stderr as the reason, JSON on stdout) block `rm`,
//! format a file after an edit, add context at session start; a hook that outlives its
//! timeout is killed and does not block; an untrusted folder's hooks never run; a hook's
//! "allow" never overrides a deny rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

const KEY: &str = "sk-hooks-KEY-0123456789";

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(home: &Path, dir: &Path, args: &[&str]) -> Output {
    common::ikigai(home)
        .current_dir(dir)
        .args(args)
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A home with `config` as the user's config.toml, and a project folder.
fn setup(config: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join(".config/ikigai");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("config.toml"), config).unwrap();
    let proj = t.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    (t, proj)
}

/// Everything request `i` sent, as text.
fn sent(fake: &FakeProvider, i: usize) -> String {
    fake.requests()[i].body["messages"].to_string()
}

/// The script of Claude Code's documentation, unchanged in spirit: reads the call with jq,
/// exit 2 with the reason on stderr.
const BLOCK_RM: &str = r#"cmd=$(jq -r '.tool_input.command // empty')
if [[ "$cmd" == rm* ]]; then
  echo "Blocked: rm is not allowed here; move files to ./trash instead" >&2
  exit 2
fi
exit 0"#;

#[test]
fn a_claude_code_style_hook_blocks_rm_with_its_reason() {
    let (t, proj) = setup("");
    script(&t.path().join("block-rm.sh"), BLOCK_RM);
    std::fs::write(
        t.path().join(".config/ikigai/config.toml"),
        format!(
            "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{}\"\n",
            t.path().join("block-rm.sh").display()
        ),
    )
    .unwrap();
    std::fs::write(proj.join("keep.txt"), "x").unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", r#"{"command":"rm keep.txt"}"#),
        ("c2", "bash", r#"{"command":"echo RAN-ECHO"}"#),
    ]));
    fake.push(Reply::text("done"));
    let out = run(t.path(), &proj, &["-p", "clean up", "--base-url", &fake.base_url]);
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(proj.join("keep.txt").exists(), "rm ran: {err}");
    let back = sent(&fake, 1);
    assert!(back.contains("rm is not allowed here"), "{back}");
    assert!(back.contains("RAN-ECHO"), "the other call ran: {back}");
    assert!(
        err.contains("hook PreToolUse bash:") && err.contains("blocked"),
        "{err}"
    );
}

#[test]
fn a_post_tool_use_hook_formats_the_file_after_an_edit() {
    let (t, proj) = setup("");
    // The "formatter": squeezes runs of spaces in the file the call wrote.
    script(
        &t.path().join("fmt.sh"),
        r#"f=$(jq -r '.tool_input.path'); sed -i 's/  */ /g' "$f"
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted"}}'"#,
    );
    std::fs::write(
        t.path().join(".config/ikigai/config.toml"),
        // Claude Code's nested shape, and its project variable.
        "[[hooks.PostToolUse]]\nmatcher = \"file_write|file_edit\"\n\
         hooks = [{ type = \"command\", command = \"$CLAUDE_PROJECT_DIR/../fmt.sh\" }]\n",
    )
    .unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_write",
        r#"{"path":"a.txt","content":"a    b     c\n"}"#,
    )]));
    fake.push(Reply::text("done"));
    let out = run(t.path(), &proj, &["-p", "write", "--base-url", &fake.base_url]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(std::fs::read_to_string(proj.join("a.txt")).unwrap(), "a b c\n");
    assert!(
        sent(&fake, 1).contains("A PostToolUse hook adds: formatted"),
        "{}",
        sent(&fake, 1)
    );
}

#[test]
fn session_start_context_reaches_the_first_request_and_a_slow_hook_is_killed() {
    let (t, proj) = setup("");
    let pid_file = t.path().join("slow.pid");
    std::fs::write(
        t.path().join(".config/ikigai/config.toml"),
        format!(
            "[[hooks.SessionStart]]\ncommand = '''echo '{{\"hookSpecificOutput\":{{\"hookEventName\":\"SessionStart\",\"additionalContext\":\"CTX-4242 branch main\"}}}}' '''\n\n\
             [[hooks.UserPromptSubmit]]\ncommand = \"echo $$ > {}; exec sleep 300\"\ntimeout = 1\n",
            pid_file.display()
        ),
    )
    .unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("ok"));
    let out = run(t.path(), &proj, &["-p", "hi", "--base-url", &fake.base_url]);
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        sent(&fake, 0).contains("CTX-4242 branch main"),
        "{}\n{err}",
        sent(&fake, 0)
    );
    assert!(err.contains("timed out after 1 s; it was killed"), "{err}");
    // Its process is gone (killed with its group), not left sleeping.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let proc = Path::new("/proc").join(pid.trim());
    let alive = std::fs::read_to_string(proc.join("stat")).is_ok_and(|s| !s.contains(") Z "));
    assert!(!alive, "the hook's process {pid} still runs");
}

#[test]
fn an_untrusted_folders_hooks_never_run_and_a_trusted_ones_do() {
    let (t, proj) = setup("");
    std::fs::create_dir_all(proj.join(".ikigai")).unwrap();
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let mark = t.path().join("hook-ran");
    std::fs::write(
        proj.join(".ikigai/config.toml"),
        format!("[[hooks.SessionStart]]\ncommand = \"touch {}\"\n", mark.display()),
    )
    .unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("ok"));
    let out = run(t.path(), &proj, &["-p", "hi", "--base-url", &fake.base_url]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(!mark.exists(), "an untrusted folder's hook ran");
    let out = run(t.path(), &proj, &["trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    fake.push(Reply::text("ok"));
    let out = run(
        t.path(),
        &proj,
        &["-p", "hi", "--json", "--base-url", &fake.base_url],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(
        mark.exists(),
        "the trusted folder's hook did not run: {}",
        s(&out.stderr)
    );
    // Under --json each run is a `hook` event naming its source.
    let hook = s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "hook")
        .unwrap_or_else(|| panic!("no hook event: {}", s(&out.stdout)));
    assert_eq!(hook["event"], "SessionStart");
    assert!(
        hook["source"].as_str().unwrap().starts_with("project, "),
        "{hook}"
    );
    // /hooks lists it with its source.
    let mut child = common::ikigai(t.path())
        .current_dir(&proj)
        .args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"/hooks\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let listed = format!("{}{}", s(&out.stdout), s(&out.stderr));
    assert!(
        listed.contains(&format!(
            "SessionStart *: touch {} (timeout 60 s; project, {})",
            mark.display(),
            proj.join(".ikigai/config.toml").display()
        )),
        "{listed}"
    );
}

#[test]
fn a_hooks_allow_never_overrides_a_deny_rule_but_skips_the_question() {
    let (t, proj) = setup("");
    std::fs::write(
        t.path().join(".config/ikigai/config.toml"),
        "[permissions]\ndeny = [\"bash(rm *)\"]\n\n[[hooks.PreToolUse]]\ncommand = '''echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"permissionDecisionReason\":\"fine\"}}' '''\n",
    )
    .unwrap();
    std::fs::write(proj.join("keep.txt"), "x").unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", r#"{"command":"rm keep.txt"}"#),
        ("c2", "bash", r#"{"command":"touch made.txt"}"#),
    ]));
    fake.push(Reply::text("done"));
    // Scripted `ask` mode: nobody answers, so only a skipped question lets `touch` run.
    let out = run(
        t.path(),
        &proj,
        &["-p", "go", "--base-url", &fake.base_url, "--approval", "ask"],
    );
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        proj.join("keep.txt").exists(),
        "the deny rule was overridden: {err}"
    );
    assert!(
        proj.join("made.txt").exists(),
        "the hook's allow did not skip the question: {err}"
    );
}

#[test]
fn an_updated_input_runs_instead_and_is_judged_by_the_rules_as_any_input() {
    let (t, proj) = setup("");
    // Rewrites every bash command: `ls` becomes an echo; `cat` becomes an rm, denied.
    script(
        &t.path().join("rewrite.sh"),
        r#"cmd=$(jq -r '.tool_input.command')
case "$cmd" in
  ls*) new='echo REWRITTEN-7' ;;
  *) new='rm keep.txt' ;;
esac
jq -n --arg c "$new" '{hookSpecificOutput:{hookEventName:"PreToolUse",updatedInput:{command:$c}}}'"#,
    );
    std::fs::write(
        t.path().join(".config/ikigai/config.toml"),
        format!(
            "[permissions]\ndeny = [\"bash(rm *)\"]\n\n[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"{}\"\n",
            t.path().join("rewrite.sh").display()
        ),
    )
    .unwrap();
    std::fs::write(proj.join("keep.txt"), "x").unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", r#"{"command":"ls"}"#),
        ("c2", "bash", r#"{"command":"cat keep.txt"}"#),
    ]));
    fake.push(Reply::text("done"));
    let out = run(t.path(), &proj, &["-p", "go", "--base-url", &fake.base_url]);
    let err = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let back = sent(&fake, 1);
    assert!(back.contains("REWRITTEN-7"), "{back}");
    assert!(
        proj.join("keep.txt").exists(),
        "a rewritten rm escaped the deny rule: {err}"
    );
}
