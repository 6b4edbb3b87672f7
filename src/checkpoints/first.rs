//! The first snapshot of a project, fast: `git add` of a tree into an empty repository
//! rescans the object store for every file it writes (10,000 files: ~0.25 s of system
//! calls alone), so the first snapshot streams the files git would add (`ls-files
//! --others --exclude-standard`) into one `git fast-import` pack instead, then makes that
//! tree the index (`read-tree`, `update-index --refresh` for the stat data later
//! snapshots compare against). Anything unusual (a nested repository, a path fast-import
//! cannot take unquoted) returns `None`, and the caller uses `git add`. Reads project
//! files; writes only into the shadow repository.

use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::error::ShadowError;

/// What the first snapshot needs of the shadow repository (`shadow::Shadow`).
pub(super) trait Repo {
    /// Runs `git ARGS` on the shadow repository; its output.
    fn run(&self, args: &[&str]) -> Result<Vec<u8>, ShadowError>;
    /// A `git` command pointed at the shadow repository.
    fn git(&self) -> Result<Command, ShadowError>;
    /// The project's working tree.
    fn work_tree(&self) -> &Path;
}

/// The ref the first snapshot is imported to.
const FIRST: &str = "refs/ikigai/first";

/// Takes the first snapshot into an empty shadow repository; its tree id, or `None` when
/// the tree needs `git add`.
pub(super) fn snapshot(shadow: &impl Repo) -> Result<Option<String>, ShadowError> {
    let listed = shadow.run(&["ls-files", "-z", "--others", "--exclude-standard"])?;
    let paths: Vec<&[u8]> = listed.split(|b| *b == 0).filter(|p| !p.is_empty()).collect();
    // A nested repository is a gitlink to `git add`; a path with a line feed or a leading
    // quote would need quoting here.
    if paths
        .iter()
        .any(|p| p.ends_with(b"/") || p.contains(&b'\n') || p.first() == Some(&b'"'))
    {
        return Ok(None);
    }
    let mut child = shadow
        .git()?
        .args(["-c", "pack.compression=0", "-c", "core.compression=0"])
        .args(["fast-import", "--quiet", "--done", "--force"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ShadowError::Git(format!("cannot run git: {e}")))?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| ShadowError::Git("git fast-import has no input".into()))?;
    let written = stream(shadow.work_tree(), &paths, stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| ShadowError::Git(format!("git fast-import: {e}")))?;
    if !out.status.success() {
        return Err(ShadowError::Git(format!(
            "`git fast-import` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    written?;
    shadow.run(&["read-tree", FIRST])?;
    // Exit 1 when a file changed since it was read: that entry is compared again next time.
    let _ = shadow.run(&["update-index", "-q", "--refresh"]);
    let tree = shadow.run(&["rev-parse", &format!("{FIRST}^{{tree}}")])?;
    Ok(Some(String::from_utf8_lossy(&tree).trim().to_string()))
}

/// Writes one blob per readable file or link of `paths`, then a commit of them all.
/// Files that cannot be read are left out, as `git add --ignore-errors` leaves them.
fn stream(root: &Path, paths: &[&[u8]], stdin: impl Write) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 16, stdin);
    let mut entries: Vec<(u32, usize, &[u8])> = Vec::with_capacity(paths.len());
    for path in paths {
        let full = root.join(std::ffi::OsStr::from_bytes(path));
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        let (mode, data) = if meta.file_type().is_symlink() {
            match std::fs::read_link(&full) {
                Ok(target) => (0o120000, target.as_os_str().as_bytes().to_vec()),
                Err(_) => continue,
            }
        } else if meta.is_file() {
            let exec = meta.permissions().mode() & 0o100 != 0;
            match std::fs::read(&full) {
                Ok(bytes) => (if exec { 0o100755 } else { 0o100644 }, bytes),
                Err(_) => continue,
            }
        } else {
            continue;
        };
        let mark = entries.len() + 1;
        write!(w, "blob\nmark :{mark}\ndata {}\n", data.len())?;
        w.write_all(&data)?;
        w.write_all(b"\n")?;
        entries.push((mode, mark, path));
    }
    write!(w, "commit {FIRST}\ncommitter ikigai <ikigai> 0 +0000\ndata 0\n")?;
    for (mode, mark, path) in entries {
        write!(w, "M {mode:o} :{mark} ")?;
        w.write_all(path)?;
        w.write_all(b"\n")?;
    }
    w.write_all(b"\ndone\n")?;
    w.flush()
}
