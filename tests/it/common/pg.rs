//! A real, ephemeral PostgreSQL server for tests: `initdb` + `pg_ctl` in a temp folder,
//! listening on 127.0.0.1 on a free port (socket in the temp folder), trust auth.
//! `Cluster` stops the server and removes the folder on drop; `shared()` is one cluster
//! per test binary, cleaned up by a watcher process when the binary exits. As root the
//! server runs as the `postgres` user (or `ikigai-pg`, created when missing), since
//! PostgreSQL refuses to run as root. If the server cannot start, the test fails.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::Connection;

/// One running (or stopped) PostgreSQL server.
pub struct Cluster {
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    bin: PathBuf,
    run_as: Option<String>,
    port: u16,
    running: bool,
    watcher: Option<std::process::Child>,
}

static SHARED: OnceLock<Cluster> = OnceLock::new();
static NEXT_DB: AtomicUsize = AtomicUsize::new(0);

/// The cluster every test of this binary shares (each test makes its own database).
pub fn shared() -> &'static Cluster {
    SHARED.get_or_init(|| {
        let mut c = Cluster::init();
        c.start();
        c.watch_parent();
        c
    })
}

fn fail(what: &str, detail: &str) -> ! {
    panic!(
        "PostgreSQL test server: {what}\n{detail}\n\
         (the tests need PostgreSQL's server binaries: `make deps` installs them, \
         or apt-get install postgresql)"
    )
}

/// The folder holding `initdb`, `pg_ctl` and `postgres`.
fn bin_dir() -> PathBuf {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return dir;
            }
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => fail(
            "initdb not found",
            "looked on PATH and in /usr/lib/postgresql/*/bin",
        ),
    }
}

fn id_of(user: &str, flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, user]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// As root: the unprivileged user the server runs as.
fn server_user() -> Option<String> {
    let euid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if euid.as_deref().unwrap_or("") != "0" {
        return None;
    }
    for user in ["postgres", "ikigai-pg"] {
        if id_of(user, "-u").is_some() {
            return Some(user.to_string());
        }
    }
    let out = Command::new("useradd")
        .args(["-r", "-M", "-s", "/usr/sbin/nologin", "ikigai-pg"])
        .output();
    match out {
        Ok(o) if o.status.success() => Some("ikigai-pg".to_string()),
        Ok(o) => fail(
            "cannot create user ikigai-pg",
            &String::from_utf8_lossy(&o.stderr),
        ),
        Err(e) => fail("cannot run useradd", &e.to_string()),
    }
}

fn free_port() -> u16 {
    match TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.port(),
        Err(e) => fail("no free port on 127.0.0.1", &e.to_string()),
    }
}

impl Cluster {
    /// Creates the cluster (initdb) without starting it; the port is chosen now.
    pub fn init() -> Cluster {
        let bin = bin_dir();
        let run_as = server_user();
        let dir = tempfile::Builder::new()
            .prefix("ikigai-pg-")
            .tempdir_in("/tmp")
            .unwrap_or_else(|e| fail("cannot make a temp folder", &e.to_string()));
        let root = dir.path().to_path_buf();
        std::fs::create_dir(root.join("sock"))
            .unwrap_or_else(|e| fail("cannot make socket folder", &e.to_string()));
        if let Some(user) = &run_as {
            let (uid, gid) = (id_of(user, "-u"), id_of(user, "-g"));
            for p in [root.clone(), root.join("sock")] {
                std::os::unix::fs::chown(&p, uid, gid)
                    .unwrap_or_else(|e| fail(&format!("cannot chown {}", p.display()), &e.to_string()));
            }
        }
        let c = Cluster {
            dir: Some(dir),
            root,
            bin,
            run_as,
            port: free_port(),
            running: false,
            watcher: None,
        };
        let data = c.data();
        let out = c
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .unwrap_or_else(|e| fail("cannot run initdb", &e.to_string()));
        if !out.status.success() {
            fail(
                "initdb failed",
                &format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            );
        }
        c
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    fn log(&self) -> PathBuf {
        self.root.join("server.log")
    }

    /// A command for one of the server binaries, as the server user when root.
    fn command(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        let mut c = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        c.stdin(Stdio::null());
        c
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -F -c full_page_writes=off -c max_connections=200",
            self.port,
            self.root.join("sock").display()
        );
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.log())
            .args(["-w", "-t", "60", "-o", &opts, "start"])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            let log = std::fs::read_to_string(self.log()).unwrap_or_default();
            Err(format!("{}\n{log}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Starts the server; the first start may move to another port if this one is taken.
    pub fn start(&mut self) {
        let mut tries = 0;
        loop {
            match self.pg_ctl_start() {
                Ok(()) => break,
                Err(e) if !self.ever_started() && tries < 5 && e.contains("already in use") => {
                    tries += 1;
                    self.port = free_port();
                }
                Err(e) => fail(&format!("pg_ctl start failed on port {}", self.port), &e),
            }
        }
        self.running = true;
    }

    fn ever_started(&self) -> bool {
        self.data().join("postmaster.opts").exists()
    }

    /// Stops the server at once (as a crash would); `start` brings it back on the same port.
    pub fn stop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        self.running = false;
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of a database on this server.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates a fresh database and returns its URL.
    pub async fn database(&self, hint: &str) -> String {
        let name = format!(
            "t_{}_{}_{}",
            hint,
            std::process::id(),
            NEXT_DB.fetch_add(1, Ordering::SeqCst)
        );
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| fail("cannot connect to the test server", &e.to_string()));
        sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| fail("CREATE DATABASE failed", &e.to_string()));
        let _ = conn.close().await;
        self.url(&name)
    }

    /// For a cluster that lives in a static (never dropped): a small shell process stops
    /// the server and removes the folder once this test process is gone.
    fn watch_parent(&mut self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let stop = match &self.run_as {
            Some(user) => format!("runuser -u {user} -- {}", pg_ctl.display()),
            None => pg_ctl.display().to_string(),
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop} -D {data} -m immediate -w stop >/dev/null 2>&1; rm -rf {root}",
            pid = std::process::id(),
            data = self.data().display(),
            root = self.root.display(),
        );
        use std::os::unix::process::CommandExt;
        let child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| fail("cannot start the cleanup watcher", &e.to_string()));
        self.watcher = Some(child);
        // The watcher removes the folder; TempDir must not race it.
        if let Some(dir) = self.dir.take() {
            let _ = dir.keep();
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.running {
            self.stop();
        }
        // `dir` (when still owned) removes the folder as it drops.
    }
}
