//! The instruction files the system prompt carries, in order: the user's global
//! `AGENTS.md` (in ikigai's config folder), then one file per folder from the project's
//! root (its git root) down to the working directory — `AGENTS.md`, or `CLAUDE.md` where
//! no `AGENTS.md` stands — each followed by the files it imports with `@path`. Only
//! regular files whose resolved path lies inside their scope are read (the project for
//! project files and their imports; the config folder for the global file's imports): a
//! symlink to `/proc/self/environ` or to `~/.aws/credentials` is skipped with a notice.
//! Everything read shares one byte budget. Reads files; never writes, never decides a
//! permission.

use std::path::{Path, PathBuf};

/// All instruction text together is cut past this (it goes into every request).
pub(crate) const CAP: usize = 64 * 1024;
/// Imports followed at most this many levels deep (an import's import is level 2).
const IMPORT_DEPTH: usize = 5;

/// Whose instructions a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Whose {
    /// The user's global file (or a file it imports).
    User,
    /// A project folder's file (or a file it imports).
    Project,
}

/// One file read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Instruction {
    /// As found (not resolved).
    pub path: PathBuf,
    /// Its text as sent (cut when over the budget).
    pub text: String,
    pub whose: Whose,
    /// The file that imported it, if any.
    pub imported_by: Option<PathBuf>,
    /// Its size on disk in bytes.
    pub size: u64,
}

impl Instruction {
    /// One line for `/memory`: its path, size and whose it is.
    pub(crate) fn line(&self) -> String {
        let whose = match (&self.imported_by, self.whose) {
            (Some(by), _) => format!("imported by {}", by.display()),
            (None, Whose::User) => "yours, global".to_string(),
            (None, Whose::Project) => "the project's".to_string(),
        };
        let cut = if self.text.len() < self.size as usize {
            format!(", {} sent", self.text.len())
        } else {
            String::new()
        };
        format!("{} ({} bytes{cut}, {whose})", self.path.display(), self.size)
    }
}

/// Everything the prompt carries, and what the user is told about what was skipped.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub files: Vec<Instruction>,
    pub notices: Vec<String>,
}

/// The instruction files for a session in `cwd`; `global` is ikigai's config folder (the
/// user's `AGENTS.md` is read from it), `home` the user's home folder.
pub(crate) fn read(cwd: &Path, global: Option<&Path>, env: crate::paths::Env<'_>) -> Read {
    let mut r = Reader {
        out: Read::default(),
        budget: CAP,
        seen: Vec::new(),
        home: env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
    };
    if let Some(dir) = global {
        let path = dir.join("AGENTS.md");
        r.file(&path, dir, Whose::User, None, 0);
    }
    let project = crate::paths::project_of(cwd, env);
    let mut folders: Vec<&Path> = cwd.ancestors().take_while(|d| d.starts_with(&project)).collect();
    folders.reverse();
    for dir in folders {
        let agents = dir.join("AGENTS.md");
        let path = if std::fs::symlink_metadata(&agents).is_ok() {
            agents
        } else {
            dir.join("CLAUDE.md")
        };
        r.file(&path, &project, Whose::Project, None, 0);
    }
    r.out
}

