//! Finds external tools: the executables in the system, user and project folders, each
//! asked for `--schema` in parallel (1 s each, then killed with its group). The project
//! folder's files are not even asked unless the folder is trusted. Applies the name rules
//! and precedence (user > system > built-in; a project tool only adds a new name) and says
//! what it skipped or overrode. Never runs a tool for real and never prints (notices are
//! returned).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use super::EnvPolicy;
use super::external::{ExternalTool, parse_schema};
use super::process::{self, Outcome, Spec, StderrMode, signal_name};
use crate::config::Config;
use crate::permissions::trust::NOT_TRUSTED;

/// How long a tool may take to answer `--schema` by default (`tool_schema_timeout_ms`).
pub const SCHEMA_TIMEOUT: Duration = Duration::from_secs(1);
/// The install prefix compiled in (`make install PREFIX=…` sets `IKIGAI_PREFIX`).
pub const PREFIX: &str = match option_env!("IKIGAI_PREFIX") {
    Some(p) => p,
    None => "/usr/local",
};
/// Largest `--schema` answer read.
const SCHEMA_CAP: usize = 1024 * 1024;

/// Where a folder sits in the precedence order (later wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    System,
    User,
    Project,
}

/// One folder searched for tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDir {
    pub origin: Origin,
    pub path: PathBuf,
}

/// Everything discovery needs; kept by the registry so `/refresh` can rescan.
#[derive(Clone, Debug)]
pub struct DiscoverySpec {
    pub dirs: Vec<ToolDir>,
    pub cwd: PathBuf,
    pub env: Arc<EnvPolicy>,
    /// For showing paths under the home folder as `~/…`.
    pub home: Option<PathBuf>,
    /// How long each tool may take to answer `--schema`.
    pub schema_timeout: Duration,
    /// Whether the project folder (`cwd`) is trusted: only then are its tools run.
    pub project_trust: ProjectTrust,
}

/// How discovery knows whether the project folder is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectTrust {
    Trusted,
    Untrusted,
    /// The user's trust list, read at every discovery (so `/refresh` sees an
    /// `ikigai trust` or `--revoke` made meanwhile).
    FromStore,
}

impl DiscoverySpec {
    /// The folders a config asks for, run from `cwd`.
    pub fn from_config(config: &Config, cwd: &Path, key_vars: Vec<String>) -> Self {
        let home = crate::environ::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let exe = std::env::current_exe().ok();
        // The project's tools are those of the folder whose settings apply here (the
        // repository's root, run from a subfolder).
        let root = crate::paths::settings_root(cwd, &|k| crate::environ::var(k));
        let mut dirs = tool_dirs(config, &root, home.as_deref(), exe.as_deref());
        // A configured `~/…` means the home folder.
        if let Some(h) = &home {
            for d in &mut dirs {
                if let Ok(rest) = d.path.strip_prefix("~") {
                    d.path = h.join(rest);
                }
            }
        }
        // Run in the home folder, the project folder is the user folder: its tools are
        // the user's.
        let user: Vec<PathBuf> = dirs
            .iter()
            .filter(|d| d.origin == Origin::User)
            .filter_map(|d| d.path.canonicalize().ok())
            .collect();
        dirs.retain(|d| {
            d.origin != Origin::Project || d.path.canonicalize().map_or(true, |p| !user.contains(&p))
        });
        DiscoverySpec {
            dirs,
            cwd: cwd.to_path_buf(),
            env: Arc::new(EnvPolicy::from_config(config, key_vars)),
            home,
            schema_timeout: Duration::from_millis(config.tool_schema_timeout_ms),
            project_trust: ProjectTrust::FromStore,
        }
    }

    /// Whether the project folder is trusted now.
    pub fn project_trusted(&self) -> bool {
        match self.project_trust {
            ProjectTrust::Trusted => true,
            ProjectTrust::Untrusted => false,
            ProjectTrust::FromStore => {
                crate::permissions::trust::is_trusted(&crate::paths::settings_root(&self.cwd, &|k| {
                    crate::environ::var(k)
                }))
            }
        }
    }

    /// The project folder's tool files, when the folder is not trusted (not run; listed
    /// so the user can be asked).
    pub fn untrusted_tools(&self) -> Vec<PathBuf> {
        if self.project_trusted() {
            return Vec::new();
        }
        self.dirs
            .iter()
            .filter(|d| d.origin == Origin::Project)
            .flat_map(|d| candidates(&d.path))
            .collect()
    }

    /// `path` with the home folder shown as `~`.
    pub fn shown(&self, path: &Path) -> String {
        match self.home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
            Some(rest) => format!("~/{}", rest.display()),
            None => path.display().to_string(),
        }
    }
}

