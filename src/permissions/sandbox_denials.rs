//! Says when a failed command was probably stopped by the sandbox, so the model (and the
//! user) know why and can ask to run it outside. The kernel tells the process only an
//! errno (Landlock: `EACCES`, "Permission denied"; the private mount table's read-only
//! mounts: `EROFS`, "Read-only file system"; the seccomp filters: `EPERM`, "Operation
//! not permitted"), so this reads what the command printed: a line with such
//! an error that names a path outside the writable roots is a denied write; with the
//! network off, a line about sockets, connecting or resolving names is a denied
//! connection. A heuristic over text; it decides nothing and never changes the output.

use std::path::{Component, Path, PathBuf};

use crate::policy::confinement::Confinement;

/// Errors a denied write or socket shows as (lowercase).
const DENIED: [&str; 8] = [
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "errno 13",
    "errno 30",
    "eacces",
    "eperm",
    "erofs",
];
/// Words of a network failure (lowercase).
const NETWORK: [&str; 9] = [
    "socket",
    "connect",
    "could not resolve",
    "couldn't resolve",
    "name resolution",
    "name or service not known",
    "network",
    "getaddrinfo",
    "/dev/tcp/",
];

/// For a command that failed under the installed sandbox: what the sandbox probably
/// denied (`sandbox: …`), from its output. `None` without a sandbox (none installed, or
/// the call runs outside it) or a sign of one.
pub fn explain(output: &str, cwd: &Path) -> Option<String> {
    let c = super::sandbox_in_force::current_sandbox()?;
    explain_with(&c, output, cwd)
}

/// `explain` under `c`.
pub fn explain_with(c: &Confinement, output: &str, cwd: &Path) -> Option<String> {
    let mut network = false;
    for line in output.lines() {
        let lower = line.to_lowercase();
        let denied = DENIED.iter().any(|d| lower.contains(d));
        let about_network = NETWORK.iter().any(|n| lower.contains(n));
        let failed_to_connect = lower.contains("connect to") || lower.contains("resolv");
        if !c.network && about_network && (denied || failed_to_connect) {
            network = true;
            continue;
        }
        if !denied {
            continue;
        }
        let named = paths(without_shell_prefix(line));
        // The network filter's EPERM, from a program that does not say what it opened.
        if !c.network && named.is_empty() && lower.contains("operation not permitted") {
            network = true;
            continue;
        }
        if let Some(path) = named
            .into_iter()
            .map(|p| normalize(&cwd.join(p)))
            .find(|p| !writable(c, p))
        {
            return Some(denied_write(c, &path.display().to_string()));
        }
    }
    network.then(|| {
        format!(
            "sandbox: network access denied (sandbox = \"{}\" with sandbox_network = false blocks IP sockets); run it outside the sandbox to use the network",
            c.mode
        )
    })
}

/// What the model reads for a write to `path` (as shown) that `c` denies: the same words
/// for a command's denied write and for a built-in file tool's (`sandbox_writes`).
pub fn denied_write(c: &Confinement, path: &str) -> String {
    let allowed: Vec<String> = c.writable.iter().map(|w| w.display().to_string()).collect();
    let what = if c.mode == "read-only" {
        "write denied (read-only sandbox)"
    } else {
        "write outside the workspace denied"
    };
    format!(
        "sandbox: {what}: {path} (sandbox = \"{}\" allows writes only in {}); run it outside the sandbox to write there",
        c.mode,
        allowed.join(", ")
    )
}

/// Whether `path` is beneath one of `c`'s writable roots (or is `/dev/null`).
pub fn writable(c: &Confinement, path: &Path) -> bool {
    path == Path::new("/dev/null") || c.writable.iter().any(|w| path.starts_with(w))
}

/// `line` without the `PROGRAM: line N: ` a shell puts before its own errors
/// (`/usr/bin/bash: line 1: /etc/x: Read-only file system`): the program's path is not
/// what was denied.
fn without_shell_prefix(line: &str) -> &str {
    let Some((program, rest)) = line.split_once(": line ") else {
        return line;
    };
    match rest.split_once(": ") {
        Some((n, after))
            if !program.contains(char::is_whitespace)
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            after
        }
        _ => line,
    }
}

