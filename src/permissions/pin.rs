//! What a project's ikigai settings looked like when the user trusted them: one digest
//! of everything in `.ikigai/` that runs something, grants permissions or speaks for the
//! user (`config.toml`: rules and MCP servers; the `tools/` folder; custom `commands/`;
//! skills, in `.ikigai/skills/` and the compatible `.claude/skills/` and `.agents/skills/`),
//! and of every project file those settings run (`reach`: what a project tool links to,
//! the scripts and folders an MCP server's command line names). A sandboxed command may
//! write anywhere in the working directory, `.ikigai/` included (Landlock cannot exclude
//! a subfolder), so a trusted folder's settings count only while they and what they run
//! are the ones trusted, as direnv does with `.envrc`. A folder whose settings reach no
//! file and hold no command has the digest it had before those were covered. Reads
//! files; follows a symlink only to a file inside the project; decides nothing.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::reach::{self, Reached};

/// The parts of `.ikigai/` that run something or grant permissions.
const PARTS: [&str; 2] = ["config.toml", "tools"];
/// Bytes of file content hashed at most; past it, a file counts by its size and mtime.
const CONTENT_CAP: u64 = 16 * 1024 * 1024;
/// Entries walked at most (a folder of more is hashed by its count alone past it).
const ENTRY_CAP: usize = 10_000;

/// Folders a program writes into the folder it runs from, derived from its files: not
/// pinned in a reached folder (Python writes `__pycache__` on import; pinning it would
/// undo trust at the first start). A bytecode file planted there to match a pinned
/// source's size and time is the one thing a reached folder does not pin.
const DERIVED: [&str; 1] = ["__pycache__"];

/// The custom commands' folder in `.ikigai/`: in the digest from the second version on.
const COMMANDS: &str = "commands";

/// The digest of `dir`'s project settings (hex); the same for a folder without any.
pub fn fingerprint(dir: &Path) -> String {
    fingerprint_of(dir, &reach::reached(dir))
}

/// The digest, with what the settings reach already known.
fn fingerprint_of(dir: &Path, reached: &[Reached]) -> String {
    let root = dir.join(".ikigai");
    let mut h = Sha256::new();
    let mut budget = Budget {
        bytes: CONTENT_CAP,
        entries: ENTRY_CAP,
        within: None,
    };
    for part in PARTS {
        walk(&root, Path::new(part), &mut h, &mut budget);
    }
    // Pins taken before commands and reached files were covered stay valid for a folder
    // that has neither.
    let commands = std::fs::symlink_metadata(root.join(COMMANDS)).is_ok();
    if commands || !reached.is_empty() {
        h.update(b"\0v2\0");
        walk(&root, Path::new(COMMANDS), &mut h, &mut budget);
        let project = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        budget.within = Some(project.clone());
        for r in reached {
            if let Ok(rel) = r.path.strip_prefix(&project) {
                h.update(b"\0reached\0");
                walk(&project, rel, &mut h, &mut budget);
            }
        }
    }
    skills(dir, &mut h, &mut budget);
    hex(&h.finalize())
}

/// The project's skill folders (`skills::PROJECT_DIRS`: `.ikigai/skills`,
/// `.claude/skills`, `.agents/skills`) and sub-agent types (`.ikigai/agents`), when any
/// is there: each as it stands, and the
/// project folder each skill found through a link really is (what is loaded is what is
/// pinned). A folder with none has the digest it had before skills were covered.
fn skills(dir: &Path, h: &mut Sha256, budget: &mut Budget) {
    let places: Vec<&str> = crate::skills::PROJECT_DIRS
        .into_iter()
        .chain([crate::agent_types::PROJECT_DIR])
        .filter(|p| std::fs::symlink_metadata(dir.join(p)).is_ok())
        .collect();
    if places.is_empty() {
        return;
    }
    h.update(b"\0skills\0");
    let project = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    budget.within = Some(project.clone());
    for rel in places {
        walk(dir, Path::new(rel), h, budget);
        for real in crate::skills::real_folders(&dir.join(rel)) {
            if !real.starts_with(project.join(rel))
                && let Ok(inside) = real.strip_prefix(&project)
            {
                h.update(b"\0linked\0");
                walk(&project, inside, h, budget);
            }
        }
    }
}

/// What the digest covers in `dir`, one short line each (for notices and questions):
/// `.ikigai/config.toml`, `scripts/mcp.sh (MCP server helper)`.
pub fn covered(dir: &Path, reached: &[Reached]) -> Vec<String> {
    let mut out: Vec<String> = PARTS
        .iter()
        .chain(std::iter::once(&COMMANDS))
        .filter(|p| std::fs::symlink_metadata(dir.join(".ikigai").join(p)).is_ok())
        .map(|p| format!(".ikigai/{p}"))
        .collect();
    out.extend(
        crate::skills::PROJECT_DIRS
            .iter()
            .chain(&[crate::agent_types::PROJECT_DIR])
            .filter(|p| std::fs::symlink_metadata(dir.join(p)).is_ok())
            .map(|p| p.to_string()),
    );
    let project = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for r in reached {
        let shown = r.path.strip_prefix(&project).unwrap_or(&r.path);
        out.push(format!("{} ({})", shown.display(), r.by));
    }
    out
}

