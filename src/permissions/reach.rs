//! The files inside a project that its ikigai settings name or reach, beyond `.ikigai/`
//! itself: what a project tool links to, and what each project MCP server's `command`,
//! arguments and `env` values name (`sh scripts/mcp.sh`, `python -m pkg`, `node srv/`,
//! `--config=conf/x.toml`, a word of an `sh -c` string), relative to the server's `cwd`.
//! The trust digest pins them (`pin`) and `ask` mode asks before a file tool writes them
//! (`protected`). Each kind of setting is one source in `SOURCES`; a new kind of setting
//! that runs project files (hooks) adds its own. What those files load in turn (a script's
//! imports) is not followed. Reads settings and stats files; never runs anything.

use std::path::{Path, PathBuf};

use crate::config::mcp::Transport;

/// One file or folder inside the project that the settings reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reached {
    /// Canonical, inside the project, never the project folder itself.
    pub path: PathBuf,
    /// Which setting reaches it: `MCP server helper`, `project tool mytool`.
    pub by: String,
}

/// A kind of setting that may run project files: it adds what it reaches.
type Source = fn(&Project, &mut Vec<Reached>);

/// Every source, in the order the digest takes them.
const SOURCES: [Source; 2] = [tool_links, mcp_servers];

/// The project ikigai runs in, as the sources see it.
struct Project {
    /// Canonical.
    root: PathBuf,
}

impl Project {
    /// `p` when it exists inside the project and is not the project itself (a setting
    /// that names the whole project, `node .`, cannot be pinned: every edit would break
    /// trust), canonical.
    fn inside(&self, p: &Path) -> Option<PathBuf> {
        let real = p.canonicalize().ok()?;
        (real.starts_with(&self.root) && real != self.root).then_some(real)
    }
}

/// What `dir`'s project settings reach, sorted by path, each path once (the first
/// setting that reaches it is named).
pub fn reached(dir: &Path) -> Vec<Reached> {
    let Ok(root) = dir.canonicalize() else {
        return Vec::new();
    };
    let project = Project { root };
    let mut out = Vec::new();
    for source in SOURCES {
        source(&project, &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    out
}

/// Project tools that are links: the file each leads to.
fn tool_links(p: &Project, out: &mut Vec<Reached>) {
    let Ok(entries) = std::fs::read_dir(p.root.join(".ikigai/tools")) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        if let Some(path) = p.inside(&e.path()) {
            out.push(Reached {
                path,
                by: format!("project tool {}", e.file_name().to_string_lossy()),
            });
        }
    }
}

/// Each stdio server of `.ikigai/config.toml`: its command when given by path, and every
/// argument or `env` value (or a word or `=` tail of one) naming a file or folder, from
/// the server's `cwd`; `-m NAME` names a Python module (`NAME.py`, `NAME/`).
fn mcp_servers(p: &Project, out: &mut Vec<Reached>) {
    // A file that does not parse is pinned as it is (its bytes are in the digest).
    let Ok(servers) = crate::config::mcp::load_project(&p.root) else {
        return;
    };
    let home = crate::environ::var_os("HOME").map(PathBuf::from);
    for s in servers {
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
            ..
        } = &s.transport
        else {
            continue;
        };
        let dir = match cwd {
            Some(c) => p.root.join(c),
            None => p.root.clone(),
        };
        let by = format!("MCP server {}", s.name);
        let mut named: Vec<PathBuf> = Vec::new();
        if command.contains('/') {
            named.push(dir.join(command));
        }
        let mut module_next = false;
        for text in args.iter().chain(env.values()) {
            if module_next {
                named.extend(module_files(&dir, text));
            }
            module_next = matches!(text.as_str(), "-m" | "--module");
            if let Some(m) = text
                .strip_prefix("-m")
                .filter(|m| !m.is_empty() && !m.starts_with('-'))
            {
                named.extend(module_files(&dir, m));
            }
            for word in words(text) {
                named.push(match word.strip_prefix("~/").zip(home.as_deref()) {
                    Some((rest, home)) => home.join(rest),
                    None => dir.join(word),
                });
            }
        }
        for path in named {
            if let Some(path) = p.inside(&path) {
                out.push(Reached { path, by: by.clone() });
            }
        }
    }
}

