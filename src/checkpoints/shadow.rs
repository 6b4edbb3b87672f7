//! The shadow git repository: snapshots of a project's working tree (what `.gitignore`
//! does not ignore) kept in a git folder under the user's data, with the `git` command
//! pointed at it by `GIT_DIR` and `GIT_WORK_TREE`. It never reads or writes the project's
//! own `.git`, reads no user or system git configuration (so no filter, hook or
//! fsmonitor a project or a user set up runs), and never changes a project file.
//! Blocking: callers run it off the async runtime.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

pub use super::error::ShadowError;

/// One path a diff between two snapshots names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Changed {
    /// Relative to the working tree.
    pub(crate) path: PathBuf,
    /// Git mode and blob id before (`None`: the path did not exist).
    pub(crate) before: Option<(u32, String)>,
}

/// A shadow repository for one working tree.
#[derive(Clone, Debug)]
pub struct Shadow {
    git_dir: PathBuf,
    work_tree: PathBuf,
    /// A folder inside the tree that is never part of a snapshot (ikigai's own data,
    /// when the project is the home folder).
    exclude: Option<PathBuf>,
    /// While a snapshot holds the project's lock: the lock file, handed to every git it
    /// runs as its standard input, so that a git outliving ikigai (which ended meanwhile)
    /// holds the lock until it is done and no other snapshot meddles with its index.
    held: Arc<Mutex<Option<std::fs::File>>>,
}

impl Shadow {
    pub fn new(git_dir: PathBuf, work_tree: PathBuf) -> Self {
        Shadow {
            git_dir,
            work_tree,
            exclude: None,
            held: Arc::default(),
        }
    }

    /// The same, never snapshotting `folder` (when it is inside the tree).
    pub fn excluding(mut self, folder: PathBuf) -> Self {
        self.exclude = Some(folder);
        self
    }