/// The paths a line names: quoted (`'…'`, `"…"`, `‘…’`, `` `…` ``) or bare words with a
/// `/`, without the `:` or `,` that follows them.
fn paths(line: &str) -> Vec<PathBuf> {
    let quotes = ['\'', '"', '‘', '’', '`', '“', '”'];
    line.split(|c: char| c.is_whitespace() || quotes.contains(&c))
        .map(|w| w.trim_end_matches([':', ',', ';', ')']).trim_start_matches('('))
        .filter(|w| w.contains('/') && !w.contains("://"))
        .map(PathBuf::from)
        .collect()
}

/// `p` with `.` and `..` resolved as written (the file may not exist).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confinement(mode: &str, network: bool) -> Confinement {
        Confinement {
            mode: mode.into(),
            writable: vec!["/work/proj".into(), "/tmp".into()],
            network,
            tmpdir: None,
            ..Confinement::default()
        }
    }

    #[test]
    fn a_denied_write_outside_is_named_with_its_path() {
        let c = confinement("workspace-write", true);
        let cwd = Path::new("/work/proj");
        for (out, path) in [
            ("touch: cannot touch '/etc/x': Permission denied", "/etc/x"),
            ("bash: /root/out.txt: Permission denied", "/root/out.txt"),
            (
                "mkdir: cannot create directory ‘../other’: Permission denied",
                "/work/other",
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/opt/y'",
                "/opt/y",
            ),
            // The private mount table's read-only mounts, for writes and metadata alike.
            ("touch: cannot touch '/etc/x': Read-only file system", "/etc/x"),
            (
                "chmod: changing permissions of '/usr/bin/x': Read-only file system",
                "/usr/bin/x",
            ),
            ("OSError: [Errno 30] Read-only file system: '/opt/z'", "/opt/z"),
            // bash found by absolute path names itself before the line number.
            (
                "/usr/bin/bash: line 1: /var/tmp/x/second.txt: Read-only file system",
                "/var/tmp/x/second.txt",
            ),
        ] {
            let e = explain_with(&c, out, cwd).unwrap_or_else(|| panic!("{out}"));
            assert!(
                e.starts_with("sandbox: write outside the workspace denied: "),
                "{e}"
            );
            assert!(e.contains(path), "{e}");
        }
    }

    #[test]
    fn denials_inside_the_roots_or_unrelated_errors_are_not_blamed_on_the_sandbox() {
        let c = confinement("workspace-write", true);
        let cwd = Path::new("/work/proj");
        for out in [
            "touch: cannot touch 'src/x': Permission denied",
            "bash: /tmp/x: Permission denied",
            "/usr/bin/bash: line 3: /tmp/x: Read-only file system",
            "error: could not compile",
            "curl: (6) Could not resolve host: example.com",
        ] {
            assert_eq!(explain_with(&c, out, cwd), None, "{out}");
        }
    }

    #[test]
    fn network_failures_are_named_when_the_network_is_off() {
        let c = confinement("workspace-write", false);
        let cwd = Path::new("/work/proj");
        for out in [
            "bash: socket: Operation not permitted\nbash: /dev/tcp/127.0.0.1/80: Operation not permitted",
            "curl: (6) Could not resolve host: example.com",
            "PermissionError: [Errno 1] Operation not permitted",
            "curl: (7) Failed to connect to 127.0.0.1 port 56531 after 0 ms: Couldn't connect to server",
        ] {
            let e = explain_with(&c, out, cwd).unwrap_or_else(|| panic!("{out}"));
            assert!(e.starts_with("sandbox: network access denied"), "{e}");
        }
        let ro = Confinement {
            writable: vec!["/tmp/ikigai-sandbox-1".into()],
            ..confinement("read-only", false)
        };
        let e = explain_with(&ro, "sh: /work/proj/a: Permission denied", cwd).unwrap();
        assert!(e.starts_with("sandbox: write denied (read-only sandbox)"), "{e}");
    }
}