/// The three folders, in precedence order (system, user, project): config overrides, else
/// `<exe dir>/../libexec/ikigai` when it exists, else `PREFIX/libexec/ikigai`;
/// `~/.ikigai/tools`; `.ikigai/tools` in `cwd`.
pub fn tool_dirs(config: &Config, cwd: &Path, home: Option<&Path>, exe: Option<&Path>) -> Vec<ToolDir> {
    let c = &config.tool_dirs;
    let system = c.system.clone().unwrap_or_else(|| {
        let beside = exe
            .and_then(Path::parent)
            .and_then(Path::parent)
            .map(|root| root.join("libexec/ikigai"))
            .filter(|p| p.is_dir());
        beside.unwrap_or_else(|| Path::new(PREFIX).join("libexec/ikigai"))
    });
    let mut dirs = vec![ToolDir {
        origin: Origin::System,
        path: system,
    }];
    let user = c.user.clone().or_else(|| home.map(|h| h.join(".ikigai/tools")));
    if let Some(user) = user {
        dirs.push(ToolDir {
            origin: Origin::User,
            path: user,
        });
    }
    let project = c
        .project
        .clone()
        .unwrap_or_else(|| PathBuf::from(".ikigai/tools"));
    dirs.push(ToolDir {
        origin: Origin::Project,
        path: cwd.join(project),
    });
    dirs
}

/// A file that looked like a tool but is not offered, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
    /// Not run at all: it is in the project folder, which is not trusted.
    pub untrusted: bool,
}

impl Skipped {
    fn new(path: PathBuf, reason: String) -> Self {
        Skipped {
            path,
            reason,
            untrusted: false,
        }
    }
}

/// What one discovery found.
#[derive(Default)]
pub struct Found {
    /// Winning tools, by name.
    pub tools: Vec<ExternalTool>,
    pub skipped: Vec<Skipped>,
    /// One line per skipped tool and per override, for the scrollback.
    pub notices: Vec<String>,
}

/// Executable regular files (or symlinks to one) of `dir`, sorted by name; dot files are
/// ignored. A missing folder has none.
pub fn candidates(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .collect();
    files.sort();
    files
}

/// Regular files of `dir` (or symlinks to one) without an execute bit, sorted by name; dot
/// files and notes (`.md`, `.txt`) are ignored. They look like tools the user forgot to
/// `chmod +x`.
fn not_executable(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let note = |name: &str| {
        let lower = name.to_ascii_lowercase();
        name.starts_with('.') || lower.ends_with(".md") || lower.ends_with(".txt")
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| !note(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 == 0))
        .collect();
    files.sort();
    files
}

