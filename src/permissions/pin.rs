//! What a project's ikigai settings looked like when the user trusted them: one digest
//! of everything in `.ikigai/` that runs something or grants permissions (`config.toml`:
//! rules and MCP servers; the `tools/` folder). Custom commands (`commands/`) are prompts
//! the user sends, not in it. A sandboxed command may write anywhere in the
//! working directory, `.ikigai/` included (Landlock cannot exclude a subfolder), so a
//! trusted folder's settings count only while they are the ones trusted, as direnv does
//! with `.envrc`. Reads files; never follows a symlink; decides nothing.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The parts of `.ikigai/` that run something or grant permissions.
const PARTS: [&str; 2] = ["config.toml", "tools"];
/// Bytes of file content hashed at most; past it, a file counts by its size and mtime.
const CONTENT_CAP: u64 = 16 * 1024 * 1024;
/// Entries walked at most (a folder of more is hashed by its count alone past it).
const ENTRY_CAP: usize = 10_000;

/// The digest of `dir`'s project settings (hex); the same for a folder without any.
pub fn fingerprint(dir: &Path) -> String {
    let root = dir.join(".ikigai");
    let mut h = Sha256::new();
    let mut budget = Budget {
        bytes: CONTENT_CAP,
        entries: ENTRY_CAP,
    };
    for part in PARTS {
        walk(&root, Path::new(part), &mut h, &mut budget);
    }
    hex(&h.finalize())
}

struct Budget {
    bytes: u64,
    entries: usize,
}

/// Hashes `root/rel`: its kind, then a file's mode and content, a link's target, a
/// folder's entries in name order.
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
    } else if ft.is_dir() {
        h.update(b"dir\0");
        let mut names: Vec<_> = std::fs::read_dir(&path)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        names.sort();
        for name in names {
            walk(root, &rel.join(name), h, budget);
        }
    } else if ft.is_file() {
        use std::os::unix::fs::PermissionsExt;
        h.update(format!("file\0{:o}\0{}\0", meta.permissions().mode(), meta.len()).as_bytes());
        match std::fs::read(&path) {
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
    } else {
        h.update(b"other\0");
    }
    h.update(b"\0end\0");
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
        // Custom commands are prompts: not in it.
        std::fs::create_dir_all(ik.join("commands")).unwrap();
        std::fs::write(ik.join("commands/c.md"), "Review $1.").unwrap();
        std::fs::write(ik.join("notes.txt"), "y").unwrap();
        std::fs::write(d.path().join("README.md"), "y").unwrap();
        assert_eq!(fingerprint(d.path()), *seen.last().unwrap());
    }
}
