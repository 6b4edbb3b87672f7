//! No secret in any process a sandboxed tool can read (issue 34 §7), against the real
//! binary as root and as an ordinary user: two MCP stdio servers run beside the tools, one
//! with a token in its `env` table, one with a password passed through from ikigai's
//! environment (`env = ["SRV_PASSWORD"]`). A `bash` call under the sandbox then looks for
//! them in every process it can see — `/proc/PID/environ`, each thread's `environ`,
//! `cmdline`, `/proc/PID/mem` over the stack (where the environment block lives),
//! `process_vm_readv`, attaching with `ptrace` — and finds nothing, while the test itself
//! sees both values in the servers' environments (so the probe looked where they are).
//! Without the sandbox it finds them, as the README says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::place;
use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

const PY: &str = "/usr/bin/python3";
const TOKEN: &str = "IKTOKEN-7b2f9c41e8";
const PASSWORD: &str = "IKPASS-5d0a3e66f1";

/// The probe: every readable trace of the two values in other processes, one `FOUND` line
/// each. The values' prefixes are split in its text, so its own command line holds none.
const PROBE: &str = r#"
import ctypes, os, re, sys, time
needles = [b"IKTOK" + b"EN-", b"IKPA" + b"SS-"]
me = os.getpid()
found = []
def look(how, pid, data):
    for n in needles:
        if data and n in data:
            found.append(f"FOUND {how} {pid} {n.decode()}")
def read(path, offset=None, size=None):
    try:
        with open(path, "rb") as f:
            if offset is not None:
                f.seek(offset)
                return f.read(size)
            return f.read()
    except OSError:
        return None
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) == me:
        continue
    pid = int(entry)
    look("environ", pid, read(f"/proc/{pid}/environ"))
    look("cmdline", pid, read(f"/proc/{pid}/cmdline"))
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            look("task-environ", pid, read(f"/proc/{pid}/task/{tid}/environ"))
    except OSError:
        pass
    maps = read(f"/proc/{pid}/maps") or b""
    m = re.search(rb"^([0-9a-f]+)-([0-9a-f]+) .*\[stack\]$", maps, re.M)
    if m:
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        look("mem", pid, read(f"/proc/{pid}/mem", lo, hi - lo))
        buf = ctypes.create_string_buffer(hi - lo)
        local = iovec(ctypes.cast(buf, ctypes.c_void_p), hi - lo)
        remote = iovec(lo, hi - lo)
        n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if n > 0:
            look("process_vm_readv", pid, buf.raw[:n])
    if libc.ptrace(0x4206, pid, None, None) == 0:  # PTRACE_SEIZE: no stop
        found.append(f"FOUND ptrace-attach {pid}")
print("\n".join(found) or "nothing found")
open("probe.ready", "w").close()
while not os.path.exists("probe.go"):
    time.sleep(0.05)
"#;

/// The environment of every process running the MCP fixture for the ikigai whose home is
/// `home`, as root reads it.
fn server_environments(home: &Path) -> Vec<String> {
    let home = format!("HOME={}\0", home.display());
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("tests/fixtures/mcp/server.py")
            && let Ok(env) = std::fs::read(format!("/proc/{pid}/environ"))
            && String::from_utf8_lossy(&env).contains(&home)
        {
            out.push(String::from_utf8_lossy(&env).replace('\0', "\n"));
        }
    }
    out
}