struct Reader {
    out: Read,
    budget: usize,
    /// Resolved paths already read (a file imported twice, or a folder's file imported
    /// by another, is sent once).
    seen: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl Reader {
    /// Reads `path` when it is there, then what it imports.
    fn file(&mut self, path: &Path, scope: &Path, whose: Whose, by: Option<&Path>, depth: usize) {
        // Not there at all: nothing to say.
        if std::fs::symlink_metadata(path).is_err() {
            return;
        }
        let resolved = match inside(path, scope, whose) {
            Ok(r) => r,
            Err(why) => {
                self.out
                    .notices
                    .push(format!("{} skipped: {why}", path.display()));
                return;
            }
        };
        if self.seen.contains(&resolved) {
            return;
        }
        self.seen.push(resolved.clone());
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if self.budget == 0 {
            self.out.notices.push(format!(
                "{} skipped: the instructions already fill their {} KiB",
                path.display(),
                CAP / 1024
            ));
            return;
        }
        let size = std::fs::metadata(&resolved).map(|m| m.len()).unwrap_or(0);
        // Read no more than is kept: a huge (or sparse) file costs nothing.
        let mut bytes = Vec::new();
        let Ok(f) = std::fs::File::open(&resolved) else {
            return;
        };
        if std::io::Read::read_to_end(&mut std::io::Read::take(f, self.budget as u64 + 4), &mut bytes)
            .is_err()
        {
            return;
        }
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if text.len() > self.budget {
            let end = crate::text::shorten(&text, self.budget).len();
            text.truncate(end);
            text.push_str(&format!("\n[{name} truncated]"));
            self.budget = 0;
        } else {
            self.budget -= text.len();
        }
        let imports = if depth < IMPORT_DEPTH {
            imports(&text)
        } else {
            Vec::new()
        };
        self.out.files.push(Instruction {
            path: path.to_path_buf(),
            text,
            whose,
            imported_by: by.map(Path::to_path_buf),
            size,
        });
        let base = path.parent().unwrap_or(scope).to_path_buf();
        for written in imports {
            let target = match (written.strip_prefix("~/"), &self.home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => base.join(&written),
            };
            // An `@word` that names no file is text (`@alice`), as in a prompt.
            if std::fs::symlink_metadata(&target).is_err() {
                continue;
            }
            self.file(&target, scope, whose, Some(path), depth + 1);
        }
    }
}

/// The `@path` imports in `text`, in order: a word starting with `@`, outside fenced code
/// blocks and code spans, its trailing punctuation not part of it.
pub(crate) fn imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_span = false;
        for word in line.split_whitespace() {
            let ticks = word.matches('`').count();
            let starts_in_span = in_span;
            if ticks % 2 == 1 {
                in_span = !in_span;
            }
            if starts_in_span || ticks > 0 {
                continue;
            }
            let Some(path) = word.strip_prefix('@') else {
                continue;
            };
            let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
            if !path.is_empty() && !out.iter().any(|p| p == path) {
                out.push(path.to_string());
            }
        }
    }
    out
}

