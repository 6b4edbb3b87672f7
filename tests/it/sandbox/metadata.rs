//! The sandbox protects metadata too (issue 34 §6), against the real binary as root and as
//! an ordinary user (`nobody`): every way to change a file's metadata — `chmod` (plain,
//! set-user-ID, set-group-ID), `chown`, `touch -d` and `touch`, `utime`, the descriptor
//! forms on a file opened read-only (`fchmod`, `fchown`, `futimens`, `fsetxattr`),
//! through a symlink in the workspace, extended attributes, hard links, `chattr`,
//! `truncate` — leaves a file outside the writable folders as it was (its ctime, which
//! any of them changes, included), under `workspace-write` and `read-only`; inside the
//! workspace each ordinary one still works, and no set-user/group-ID bit is ever set
//! (`chmod`, `fchmod`, a file created with one, `install -m 4755`, `mknod`), nor a
//! device node made. A `bash` call through the model gets the same refusal, named in its
//! result. Where user namespaces are not available, `ikigai sandbox` says what no longer
//! holds, and set-user-ID bits are still refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;

use super::{place, text};
use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

const PY: &str = "/usr/bin/python3";

/// What an operation may do to a file inside the workspace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Inside {
    /// It works: the file's ctime changes.
    Works,
    /// Refused there too: no set-user/group-ID bit appears.
    NoSetId,
}

/// `(name, shell snippet, inside)`: `$T` is the target file, `$W` the workspace, `$N` the
/// operation's name, `$K` `out` or `in` (which target), `$OWNER` an owner the user may give
/// (`uid:gid`).
fn operations() -> Vec<(&'static str, String, Inside)> {
    use Inside::*;
    let py = |code: &str| format!("{PY} -c '{code}' \"$T\"");
    vec![
        ("chmod", "chmod 600 \"$T\"".into(), Works),
        ("chmod_setuid", "chmod 4755 \"$T\"".into(), NoSetId),
        ("chmod_setgid", "chmod g+s \"$T\"".into(), NoSetId),
        ("chmod_u_plus_s", "chmod u+s,g+s \"$T\"".into(), NoSetId),
        ("chown", "chown \"$OWNER\" \"$T\"".into(), Works),
        ("touch_date", "touch -d 2001-02-03 \"$T\"".into(), Works),
        ("touch_now", "touch \"$T\"".into(), Works),
        ("utime", py("import os,sys; os.utime(sys.argv[1], (0, 0))"), Works),
        (
            "fchmod_read_only_fd",
            py("import os,sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fchmod(fd, 0o600)"),
            Works,
        ),
        (
            "fchmod_setuid_fd",
            py("import os,sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fchmod(fd, 0o6755)"),
            NoSetId,
        ),
        (
            "fchown_read_only_fd",
            py(
                "import os,sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fchown(fd, os.getuid(), os.getgid())",
            ),
            Works,
        ),
        (
            "futimens_read_only_fd",
            py("import os,sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.utime(fd, (1, 1))"),
            Works,
        ),
        (
            "through_a_symlink_in_the_workspace",
            "ln -s \"$T\" \"$W/$N.$K.link\" && chmod 600 \"$W/$N.$K.link\"".into(),
            Works,
        ),
        (
            "setxattr",
            py("import os,sys; os.setxattr(sys.argv[1], \"user.ikigai\", b\"x\")"),
            Works,
        ),
        (
            "fsetxattr_read_only_fd",
            py(
                "import os,sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.setxattr(fd, \"user.ikigai\", b\"x\")",
            ),
            Works,
        ),
        (
            "removexattr",
            py("import os,sys; os.removexattr(sys.argv[1], \"user.keep\")"),
            Works,
        ),
        ("hard_link_beside", "ln \"$T\" \"$T.hard\"".into(), Works),
        (
            "hard_link_into_the_workspace",
            "ln \"$T\" \"$W/$N.$K.hl\"".into(),
            Works,
        ),
        ("chattr", "chattr +d \"$T\"".into(), Works),
        ("truncate", "truncate -s 0 \"$T\"".into(), Works),
    ]
}