/// One run: the probe's result, after checking that the servers held the values.
fn run(sandbox: &str, as_nobody: bool) -> String {
    let who = format!(
        "sandbox {sandbox}, {}",
        if as_nobody { "as nobody" } else { "as root" }
    );
    let p = place();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py");
    let fixture = fixture.display().to_string();
    p.config(&format!(
        "sandbox = {sandbox:?}\n\
         [mcp_servers.tok]\ncommand = {PY:?}\nargs = [{fixture:?}, \"plain\"]\nenv = {{ API_TOKEN = {TOKEN:?} }}\n\
         [mcp_servers.pass]\ncommand = {PY:?}\nargs = [{fixture:?}, \"plain\"]\nenv = [\"SRV_PASSWORD\"]\n"
    ));
    std::fs::write(p.ws.join("probe.py"), PROBE).unwrap();
    if as_nobody {
        for d in [&p.ws, &p.tmp, &p.out] {
            super::chown_tree(d, 65534);
        }
    }
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &json!({ "command": format!("{PY} probe.py") }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::binary());
        c
    } else {
        Command::new(common::binary())
    };
    common::env::isolate(&mut cmd, &p.ws);
    let child = cmd
        .current_dir(&p.ws)
        .env("TMPDIR", &p.tmp)
        .env("OPENAI_API_KEY", "sk-test")
        .env("SRV_PASSWORD", PASSWORD)
        .args(["-p", "probe", "--base-url", &fake.base_url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    while !p.ws.join("probe.ready").exists() {
        assert!(Instant::now() < deadline, "{who}: the probe never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The values are there to be found: in the servers' environments.
    let envs = server_environments(&p.ws);
    std::fs::write(p.ws.join("probe.go"), "").unwrap();
    let done = child.wait_with_output().unwrap();
    assert_eq!(
        done.status.code(),
        Some(0),
        "{who}: {}",
        common::text(&done.stderr)
    );
    assert_eq!(envs.len(), 2, "{who}: {envs:?}");
    assert!(
        envs.iter().any(|e| e.contains(&format!("API_TOKEN={TOKEN}")))
            && envs
                .iter()
                .any(|e| e.contains(&format!("SRV_PASSWORD={PASSWORD}"))),
        "{who}: the servers do not hold the values: {envs:?}"
    );
    super::tool_results(&fake).remove(0)
}

/// What a sandboxed tool found: nothing, the values neither.
fn assert_nothing_found(result: &str, who: &str) {
    assert!(
        result.contains("nothing found"),
        "{who}: a sandboxed tool read a server's secret: {result}"
    );
    for v in [TOKEN, PASSWORD] {
        assert!(!result.contains(v), "{who}: {result}");
    }
}

#[test]
fn a_sandboxed_tool_reads_no_mcp_servers_secret_as_root() {
    assert_nothing_found(&run("workspace-write", false), "as root");
}

#[test]
fn a_sandboxed_tool_reads_no_mcp_servers_secret_as_an_ordinary_user() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not root: the run above is the ordinary user's");
        return;
    }
    assert_nothing_found(&run("workspace-write", true), "as nobody");
}

/// Without the sandbox a tool runs as you and reads your processes' environments, an MCP
/// server's included, as the README says ("What ikigai guarantees about keys"). Should
/// this ever fail, the limit is gone: say so there.
#[test]
fn without_the_sandbox_a_tool_reads_mcp_servers_environments_as_the_readme_says() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not root: cannot run ikigai as another user");
        return;
    }
    let result: serde_json::Value = serde_json::from_str(&run("off", true)).unwrap();
    let output = result["result"]["output"].as_str().unwrap();
    for prefix in ["IKTOK", "IKPA"] {
        for how in ["environ", "mem"] {
            let found = format!("FOUND {how} ");
            assert!(
                output
                    .lines()
                    .any(|l| l.starts_with(&found) && l.contains(prefix)),
                "{how} {prefix}: {output}"
            );
        }
    }
}

/// Nor can it signal one (Landlock ABI 6, where the kernel has it): ikigai, its parent,
/// stays out of reach of `kill`, while the tool's own processes are not.
#[test]
fn a_sandboxed_tool_cannot_signal_processes_outside_it() {
    if ikigai::permissions::kernel::landlock_abi() < 6 {
        eprintln!("this kernel's Landlock has no signal scoping (ABI 6)");
        return;
    }
    let p = place();
    let script = "kill -0 $PPID 2>&1 && echo reached-ikigai; sleep 5 & kill $! && echo own-ok";
    for (mode, reaches) in [("workspace-write", false), ("off", true)] {
        let out = p
            .ikigai()
            .args(["sandbox", "--mode", mode, "--", "sh", "-c", script])
            .output()
            .unwrap();
        let all = format!("{}{}", common::text(&out.stdout), common::text(&out.stderr));
        assert!(all.contains("own-ok"), "{mode}: {all}");
        assert_eq!(all.contains("reached-ikigai"), reaches, "{mode}: {all}");
        if !reaches {
            assert!(all.contains("Operation not permitted"), "{mode}: {all}");
        }
    }
}