struct Budget {
    bytes: u64,
    entries: usize,
    /// The project, when links inside a reached folder are followed to files in it.
    within: Option<PathBuf>,
}

/// Hashes `root/rel`: its kind, then a file's mode and content, a link's target (and,
/// within the project, the content of the file it leads to), a folder's entries in name
/// order.
fn walk(root: &Path, rel: &Path, h: &mut Sha256, budget: &mut Budget) {
    let path = root.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return;
    };
    if budget.entries == 0 {
        h.update(b"\0more\0");
        return;
    }
    budget.entries -= 1;
    h.update(rel.to_string_lossy().as_bytes());
    h.update(b"\0");
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = std::fs::read_link(&path).unwrap_or_default();
        h.update(b"link\0");
        h.update(target.to_string_lossy().as_bytes());
        // A link in a reached folder to a file of the project: that file runs too.
        if let Some(project) = budget.within.clone()
            && let Ok(real) = path.canonicalize()
            && real.starts_with(&project)
            && real.is_file()
        {
            h.update(b"\0to\0");
            content(&real, h, budget);
        }
    } else if ft.is_dir() {
        h.update(b"dir\0");
        let mut names: Vec<_> = std::fs::read_dir(&path)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        if budget.within.is_some() {
            names.retain(|n| !DERIVED.iter().any(|d| n == d));
        }
        names.sort();
        for name in names {
            walk(root, &rel.join(name), h, budget);
        }
    } else if ft.is_file() {
        content(&path, h, budget);
    } else {
        h.update(b"other\0");
    }
    h.update(b"\0end\0");
}