/// The parts of one argument that may name a file: itself, each of its words (an
/// `sh -c` string), and what follows a `=` in each (`--config=x.toml`).
fn words(text: &str) -> Vec<&str> {
    let mut out = vec![text];
    for w in text.split_whitespace() {
        out.push(w.trim_matches(['"', '\'']));
        if let Some((_, tail)) = w.split_once('=') {
            out.push(tail.trim_matches(['"', '\'']));
        }
    }
    out.retain(|w| !w.is_empty() && !w.starts_with('-') && !w.contains('\0'));
    out.dedup();
    out
}

/// Where Python finds module `name` from `dir`: its top package's folder, or `top.py`.
fn module_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let top = name.split('.').next().unwrap_or(name);
    if top.is_empty() || top.contains('/') {
        return Vec::new();
    }
    vec![dir.join(top), dir.join(format!("{top}.py"))]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn rel(dir: &Path, r: &[Reached]) -> Vec<(String, String)> {
        let root = dir.canonicalize().unwrap();
        r.iter()
            .map(|x| {
                (
                    x.path.strip_prefix(&root).unwrap().display().to_string(),
                    x.by.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn servers_and_tool_links_reach_the_project_files_they_name() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("proj");
        for f in [
            "scripts/mcp.sh",
            "scripts/tool.sh",
            "scripts/inner.sh",
            "pkg/__main__.py",
            "mod.py",
            "srv/index.js",
            "sub/main.sh",
            "conf/x.toml",
            "envfile.json",
            "bin/server",
            "unrelated.txt",
        ] {
            write(&d.join(f), "x");
        }
        write(&t.path().join("outside.sh"), "x");
        std::fs::create_dir_all(d.join(".ikigai/tools")).unwrap();
        std::os::unix::fs::symlink("../../scripts/tool.sh", d.join(".ikigai/tools/mytool")).unwrap();
        std::os::unix::fs::symlink(t.path().join("outside.sh"), d.join(".ikigai/tools/out")).unwrap();
        write(
            &d.join(".ikigai/config.toml"),
            r#"
[mcp_servers.a]
command = "sh"
args = ["scripts/mcp.sh", "missing.sh", "../outside.sh", "."]
[mcp_servers.b]
command = "python3"
args = ["-m", "pkg.cli"]
[mcp_servers.c]
command = "node"
args = ["srv/", "--config=conf/x.toml", "-c", "sh 'scripts/inner.sh' && true"]
[mcp_servers.d]
command = "sh"
args = ["main.sh"]
cwd = "sub"
[mcp_servers.e]
command = "./bin/server"
args = ["-mmod"]
env = { CONFIG = "envfile.json" }
[mcp_servers.web]
url = "https://example.com/mcp"
"#,
        );
        let found = rel(&d, &reached(&d));
        let expect = [
            ("bin/server", "MCP server e"),
            ("conf/x.toml", "MCP server c"),
            ("envfile.json", "MCP server e"),
            ("mod.py", "MCP server e"),
            ("pkg", "MCP server b"),
            ("scripts/inner.sh", "MCP server c"),
            ("scripts/mcp.sh", "MCP server a"),
            ("scripts/tool.sh", "project tool mytool"),
            ("srv", "MCP server c"),
            ("sub/main.sh", "MCP server d"),
        ];
        let expect: Vec<(String, String)> = expect
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(found, expect);
        // No settings, or settings that do not parse: nothing reached.
        std::fs::write(d.join(".ikigai/config.toml"), "[mcp_servers.x\n").unwrap();
        assert_eq!(
            rel(&d, &reached(&d)),
            [("scripts/tool.sh".to_string(), "project tool mytool".to_string())]
        );
        assert!(reached(&t.path().join("none")).is_empty());
    }
}