    /// `exclude` as a pattern of the tree's root, when it is inside the tree.
    fn exclude_pattern(&self) -> Option<String> {
        let rel = self.exclude.as_ref()?.strip_prefix(&self.work_tree).ok()?;
        let rel = rel.to_str()?;
        let escaped: String = rel
            .chars()
            .flat_map(|c| {
                let special = matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '#' | ' ');
                special.then_some('\\').into_iter().chain(std::iter::once(c))
            })
            .collect();
        (!escaped.is_empty()).then(|| format!("/{escaped}/\n"))
    }

    /// The folder inside the tree that is never part of a snapshot, if any.
    pub(crate) fn excluded(&self) -> Option<&Path> {
        self.exclude.as_deref()
    }

    /// The shadow repository's folder.
    pub(crate) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The working tree it snapshots.
    pub(crate) fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// `git` by absolute path, found once in `PATH`'s trusted folders
    /// (`trusted_path`): never the project's own (`PATH=node_modules/.bin:…`). Run through
    /// the launcher (when installed), like every process ikigai starts: in a session of
    /// its own (no terminal) and dying with ikigai.
    pub(super) fn git(&self) -> Result<Command, ShadowError> {
        let program =
            crate::trusted_path::find("git", &self.work_tree).map_err(|e| ShadowError::Git(e.to_string()))?;
        let path = std::env::var_os("PATH");
        let mut c = crate::tools::launcher::std_command(&program, &[], &self.work_tree, path.as_deref())
            .unwrap_or_else(|_| Command::new(&program));
        for (k, _) in std::env::vars_os() {
            if k.as_bytes().starts_with(b"GIT_") {
                c.env_remove(k);
            }
        }
        c.env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            // glibc gives memory back after nearly every file git reads; a 64 MiB pad
            // stops that churn (a 10,000-file first snapshot: 0.65 s → 0.26 s of `add`).
            .env("MALLOC_TOP_PAD_", "67108864")
            .env("MALLOC_TRIM_THRESHOLD_", "134217728")
            .current_dir(&self.work_tree)
            .args(["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]);
        let held = self
            .held
            .lock()
            .ok()
            .and_then(|h| h.as_ref().and_then(|f| f.try_clone().ok()));
        c.stdin(held.map_or_else(Stdio::null, Stdio::from));
        Ok(c)
    }

    pub(super) fn run(&self, args: &[&str]) -> Result<Vec<u8>, ShadowError> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        self.run_os(&args)
    }

    pub(super) fn run_os(&self, args: &[&OsStr]) -> Result<Vec<u8>, ShadowError> {
        let out = self
            .git()?
            .args(args)
            .output()
            .map_err(|e| ShadowError::Git(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let command = args
                .iter()
                .filter_map(|a| a.to_str())
                .find(|a| !a.starts_with('-') && !a.contains('='))
                .unwrap_or("");
            return Err(ShadowError::Git(format!(
                "`git {command}` failed: {}",
                err.trim()
            )));
        }
        Ok(out.stdout)
    }

    /// The project's snapshot lock, held until dropped (waits for another process's).
    fn lock(&self) -> Result<nix::fcntl::Flock<std::fs::File>, ShadowError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.git_dir)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.git_dir.join("ikigai.lock"))?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| ShadowError::Io(io::Error::from(e)))
    }

    /// Creates the repository the first time (0700; never collected, so old trees stay).
    fn ensure(&self) -> Result<(), ShadowError> {
        if self.git_dir.join("HEAD").exists() {
            return Ok(());
        }
        // The folder exists (0700): `lock` made it.
        self.run(&["init", "--quiet"])?;
        let mut config = std::fs::OpenOptions::new()
            .append(true)
            .open(self.git_dir.join("config"))?;
        config.write_all(
            b"[gc]\n\tauto = 0\n[core]\n\tautocrlf = false\n\tsafecrlf = false\n\
              \tsymlinks = true\n\tfilemode = true\n\tbare = false\n",
        )?;
        if let Some(pattern) = self.exclude_pattern() {
            std::fs::create_dir_all(self.git_dir.join("info"))?;
            std::fs::write(self.git_dir.join("info/exclude"), pattern)?;
        }
        Ok(())
    }

    /// Snapshots the working tree; returns its tree id. Refused (before anything is
    /// stored) when the files that are not ignored weigh more than `limit` bytes.
    pub fn snapshot(&self, limit: u64) -> Result<String, ShadowError> {
        self.within(limit)?;
        self.take(None)
    }

    /// Refused when the files that are not ignored weigh more than `limit` bytes.
    fn within(&self, limit: u64) -> Result<(), ShadowError> {
        if tree_size(&self.work_tree, self.exclude.as_deref(), limit) > limit {
            return Err(ShadowError::TooLarge {
                limit_mb: limit / 1_000_000,
            });
        }
        Ok(())
    }

    /// Snapshots the working tree (its size checked already); returns its tree id. With
    /// `keep`, the tree is also kept under that ref, in the same locked step (see
    /// `growth::prune`).
    pub(crate) fn take(&self, keep: Option<&str>) -> Result<String, ShadowError> {
        // One snapshot at a time per project, across ikigai processes: a git index taken
        // by another would leave this snapshot stale, and an undo would then put back
        // what nobody changed.
        let lock = self.lock()?;
        let _handed = Handed::new(&self.held, &lock);
        let tree = self.take_locked()?;
        if let Some(name) = keep {
            self.run(&["update-ref", name, &tree])?;
        }
        Ok(tree)
    }

    fn take_locked(&self) -> Result<String, ShadowError> {
        self.ensure()?;
        // Held by no ikigai now (we hold the lock): left by a git that was killed.
        let _ = std::fs::remove_file(self.git_dir.join("index.lock"));
        // The first snapshot of a project stores every file: streamed into one pack
        // (a file each would be ~5x slower); later ones store only what changed.
        let first = !self.git_dir.join("index").exists();
        if first && let Some(tree) = super::first::snapshot(self)? {
            return Ok(tree);
        }
        // Uncompressed: zlib is most of the rest of that first write (local data only).
        let (threshold, compression) = if first {
            ("core.bigFileThreshold=1", "core.compression=0")
        } else {
            ("core.bigFileThreshold=512m", "core.compression=1")
        };
        // Unreadable files are left out (git says so and fails, but indexes the rest);
        // any other failure leaves no snapshot.
        let add = [
            "-c",
            threshold,
            "-c",
            compression,
            "add",
            "--all",
            "--ignore-errors",
            "--",
            ".",
        ];
        match self.run(&add) {
            Err(ShadowError::Git(e)) if e.contains("fatal:") || e.contains("index.lock") => {
                return Err(ShadowError::Git(e));
            }
            Err(ShadowError::Git(_)) | Ok(_) => {}
            Err(e) => return Err(e),
        }
        let tree = self.run(&["write-tree"])?;
        Ok(String::from_utf8_lossy(&tree).trim().to_string())
    }

    /// What snapshot `tree` holds at `paths` (relative; a folder stands for everything below
    /// it): each file's path, git mode and blob id. Paths it does not hold are left out.
    pub(crate) fn entries(
        &self,
        tree: &str,
        paths: &[PathBuf],
    ) -> Result<Vec<(PathBuf, u32, String)>, ShadowError> {
        let mut out = Vec::new();
        // A few thousand paths per command line.
        for chunk in paths.chunks(2048) {
            let head = [
                "--literal-pathspecs",
                "ls-tree",
                "-r",
                "-z",
                "--full-tree",
                tree,
                "--",
            ];
            let mut args: Vec<&OsStr> = head.into_iter().map(OsStr::new).collect();
            args.extend(chunk.iter().map(|p| p.as_os_str()));
            let listed = self.run_os(&args)?;
            for entry in listed.split(|b| *b == 0).filter(|e| !e.is_empty()) {
                // `MODE TYPE ID\tPATH`
                let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
                    continue;
                };
                let meta = String::from_utf8_lossy(&entry[..tab]);
                let mut fields = meta.split(' ');
                let (Some(mode), Some("blob"), Some(id)) = (fields.next(), fields.next(), fields.next())
                else {
                    continue;
                };
                let Ok(mode) = u32::from_str_radix(mode, 8) else {
                    continue;
                };
                out.push((
                    PathBuf::from(OsStr::from_bytes(&entry[tab + 1..])),
                    mode,
                    id.to_string(),
                ));
            }
        }
        Ok(out)
    }

    /// Which of `paths` (relative) the tree's `.gitignore` files (and the repository's
    /// own excludes) ignore, as a snapshot would.
    pub(crate) fn ignored(
        &self,
        paths: &[PathBuf],
    ) -> Result<std::collections::HashSet<PathBuf>, ShadowError> {
        if paths.is_empty() {
            return Ok(Default::default());
        }
        let mut child = self
            .git()?
            .args(["check-ignore", "--no-index", "-z", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| ShadowError::Git(format!("cannot run git: {e}")))?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| ShadowError::Git("no stdin".into()))?;
        let mut input = Vec::new();
        for p in paths {
            input.extend_from_slice(p.as_os_str().as_bytes());
            input.push(0);
        }
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let mut out = Vec::new();
        if let Some(mut stdout) = child.stdout.take() {
            stdout.read_to_end(&mut out)?;
        }
        let _ = writer.join();
        let status = child.wait()?;
        // 1: none of them is ignored.
        if !matches!(status.code(), Some(0 | 1)) {
            return Err(ShadowError::Git("`git check-ignore` failed".into()));
        }
        Ok(out
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(OsStr::from_bytes(p)))
            .collect())
    }

    /// The paths that differ between two snapshots, with what each held before.
    pub(crate) fn diff(&self, before: &str, after: &str) -> Result<Vec<Changed>, ShadowError> {
        let out = self.run(&["diff-tree", "-r", "-z", "--no-renames", "--raw", before, after])?;
        let mut parts = out.split(|b| *b == 0).filter(|p| !p.is_empty());
        let mut changed = Vec::new();
        while let (Some(meta), Some(path)) = (parts.next(), parts.next()) {
            // `:OLDMODE NEWMODE OLDSHA NEWSHA STATUS`
            let meta = String::from_utf8_lossy(meta);
            let fields: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let [old_mode, _, old_sha, ..] = fields.as_slice() else {
                continue;
            };
            let Ok(old_mode) = u32::from_str_radix(old_mode, 8) else {
                continue;
            };
            // Submodules (gitlinks) are other repositories: not ours to restore.
            if old_mode == 0o160000 || fields.get(1) == Some(&"160000") {
                continue;
            }
            let before = (old_mode != 0).then(|| (old_mode, old_sha.to_string()));
            changed.push(Changed {
                path: PathBuf::from(OsStr::from_bytes(path)),
                before,
            });
        }
        Ok(changed)
    }

    /// The contents of these blobs, in order (`git cat-file --batch`).
    pub(crate) fn blobs(&self, ids: &[String]) -> Result<Vec<Vec<u8>>, ShadowError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut child = self
            .git()?
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| ShadowError::Git(format!("cannot run git: {e}")))?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| ShadowError::Git("no stdin".into()))?;
        let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
        // Written from another thread: git answers while it reads.
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let mut out = Vec::new();
        if let Some(mut stdout) = child.stdout.take() {
            stdout.read_to_end(&mut out)?;
        }
        let _ = writer.join();
        let _ = child.wait();
        let mut blobs = Vec::with_capacity(ids.len());
        let mut rest = out.as_slice();
        for id in ids {
            let Some(nl) = rest.iter().position(|b| *b == b'\n') else {
                return Err(ShadowError::Git(format!("no content for {id}")));
            };
            let header = String::from_utf8_lossy(&rest[..nl]).to_string();
            let size = match header.split(' ').collect::<Vec<_>>().as_slice() {
                [_, "blob", size] => size.parse::<usize>().ok(),
                _ => None,
            };
            let Some(size) = size.filter(|s| nl + 1 + s <= rest.len()) else {
                return Err(ShadowError::Git(format!("no content for {id}: {header}")));
            };
            blobs.push(rest[nl + 1..nl + 1 + size].to_vec());
            rest = rest.get(nl + 2 + size..).unwrap_or(&[]);
        }
        Ok(blobs)
    }
}