/// `path` resolved, when it is a regular file inside `scope` (both resolved); else why it
/// may not be read.
fn inside(path: &Path, scope: &Path, whose: Whose) -> Result<PathBuf, String> {
    let resolved = path
        .canonicalize()
        .map_err(|e| format!("cannot resolve it ({e})"))?;
    let scope = scope
        .canonicalize()
        .map_err(|e| format!("cannot resolve the folder it must stay in ({e})"))?;
    if !resolved.starts_with(&scope) {
        return Err(format!(
            "it leads outside {}, to {}",
            match whose {
                Whose::User => "ikigai's config folder",
                Whose::Project => "the project",
            },
            resolved.display()
        ));
    }
    let meta = std::fs::metadata(&resolved).map_err(|e| format!("cannot read it ({e})"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    fn names(r: &Read, base: &Path) -> Vec<String> {
        r.files
            .iter()
            .map(|f| f.path.strip_prefix(base).unwrap_or(&f.path).display().to_string())
            .collect()
    }

    #[test]
    fn every_level_from_the_global_file_down_to_the_working_directory_in_order() {
        let t = tempfile::tempdir().unwrap();
        let global = t.path().join("config/ikigai");
        let repo = t.path().join("repo");
        let deep = repo.join("a/b/c");
        std::fs::create_dir_all(&global).unwrap();
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        std::fs::write(global.join("AGENTS.md"), "Global.").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "Root.").unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "Root claude: not read.").unwrap();
        std::fs::write(repo.join("a/CLAUDE.md"), "A claude.").unwrap();
        std::fs::write(deep.join("AGENTS.md"), "Deep.").unwrap();
        // Above the repository: not the project's.
        std::fs::write(t.path().join("AGENTS.md"), "Above.").unwrap();
        let r = read(&deep, Some(&global), &none);
        assert_eq!(
            names(&r, t.path()),
            [
                "config/ikigai/AGENTS.md",
                "repo/AGENTS.md",
                "repo/a/CLAUDE.md",
                "repo/a/b/c/AGENTS.md"
            ]
        );
        assert_eq!(r.files[0].whose, Whose::User);
        assert_eq!(r.files[0].size, 7);
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        // Outside a repository: the working directory alone.
        let lone = t.path().join("lone");
        std::fs::create_dir(&lone).unwrap();
        std::fs::write(lone.join("CLAUDE.md"), "Lone.").unwrap();
        assert_eq!(names(&read(&lone, None, &none), t.path()), ["lone/CLAUDE.md"]);
    }

    #[test]
    fn imports_are_followed_inside_their_scope_once_and_not_in_code() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("creds"), "SECRET-1").unwrap();
        let repo = t.path();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        std::fs::write(
            repo.join("AGENTS.md"),
            format!(
                "See @docs/style.md, and @docs/style.md again. Mail @alice.\n\
                 `@docs/code.md` is code; so is this:\n```\n@docs/fenced.md\n```\n\
                 Outside: @{} and @/proc/self/environ and @docs\n",
                outside.path().join("creds").display()
            ),
        )
        .unwrap();
        std::fs::write(repo.join("docs/style.md"), "Style. @../docs/deeper.md").unwrap();
        std::fs::write(repo.join("docs/deeper.md"), "Deeper. @../AGENTS.md").unwrap();
        std::fs::write(repo.join("docs/code.md"), "CODE").unwrap();
        std::fs::write(repo.join("docs/fenced.md"), "FENCED").unwrap();
        let r = read(repo, None, &none);
        assert_eq!(
            names(&r, repo),
            ["AGENTS.md", "docs/style.md", "docs/../docs/deeper.md"]
        );
        assert_eq!(r.files[1].imported_by.as_deref(), Some(&*repo.join("AGENTS.md")));
        let all: String = r.files.iter().map(|f| f.text.as_str()).collect();
        assert!(!all.contains("SECRET-1") && !all.contains("CODE") && !all.contains("FENCED"));
        // The link out, /proc and a folder are each skipped with a notice.
        assert_eq!(r.notices.len(), 3, "{:?}", r.notices);
        assert!(
            r.notices[0].contains("leads outside the project"),
            "{:?}",
            r.notices
        );
        assert!(r.notices[2].contains("not a regular file"), "{:?}", r.notices);
    }

    #[test]
    fn imports_stop_at_the_depth_limit() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..8 {
            std::fs::write(t.path().join(format!("f{i}.md")), format!("F{i} @f{}.md", i + 1)).unwrap();
        }
        std::fs::write(t.path().join("AGENTS.md"), "@f0.md").unwrap();
        let r = read(t.path(), None, &none);
        // AGENTS.md, then five levels of imports.
        assert_eq!(r.files.len(), 1 + IMPORT_DEPTH, "{:?}", names(&r, t.path()));
    }

    #[test]
    fn one_budget_for_all_files() {
        let t = tempfile::tempdir().unwrap();
        let sub = t.path().join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(t.path().join(".git")).unwrap();
        std::fs::write(t.path().join("AGENTS.md"), "x".repeat(CAP - 10)).unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "y".repeat(100)).unwrap();
        std::fs::write(sub.join("more.md"), "z").unwrap();
        std::fs::write(sub.join("CLAUDE.md"), format!("{} @more.md", "y".repeat(100))).unwrap();
        let r = read(&sub, None, &none);
        assert_eq!(r.files.len(), 2);
        assert!(r.files[1].text.ends_with("\n[CLAUDE.md truncated]"));
        assert!(r.files[1].text.len() < 100);
        // Cut text imports nothing; a later file is told as skipped.
        assert!(r.notices.is_empty(), "{:?}", r.notices);
    }
}