/// Asks one file for its schema.
async fn ask(path: PathBuf, spec: &DiscoverySpec) -> Result<ExternalTool, String> {
    let run = Spec {
        program: path.clone(),
        args: vec!["--schema".into()],
        cwd: spec.cwd.clone(),
        env: spec.env.current(),
        stdin: None,
        stderr: StderrMode::Separate(4096),
        stdout_cap: SCHEMA_CAP,
        stop_when_full: true,
        timeout: spec.schema_timeout,
        share_partial: false,
        live: process::LiveFrom::Nothing,
    };
    let finished = process::run(run)
        .await
        .map_err(|e| format!("cannot run it: {e}"))?;
    match finished.outcome {
        Outcome::TimedOut => {
            let secs = spec.schema_timeout.as_secs_f64();
            return Err(format!("--schema timed out after {secs} s"));
        }
        Outcome::OutputFull => return Err("--schema printed more than 1 MiB".into()),
        Outcome::Exited(status) if !status.success() => {
            use std::os::unix::process::ExitStatusExt;
            return Err(match (status.code(), status.signal()) {
                (Some(c), _) => format!("--schema exited with code {c}"),
                (_, Some(s)) => format!("--schema was killed by {}", signal_name(s)),
                _ => "--schema failed".into(),
            });
        }
        Outcome::Exited(_) => {}
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let schema = parse_schema(&finished.stdout.finish().text, &file_name)?;
    Ok(ExternalTool { path, schema })
}

/// Runs discovery: every candidate of every folder asked in parallel (the project folder's
/// only when it is trusted), then the rules. `builtin` names the built-in tools, for the
/// override notices.
pub async fn discover(spec: &DiscoverySpec, builtin: &[String]) -> Found {
    let mut found = Found::default();
    let mut jobs = Vec::new();
    let mut untrusted = Vec::new();
    let trusted = spec.project_trusted();
    for dir in &spec.dirs {
        for path in candidates(&dir.path) {
            if dir.origin == Origin::Project && !trusted {
                untrusted.push(path);
            } else {
                jobs.push((dir.clone(), path));
            }
        }
        if dir.origin != Origin::Project || trusted {
            for path in not_executable(&dir.path) {
                let file = path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                let reason = "not executable (chmod +x makes it a tool)".to_string();
                found
                    .notices
                    .push(format!("tool '{file}' skipped: {reason} ({})", spec.shown(&path)));
                found.skipped.push(Skipped::new(path, reason));
            }
        }
    }
    if let Some(first) = untrusted.first() {
        let folder = first.parent().map(|p| spec.shown(p)).unwrap_or_default();
        let n = untrusted.len();
        let tools = if n == 1 { "tool" } else { "tools" };
        found.notices.push(format!(
            "{n} project {tools} in {folder} {NOT_TRUSTED}; `ikigai trust` trusts it"
        ));
        found.skipped.extend(untrusted.into_iter().map(|path| Skipped {
            path,
            reason: NOT_TRUSTED.to_string(),
            untrusted: true,
        }));
    }
    let answers = join_all(jobs.iter().map(|(_, p)| ask(p.clone(), spec))).await;
    // name → (tool, its folder), filled from the lowest precedence up.
    let mut winners: Vec<(ExternalTool, ToolDir)> = Vec::new();
    let mut in_this_dir: Vec<(String, PathBuf)> = Vec::new();
    let mut current: Option<PathBuf> = None;
    for ((dir, path), answer) in jobs.into_iter().zip(answers) {
        if current.as_ref() != Some(&dir.path) {
            current = Some(dir.path.clone());
            in_this_dir.clear();
        }
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tool = match answer {
            Ok(t) => t,
            Err(reason) => {
                found
                    .notices
                    .push(format!("tool '{file}' skipped: {reason} ({})", spec.shown(&path)));
                found.skipped.push(Skipped::new(path, reason));
                continue;
            }
        };
        let name = tool.schema.name.clone();
        if let Some((_, first)) = in_this_dir.iter().find(|(n, _)| *n == name) {
            let reason = format!("`{name}` is already declared by {}", spec.shown(first));
            found.notices.push(format!("tool '{file}' skipped: {reason}"));
            found.skipped.push(Skipped::new(path, reason));
            continue;
        }
        in_this_dir.push((name.clone(), path.clone()));
        // A project tool only adds a name: it never stands in for a tool the user or the
        // system provides, nor for a built-in.
        if dir.origin == Origin::Project {
            let taken = if builtin.contains(&name) {
                Some("a built-in tool".to_string())
            } else {
                winners
                    .iter()
                    .find(|(t, _)| t.schema.name == name)
                    .map(|(_, d)| format!("the tool from {}", spec.shown(&d.path)))
            };
            if let Some(taken) = taken {
                let reason = format!("`{name}` is {taken}; a project tool cannot replace it");
                found
                    .notices
                    .push(format!("tool '{file}' skipped: {reason} ({})", spec.shown(&path)));
                found.skipped.push(Skipped::new(path, reason));
                continue;
            }
        }
        if let Some(i) = winners.iter().position(|(t, _)| t.schema.name == name) {
            let (_, lower) = winners.remove(i);
            found.notices.push(format!(
                "tool `{name}` from {} overrides the one from {}",
                spec.shown(&dir.path),
                spec.shown(&lower.path)
            ));
        }
        winners.push((tool, dir));
    }
    for (tool, dir) in &winners {
        if builtin.contains(&tool.schema.name) {
            found.notices.push(format!(
                "tool `{}` from {} overrides the built-in",
                tool.schema.name,
                spec.shown(&dir.path)
            ));
        }
    }
    winners.sort_by(|a, b| a.0.schema.name.cmp(&b.0.schema.name));
    found.tools = winners.into_iter().map(|(t, _)| t).collect();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_folders_and_overrides() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin/ikigai");
        let cwd = root.path().join("proj");
        let home = root.path().join("home");
        let cfg = Config::default();
        let dirs = tool_dirs(&cfg, &cwd, Some(&home), Some(&bin));
        let paths: Vec<(Origin, PathBuf)> = dirs.into_iter().map(|d| (d.origin, d.path)).collect();
        assert_eq!(
            paths,
            [
                (Origin::System, Path::new(PREFIX).join("libexec/ikigai")),
                (Origin::User, home.join(".ikigai/tools")),
                (Origin::Project, cwd.join(".ikigai/tools")),
            ]
        );
        // A libexec/ikigai beside the binary's folder (a build tree, a relocated install).
        std::fs::create_dir_all(root.path().join("libexec/ikigai")).unwrap();
        std::fs::create_dir_all(root.path().join("bin")).unwrap();
        let dirs = tool_dirs(&cfg, &cwd, Some(&home), Some(&bin));
        assert_eq!(dirs[0].path, root.path().join("libexec/ikigai"));
        let cfg = Config {
            tool_dirs: crate::config::ToolDirs {
                system: Some("/opt/sys".into()),
                user: Some("/opt/user".into()),
                project: Some("tools".into()),
            },
            ..Config::default()
        };
        let dirs = tool_dirs(&cfg, &cwd, Some(&home), Some(&bin));
        let paths: Vec<PathBuf> = dirs.into_iter().map(|d| d.path).collect();
        assert_eq!(
            paths,
            [PathBuf::from("/opt/sys"), "/opt/user".into(), cwd.join("tools")]
        );
    }
}