/// The lock file handed to the gits of one snapshot, taken back when it ends.
struct Handed<'a>(&'a Mutex<Option<std::fs::File>>);

impl<'a> Handed<'a> {
    fn new(held: &'a Mutex<Option<std::fs::File>>, lock: &std::fs::File) -> Self {
        if let Ok(mut h) = held.lock() {
            *h = lock.try_clone().ok();
        }
        Handed(held)
    }
}

impl Drop for Handed<'_> {
    fn drop(&mut self) {
        if let Ok(mut h) = self.0.lock() {
            *h = None;
        }
    }
}

/// Bytes of the files under `root` that `.gitignore` does not ignore (`.git` folders
impl super::first::Repo for Shadow {
    fn run(&self, args: &[&str]) -> Result<Vec<u8>, ShadowError> {
        Shadow::run(self, args)
    }

    fn git(&self) -> Result<Command, ShadowError> {
        Shadow::git(self)
    }

    fn work_tree(&self) -> &Path {
        Shadow::work_tree(self)
    }
}

/// skipped, links not followed); stops counting once past `limit`.
pub(crate) fn tree_size(root: &Path, exclude: Option<&Path>, limit: u64) -> u64 {
    let mut total = 0u64;
    let exclude = exclude.map(Path::to_path_buf);
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .ignore(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| e.file_name() != ".git" && Some(e.path()) != exclude.as_deref())
        .build();
    for entry in walk.flatten() {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            total += entry.metadata().map_or(0, |m| m.len());
            if total > limit {
                break;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn snapshots_diff_and_read_back_without_touching_the_project_git() {
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let p = project.path();
        fs::create_dir_all(p.join(".git")).unwrap();
        fs::write(p.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        fs::write(p.join(".gitignore"), "target/\n").unwrap();
        fs::write(p.join("keep.txt"), "keep\n").unwrap();
        fs::write(p.join("gone.txt"), "gone\n").unwrap();
        fs::create_dir_all(p.join("target")).unwrap();
        fs::write(p.join("target/big.bin"), "ignored").unwrap();
        fs::create_dir_all(p.join("data/ikigai")).unwrap();
        fs::write(p.join("data/ikigai/db"), "ikigai's own").unwrap();
        // A nested repository with no commit yet: git complains, the rest is snapshotted.
        fs::create_dir_all(p.join("vendor")).unwrap();
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(p.join("vendor"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(init.success());
        let shadow = Shadow::new(data.path().join("git"), p.to_path_buf()).excluding(p.join("data/ikigai"));
        let t0 = shadow.snapshot(1_000_000).unwrap();
        fs::remove_file(p.join("gone.txt")).unwrap();
        fs::write(p.join("new.txt"), "new\n").unwrap();
        fs::write(p.join("keep.txt"), "changed\n").unwrap();
        fs::write(p.join("target/other.bin"), "ignored too").unwrap();
        fs::write(p.join("data/ikigai/db"), "ikigai's own, changed").unwrap();
        let t1 = shadow.snapshot(1_000_000).unwrap();
        let mut changed = shadow.diff(&t0, &t1).unwrap();
        changed.sort_by(|a, b| a.path.cmp(&b.path));
        let paths: Vec<_> = changed.iter().map(|c| c.path.to_str().unwrap()).collect();
        assert_eq!(paths, ["gone.txt", "keep.txt", "new.txt"]);
        assert!(changed[2].before.is_none());
        let ids: Vec<String> = changed[..2].iter().map(|c| c.before.clone().unwrap().1).collect();
        let blobs = shadow.blobs(&ids).unwrap();
        assert_eq!(blobs, [b"gone\n".to_vec(), b"keep\n".to_vec()]);
        // A lock a killed git left does not stop the next snapshot.
        fs::write(data.path().join("git/index.lock"), "").unwrap();
        fs::write(p.join("keep.txt"), "again\n").unwrap();
        let t2 = shadow.snapshot(1_000_000).unwrap();
        assert_eq!(shadow.diff(&t1, &t2).unwrap().len(), 1);
        // Snapshots from several threads (as from several processes) wait for each other.
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let s = shadow.clone();
                std::thread::spawn(move || s.snapshot(1_000_000).unwrap())
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), t2);
        }
        // The project's own .git is as it was.
        let entries: Vec<_> = fs::read_dir(p.join(".git")).unwrap().flatten().collect();
        assert_eq!(entries.len(), 1);
        assert!(matches!(shadow.snapshot(5), Err(ShadowError::TooLarge { .. })));
    }

    /// The tree `git add --all` makes of `p` in a fresh repository of its own.
    fn added_tree(p: &Path, git_dir: &Path) -> String {
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .env("GIT_DIR", git_dir)
                .env("GIT_WORK_TREE", p)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .current_dir(p)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        git(&["init", "-q"]);
        git(&["add", "--all", "--", "."]);
        git(&["write-tree"])
    }

    #[test]
    fn the_first_snapshot_is_the_tree_git_add_makes_and_later_ones_see_each_change() {
        use std::os::unix::fs::PermissionsExt;
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let p = project.path();
        fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::create_dir_all(p.join("src/deep/er")).unwrap();
        fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(p.join("src/deep/er/a file with spaces.txt"), "spaced\n").unwrap();
        fs::write(p.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
        fs::set_permissions(p.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("src/main.rs", p.join("link")).unwrap();
        fs::write(p.join("empty"), "").unwrap();
        fs::write(p.join("debug.log"), "ignored").unwrap();
        fs::create_dir_all(p.join("target")).unwrap();
        fs::write(p.join("target/x"), "ignored").unwrap();
        let expected = added_tree(p, &data.path().join("reference"));
        let shadow = Shadow::new(data.path().join("git"), p.to_path_buf());
        let t0 = shadow.snapshot(1_000_000).unwrap();
        assert_eq!(t0, expected, "the same tree as git add");
        assert!(
            data.path().join("git/refs/ikigai/first").exists(),
            "taken by fast-import, not git add"
        );
        fs::write(p.join("src/main.rs"), "fn main() { changed() }\n").unwrap();
        let t1 = shadow.snapshot(1_000_000).unwrap();
        let changed = shadow.diff(&t0, &t1).unwrap();
        let paths: Vec<_> = changed.iter().map(|c| c.path.to_str().unwrap()).collect();
        assert_eq!(paths, ["src/main.rs"], "only the change, after a refreshed index");
        assert_eq!(
            shadow.snapshot(1_000_000).unwrap(),
            t1,
            "nothing changed: same tree"
        );
    }
}