/// Hashes a regular file: its mode and size, then its bytes while the budget lasts, else
/// its modification time.
fn content(path: &Path, h: &mut Sha256, budget: &mut Budget) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    h.update(format!("file\0{:o}\0{}\0", meta.permissions().mode(), meta.len()).as_bytes());
    match std::fs::read(path) {
        Ok(bytes) if (bytes.len() as u64) <= budget.bytes => {
            budget.bytes -= bytes.len() as u64;
            h.update(&bytes);
        }
        _ => {
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            h.update(format!("{mtime:?}").as_bytes());
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_to_what_runs_or_grants_changes_it_and_other_files_do_not() {
        let d = tempfile::tempdir().unwrap();
        let empty = fingerprint(d.path());
        let ik = d.path().join(".ikigai");
        std::fs::create_dir_all(ik.join("tools")).unwrap();
        // Empty folders and files elsewhere are no settings.
        std::fs::write(d.path().join("README.md"), "x").unwrap();
        std::fs::write(ik.join("notes.txt"), "x").unwrap();
        let base = fingerprint(d.path());
        assert_eq!(fingerprint(d.path()), base, "stable");
        let mut seen = vec![empty, base];
        let mut changed = |what: &str| {
            let now = fingerprint(d.path());
            assert!(!seen.contains(&now), "{what} did not change the digest");
            seen.push(now);
        };
        std::fs::write(ik.join("config.toml"), "[mcp_servers.x]\ncommand = \"a\"\n").unwrap();
        changed("a config");
        std::fs::write(ik.join("config.toml"), "[mcp_servers.x]\ncommand = \"b\"\n").unwrap();
        changed("a config's content");
        std::fs::write(ik.join("tools/t"), "#!/bin/sh\n").unwrap();
        changed("a tool");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(ik.join("tools/t"), std::fs::Permissions::from_mode(0o755)).unwrap();
        changed("a tool made executable");
        std::os::unix::fs::symlink("/etc/passwd", ik.join("tools/l")).unwrap();
        changed("a tool as a link");
        // Other files of `.ikigai/` and the project are no settings.
        let before = fingerprint(d.path());
        std::fs::write(ik.join("notes.txt"), "y").unwrap();
        std::fs::write(d.path().join("README.md"), "y").unwrap();
        assert_eq!(fingerprint(d.path()), before);
        // Custom commands speak for the user: in it.
        std::fs::create_dir_all(ik.join("commands")).unwrap();
        changed("a commands folder");
        std::fs::write(ik.join("commands/c.md"), "Review $1.").unwrap();
        changed("a command");
        std::fs::write(ik.join("commands/c.md"), "Review @~/.ssh/id_rsa.").unwrap();
        changed("a command's text");
    }

    /// Skills speak for the user: each of their folders, what a skill found through a
    /// link really is, and every file beside a SKILL.md are pinned; a folder with no skill
    /// folder keeps the digest it had.
    #[test]
    fn skills_in_each_of_their_folders_are_pinned() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("p");
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join(".ikigai/tools")).unwrap();
        let before = fingerprint(&d);
        std::fs::create_dir_all(d.join(".claude/agents")).unwrap();
        std::fs::write(d.join(".claude/settings.json"), "{}").unwrap();
        assert_eq!(fingerprint(&d), before, "other .claude files are no skills");
        let mut seen = vec![before];
        let changed = |seen: &mut Vec<String>, what: &str| {
            let now = fingerprint(&d);
            assert!(!seen.contains(&now), "{what} did not change the digest");
            seen.push(now);
        };
        for place in [".ikigai/skills", ".claude/skills", ".agents/skills"] {
            let f = d.join(place).join("fmt");
            std::fs::create_dir_all(&f).unwrap();
            changed(&mut seen, place);
            std::fs::write(f.join("SKILL.md"), "---\nname: fmt\ndescription: d\n---\nA").unwrap();
            changed(&mut seen, &format!("{place}: a skill"));
            std::fs::write(f.join("SKILL.md"), "---\nname: fmt\ndescription: d\n---\nB").unwrap();
            changed(&mut seen, &format!("{place}: a skill's text"));
            std::fs::write(f.join("helper.sh"), "rm -rf ~").unwrap();
            changed(&mut seen, &format!("{place}: a file beside it"));
        }
        // A skill that is a link to a folder of the project: that folder is pinned.
        std::fs::create_dir_all(d.join("shared/review")).unwrap();
        std::fs::write(
            d.join("shared/review/SKILL.md"),
            "---\nname: r\ndescription: d\n---\nA",
        )
        .unwrap();
        assert_eq!(fingerprint(&d), *seen.last().unwrap(), "no skill links to it yet");
        std::os::unix::fs::symlink("../../shared/review", d.join(".claude/skills/review")).unwrap();
        changed(&mut seen, "a linked skill");
        std::fs::write(
            d.join("shared/review/SKILL.md"),
            "---\nname: r\ndescription: d\n---\nB",
        )
        .unwrap();
        changed(&mut seen, "a linked skill's text");
        std::fs::write(d.join("src/lib.rs"), "x").unwrap();
        assert_eq!(fingerprint(&d), *seen.last().unwrap(), "other project files");
        // Sub-agent types speak for the user too.
        std::fs::create_dir_all(d.join(".ikigai/agents")).unwrap();
        changed(&mut seen, "an agents folder");
        std::fs::write(
            d.join(".ikigai/agents/r.md"),
            "---\nname: r\ndescription: d\n---\nA",
        )
        .unwrap();
        changed(&mut seen, "an agent type");
        std::fs::write(
            d.join(".ikigai/agents/r.md"),
            "---\nname: r\ndescription: d\ntools: Bash\n---\nA",
        )
        .unwrap();
        changed(&mut seen, "an agent type's tools");
        let covered = covered(&d, &reach::reached(&d));
        assert_eq!(
            covered,
            [
                ".ikigai/tools",
                ".ikigai/skills",
                ".claude/skills",
                ".agents/skills",
                ".ikigai/agents"
            ]
        );
    }

    /// The files the settings run, in every form `reach` finds, are pinned by content;
    /// a link in a reached folder pins the project file it leads to; a file no setting
    /// names is not pinned.
    #[test]
    fn what_the_settings_run_is_pinned_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("p");
        let ik = d.join(".ikigai");
        std::fs::create_dir_all(ik.join("tools")).unwrap();
        for f in [
            "scripts/mcp.sh",
            "scripts/tool.sh",
            "srv/index.js",
            "lib/real.js",
            "free.sh",
        ] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), "v1").unwrap();
        }
        std::os::unix::fs::symlink("../lib/real.js", d.join("srv/linked.js")).unwrap();
        std::os::unix::fs::symlink("../../scripts/tool.sh", ik.join("tools/mytool")).unwrap();
        std::fs::write(
            ik.join("config.toml"),
            "[mcp_servers.a]\ncommand = \"sh\"\nargs = [\"scripts/mcp.sh\", \"srv/\"]\n",
        )
        .unwrap();
        let base = fingerprint(&d);
        assert_eq!(fingerprint(&d), base, "stable");
        std::fs::write(d.join("free.sh"), "v2").unwrap();
        assert_eq!(fingerprint(&d), base, "a file no setting names");
        for f in ["scripts/mcp.sh", "scripts/tool.sh", "srv/index.js", "lib/real.js"] {
            std::fs::write(d.join(f), "v2").unwrap();
            assert_ne!(fingerprint(&d), base, "{f} changed, the digest did not");
            std::fs::write(d.join(f), "v1").unwrap();
            assert_eq!(fingerprint(&d), base, "{f} back as it was");
        }
        std::fs::create_dir_all(d.join("srv/__pycache__")).unwrap();
        std::fs::write(d.join("srv/__pycache__/m.pyc"), "bytecode").unwrap();
        assert_eq!(fingerprint(&d), base, "bytecode Python wrote");
        std::fs::write(d.join("srv/new.js"), "v1").unwrap();
        assert_ne!(fingerprint(&d), base, "a file added to a reached folder");
        let covered = covered(&d, &reach::reached(&d));
        assert_eq!(
            covered,
            [
                ".ikigai/config.toml",
                ".ikigai/tools",
                "scripts/mcp.sh (MCP server a)",
                "scripts/tool.sh (project tool mytool)",
                "srv (MCP server a)"
            ]
        );
    }
}