/// What the test compares before and after.
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: i64,
    ctime: (i64, i64),
    nlink: u64,
    len: u64,
}

fn meta(p: &Path) -> Meta {
    let m = std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    Meta {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        mtime: m.mtime(),
        ctime: (m.ctime(), m.ctime_nsec()),
        nlink: m.nlink(),
        len: m.len(),
    }
}

/// A target file for operation `name` in `dir`: some content, mode 0644, an extended
/// attribute `user.keep`, owned by `uid`.
fn target(dir: &Path, name: &str, uid: u32) -> PathBuf {
    let t = dir.join(format!("{name}.f"));
    std::fs::write(&t, "content\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o644)).unwrap();
    let set = Command::new(PY)
        .args(["-c", "import os,sys; os.setxattr(sys.argv[1], 'user.keep', b'1')"])
        .arg(&t)
        .status()
        .unwrap();
    assert!(set.success());
    std::os::unix::fs::chown(&t, Some(uid), Some(uid)).unwrap();
    t
}

/// `ikigai sandbox --mode MODE -- sh -c SCRIPT` in `ws`, as root or as `nobody`.
fn sandbox(ws: &Path, tmp: &Path, mode: &str, script: &str, as_nobody: bool, env: &[(&str, &str)]) -> Output {
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::binary());
        c
    } else {
        Command::new(common::binary())
    };
    common::env::isolate(&mut cmd, ws);
    cmd.current_dir(ws)
        .env("TMPDIR", tmp)
        .args(["sandbox", "--mode", mode, "--", "sh", "-c", script])
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Every operation on a file outside and one inside, in one sandboxed run.
fn run(mode: &str, as_nobody: bool) {
    let who = format!("{mode}, {}", if as_nobody { "as nobody" } else { "as root" });
    let p = place();
    let uid = if as_nobody { 65534 } else { 0 };
    let owner = if as_nobody { "65534:65534" } else { "1234:1234" };
    let ops = operations();
    let mut script = String::new();
    let mut targets = Vec::new();
    for (name, snippet, inside) in &ops {
        let out = target(&p.out, name, uid);
        let ins = target(&p.ws, name, uid);
        for (k, t) in [("out", &out), ("in", &ins)] {
            script.push_str(&format!(
                "echo '== {name} {}'; (T={t:?}; W={ws:?}; N={name}; K={k}; OWNER={owner}; {snippet}) 2>&1\n",
                t.display(),
                t = t.display().to_string(),
                ws = p.ws.display().to_string(),
            ));
        }
        targets.push((*name, out, ins, *inside));
    }
    // Files created with a set-ID bit, and device nodes, inside.
    let created = p.ws.join("created");
    script.push_str(&format!(
        "mkdir -p {c:?}; cd {c:?}; \
         {PY} -c 'import os; os.close(os.open(\"open_4755\", os.O_CREAT | os.O_WRONLY, 0o4755))' 2>&1; \
         {PY} -c 'import os; os.close(os.open(\"open_2755\", os.O_CREAT | os.O_WRONLY, 0o2755))' 2>&1; \
         {PY} -c 'import os, stat; os.mknod(\"mknod_4755\", stat.S_IFREG | 0o4755)' 2>&1; \
         install -m 4755 /dev/null install_4755 2>&1; \
         mknod block_device b 7 0 2>&1; mknod char_device c 1 3 2>&1; \
         cd {ws:?}\n",
        c = created.display().to_string(),
        ws = p.ws.display().to_string()
    ));
    if as_nobody {
        for d in [&p.ws, &p.tmp, &p.out] {
            super::chown_tree(d, 65534);
        }
    }
    let before: Vec<(Meta, Meta)> = targets.iter().map(|(_, o, i, _)| (meta(o), meta(i))).collect();
    let out = sandbox(&p.ws, &p.tmp, mode, &script, as_nobody, &[]);
    let log = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        log.contains("== truncate"),
        "{who}: the script did not run:\n{log}"
    );
    let mut wrong = Vec::new();
    for ((name, o, i, inside), (was_out, was_in)) in targets.iter().zip(before) {
        let now = meta(o);
        if now != was_out {
            wrong.push(format!("{name}: changed outside: {was_out:?} -> {now:?}"));
        }
        let now = meta(i);
        match (mode, inside) {
            // read-only: the workspace is outside the writable folders as well.
            ("read-only", _) => {
                if now != was_in {
                    wrong.push(format!(
                        "{name}: changed in the read-only workspace: {was_in:?} -> {now:?}"
                    ));
                }
            }
            (_, Inside::Works) => {
                if now.ctime == was_in.ctime {
                    wrong.push(format!("{name}: did not work inside the workspace"));
                }
            }
            (_, Inside::NoSetId) => {
                if now.mode & 0o6000 != 0 {
                    wrong.push(format!("{name}: set a set-ID bit inside: {:o}", now.mode));
                }
            }
        }
    }
    if mode != "read-only" {
        for f in ["open_4755", "open_2755", "mknod_4755", "install_4755"] {
            if let Ok(m) = std::fs::metadata(created.join(f))
                && m.mode() & 0o6000 != 0
            {
                wrong.push(format!("{f}: created with mode {:o}", m.mode()));
            }
        }
        for f in ["block_device", "char_device"] {
            if created.join(f).exists() {
                wrong.push(format!("{f}: a device node was made"));
            }
        }
    }
    assert!(wrong.is_empty(), "{who}:\n{}\n--- log:\n{log}", wrong.join("\n"));
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn workspace_write_keeps_metadata_outside_as_it_was_as_root() {
    run("workspace-write", false);
}

#[test]
fn read_only_keeps_metadata_as_it_was_as_root() {
    run("read-only", false);
}

#[test]
fn workspace_write_keeps_metadata_outside_as_it_was_as_an_ordinary_user() {
    if !is_root() {
        eprintln!("not root: the runs above are the ordinary user's");
        return;
    }
    run("workspace-write", true);
    run("read-only", true);
}

#[test]
fn a_bash_call_that_changes_metadata_outside_is_refused_and_named() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let outside = target(&p.out, "by-model", 0);
    let inside = target(&p.ws, "by-model", 0);
    let was = meta(&outside);
    let fake = FakeProvider::start();
    let command = format!(
        "chmod +x {i} && echo inside-ok; chmod 4755 {o}; touch -d 2001-02-03 {o}",
        i = inside.display(),
        o = outside.display()
    );
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &json!({ "command": command }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let out = p
        .ikigai()
        .args(["-p", "chmod", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(meta(&outside), was, "the call changed a file outside");
    assert_eq!(meta(&inside).mode & 0o111, 0o111, "chmod +x inside did not work");
    let r = &super::tool_results(&fake)[0];
    assert!(r.contains("inside-ok"), "{r}");
    assert!(
        r.contains("sandbox: write outside the workspace denied") && r.contains("by-model.f"),
        "{r}"
    );
}

#[test]
fn without_user_namespaces_the_sandbox_says_what_it_no_longer_covers() {
    let p = place();
    let outside = target(&p.out, "no-ns", 0);
    let script = format!(
        "chmod 600 {o}; chmod 4755 {o}; touch ok && chmod 755 ok && chmod 4755 ok; stat -c %a ok",
        o = outside.display()
    );
    let out = sandbox(
        &p.ws,
        &p.tmp,
        "workspace-write",
        &script,
        false,
        &[("IKIGAI_SANDBOX_PRETEND_NO_NAMESPACES", "1")],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // What it says: the limit, and why.
    assert!(
        stderr.contains("not covered here")
            && stderr.contains("chmod, chown, touch -d")
            && stderr.contains("user namespaces are not available"),
        "{stderr}"
    );
    // What still holds: no set-user-ID bit, inside or out.
    assert_eq!(meta(&outside).mode & 0o7777, 0o600, "{stderr}");
    assert_eq!(stdout.trim(), "755", "{stdout}{stderr}");
    // With namespaces (this system's default), it says they are used.
    let out = sandbox(&p.ws, &p.tmp, "workspace-write", "true", false, &[]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("metadata outside them unchangeable (a private mount table"),
        "{stderr}"
    );
}
