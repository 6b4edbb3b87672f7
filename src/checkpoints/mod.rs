//! Checkpoints: what a turn is about to change, kept so `/undo` can put it back. Before
//! `file_write` and `file_edit` run, the file's content (or its absence) goes to the
//! content store (`blobs.rs`); before the first `bash`, external or MCP tool of a turn,
//! the working tree is marked: a session tracks it from the end of its first turn (`tracker.rs`: one full
//! snapshot in a shadow git repository outside the project, `shadow.rs`, then what an
//! inotify watch names, `watch.rs`), or, without a tracker, takes a full snapshot. When
//! the turn ends, what it changed becomes one `Checkpoint` (stored by the agent as a
//! `checkpoint` marker); `undo.rs` plans and applies an undo. Both stores live under the
//! user's data folder (`$XDG_DATA_HOME/ikigai/checkpoints/KEY`), never in the project, and
//! the project's `.git` is never touched; `growth.rs` keeps the shadow repository to what
//! running sessions need. Sends no event and records nothing itself: the agent does.

pub(crate) mod blobs;
mod error;
mod first;
mod growth;
pub mod shadow;
mod tracker;
pub mod undo;
mod watch;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::beneath;
use blobs::Blobs;
use shadow::{Shadow, ShadowError};
use tracker::{Mark, Tracker};

/// Above this many bytes of files that are not ignored, `bash` changes are not covered.
pub const DEFAULT_LIMIT: u64 = 200_000_000;

/// One file a turn changed: what it held before (its content hash, `None` when it did
/// not exist) and after (the hash the turn left, `None` when it removed it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Absolute.
    pub path: String,
    pub before: Option<String>,
    /// The git-style mode of `before` (`0o100644`, `0o100755`, `0o120000` for a link).
    #[serde(default)]
    pub mode: u32,
    pub after: Option<String>,
}

/// What one turn changed, stored as a `checkpoint` marker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub id: String,
    /// The turn's number in the session (its user message's).
    pub turn: usize,
    /// When the turn started changing files (RFC 3339).
    pub at: String,
    /// The start of the user's message.
    pub prompt: String,
    pub files: Vec<FileChange>,
    /// A tool that may change files ran without a snapshot (the tree was too large or git
    /// failed): its changes are not in `files`.
    #[serde(default)]
    pub uncovered: bool,
}

/// What a path held before a turn: its content hash and git-style mode (`None`: absent).
type Before = Option<(String, u32)>;

/// The tree snapshot of the turn in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tree {
    NotTaken,
    Taken(Mark),
    Failed,
}

/// What the turn in progress is about to change.
#[derive(Debug)]
struct Pending {
    turn: usize,
    prompt: String,
    at: String,
    /// Files saved before a file tool changed them: (path, before, saved before the snapshot).
    files: Vec<(PathBuf, Before, bool)>,
    tree: Tree,
}

/// The checkpoints of one session and the recorder of the turn in progress.
#[derive(Debug)]
pub struct Checkpoints {
    cwd: PathBuf,
    /// `None`: no data folder; nothing is recorded.
    root: Option<PathBuf>,
    limit: u64,
    /// Whether the user was told that `bash` changes are not covered.
    told: bool,
    /// The tree was over the limit: no more snapshots in this session (each would walk
    /// the tree up to the limit again, only to be refused).
    too_large: bool,
    pending: Option<Pending>,
    list: Vec<Checkpoint>,
    /// The tree tracked since the first turn ended (`track`); `None`: full snapshots.
    tracker: Option<Tracker>,
}

/// Whether tool `name` changes no file, as it declares (`ToolMeta::changes_files`: no
/// write, no command; `web_fetch` reaches the network but changes no file). A tool that
/// declares nothing (external, MCP) may change any. Of those that change files, the file
/// tools are saved file by file; the rest are snapshots.
fn changes_no_file(name: &str) -> bool {
    crate::tool_vocab::meta::of(name).is_some_and(|m| !m.changes_files())
}

/// The folder of project `cwd` under `data_home` (by a hash of its canonical path).
pub fn project_dir(data_home: &Path, cwd: &Path) -> PathBuf {
    let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let key = blobs::hash(canonical.as_os_str().as_encoded_bytes(), 0);
    data_home.join("ikigai").join("checkpoints").join(&key[..16])
}

impl Checkpoints {
    /// Checkpoints for project `cwd`, kept under `data_home` (`None`: not kept), covering
    /// `bash` up to `limit` bytes of tree.
    pub fn new(cwd: PathBuf, data_home: Option<&Path>, limit: u64) -> Self {
        let root = data_home.map(|d| project_dir(d, &cwd));
        Checkpoints {
            cwd,
            root,
            limit,
            told: false,
            too_large: false,
            pending: None,
            list: Vec::new(),
            tracker: None,
        }
    }

    /// Starts tracking the tree in the background (when the first turn ends): a turn's first
    /// command then waits only for what changed since, not for a scan of the whole tree.
    pub fn track(&mut self) {
        if self.tracker.is_some() || self.limit == 0 {
            return;
        }
        if let (Some(shadow), Some(blobs)) = (self.shadow(), self.blobs()) {
            self.tracker = Some(Tracker::start(shadow, blobs, self.limit));
        }
    }

    /// Checkpoints kept in the user's data folder (`$XDG_DATA_HOME`, else `~/.local/share`).
    pub fn for_user(cwd: PathBuf, limit: u64) -> Self {
        let data = crate::paths::data_home(&|k| crate::environ::var(k));
        Checkpoints::new(cwd, data.as_deref(), limit)
    }

    pub(crate) fn blobs(&self) -> Option<Blobs> {
        self.root.as_ref().map(|r| Blobs::new(r.join("blobs")))
    }

    /// The shadow repository of the project.
    pub fn shadow(&self) -> Option<Shadow> {
        // ikigai's own data folder (…/ikigai) is never part of a snapshot.
        self.root.as_ref().map(|r| {
            let shadow = Shadow::new(r.join("git"), self.cwd.clone());
            match r.parent().and_then(Path::parent) {
                Some(own) => shadow.excluding(own.to_path_buf()),
                None => shadow,
            }
        })
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The session's checkpoints that were not undone, oldest first.
    pub fn list(&self) -> &[Checkpoint] {
        &self.list
    }

    /// Replaces the list (a resumed or new session).
    pub fn set_list(&mut self, list: Vec<Checkpoint>) {
        self.list = list;
        self.pending = None;
    }

    /// Forgets the newest `n` checkpoints (they were undone).
    pub(crate) fn pop(&mut self, n: usize) {
        let keep = self.list.len().saturating_sub(n);
        self.list.truncate(keep);
    }

    /// Whether tool `name` may change files that checkpoints keep (and checkpoints are kept).
    pub fn watches(&self, name: &str) -> bool {
        self.root.is_some() && !changes_no_file(name)
    }

    /// Whether a turn's changes are being recorded now.
    pub fn in_turn(&self) -> bool {
        self.pending.is_some()
    }

    /// Before tool `name` runs with `arguments` (its path made the place the tool acts on
    /// by `resolve`: the one its permission decision judged): saves the file a file tool will change (once per turn), or says that a
    /// snapshot is due (`Some`: take it off the runtime, then call `snapshot_taken`).
    /// `turn` gives the turn's number and prompt when this is its first change.
    pub fn before_call(
        &mut self,
        name: &str,
        arguments: &str,
        resolve: impl Fn(&str) -> PathBuf,
        turn: impl FnOnce() -> (usize, String),
    ) -> Option<Snapshot> {
        if changes_no_file(name) || self.root.is_none() {
            return None;
        }
        let pending = self.pending.get_or_insert_with(|| {
            let (turn, prompt) = turn();
            Pending {
                turn,
                prompt,
                at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                files: Vec::new(),
                tree: Tree::NotTaken,
            }
        });
        // A tool that writes the file its path argument names is saved file by file.
        if let Some(arg) = crate::tool_vocab::meta::of(name)
            .filter(|m| m.writes)
            .and_then(|m| m.path)
        {
            let given = serde_json::from_str::<serde_json::Value>(arguments)
                .ok()
                .and_then(|v| v.get(arg).and_then(|p| p.as_str()).map(str::to_string));
            let given = given.filter(|g| !g.is_empty())?;
            let path = resolve(&given);
            if pending.files.iter().any(|(p, _, _)| *p == path) {
                return None;
            }
            let before = match blobs::state_of(&path) {
                Ok(Some(s)) => {
                    let blobs = self.root.as_ref().map(|r| Blobs::new(r.join("blobs")));
                    match blobs.map(|b| b.put(&s.hash, &s.bytes)) {
                        Some(Ok(())) => Some((s.hash, s.mode)),
                        // Not saved: the change is not covered.
                        _ => return None,
                    }
                }
                Ok(None) => None,
                Err(_) => return None,
            };
            let early = pending.tree == Tree::NotTaken;
            pending.files.push((path, before, early));
            return None;
        }
        if pending.tree != Tree::NotTaken {
            return None;
        }
        // Marked now: a snapshot that does not come back (a cancelled turn) is not asked again.
        pending.tree = Tree::Failed;
        if self.too_large {
            return None;
        }
        let limit = self.limit;
        let tracker = self.tracker.clone();
        self.shadow().map(|shadow| Snapshot {
            shadow,
            limit,
            tracker,
        })
    }

    /// The snapshot `before_call` asked for was taken (or not). Returns what to tell the
    /// user once per session when `bash` changes are not covered.
    pub fn snapshot_taken(&mut self, taken: Result<Taken, ShadowError>) -> Option<String> {
        let pending = self.pending.as_mut()?;
        match taken {
            Ok(Taken(mark)) => {
                pending.tree = Tree::Taken(mark);
                None
            }
            Err(e) => {
                pending.tree = Tree::Failed;
                self.too_large |= matches!(e, ShadowError::TooLarge { .. });
                if std::mem::replace(&mut self.told, true) {
                    return None;
                }
                Some(format!(
                    "/undo will not cover what bash and other tools change in this session: {e}"
                ))
            }
        }
    }

    /// Ends the turn in progress: what to run (off the runtime) to make its checkpoint,
    /// `None` when it changed nothing.
    pub fn finish(&mut self) -> Option<Finishing> {
        let pending = self.pending.take()?;
        Some(Finishing {
            pending,
            cwd: self.cwd.clone(),
            shadow: self.shadow(),
            blobs: self.blobs(),
            limit: self.limit,
            tracker: self.tracker.clone(),
        })
    }

    /// Adds the checkpoint `Finishing::run` made.
    pub fn push(&mut self, c: Checkpoint) {
        self.list.push(c);
    }
}

/// The end of a turn's checkpoint: a second snapshot when the turn took one, and what
/// differs between the two, saved in the content store.
#[derive(Debug)]
pub struct Finishing {
    pending: Pending,
    cwd: PathBuf,
    shadow: Option<Shadow>,
    blobs: Option<Blobs>,
    limit: u64,
    tracker: Option<Tracker>,
}

impl Finishing {
    /// The turn's checkpoint (its `files` empty when it changed nothing). Blocking.
    pub fn run(self) -> Checkpoint {
        let p = self.pending;
        let mut files: Vec<FileChange> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut uncovered = p.tree == Tree::Failed;
        let mut tree_changes = Vec::new();
        let since = match (&p.tree, &self.tracker, &self.shadow, &self.blobs) {
            (Tree::Taken(mark), Some(tracker), _, _) => Some(tracker.since(mark)),
            (Tree::Taken(Mark::Tree(t0)), None, Some(shadow), Some(blobs)) => {
                Some(tree_diff(shadow, blobs, t0, self.limit))
            }
            _ => None,
        };
        match since {
            Some(Ok(changes)) => tree_changes = changes,
            Some(Err(_)) => uncovered = true,
            None => {}
        }
        // What each file holds now is read from the project opened once, never through a
        // link (`None`: then nothing can be read, and every state reads as absent).
        let anchors = blobs::anchors(Some(&self.cwd)).ok();
        let change = |path: &Path, before: Before| change(anchors.as_ref(), path, before);
        // A file saved before the snapshot holds what the turn started from; the rest, the
        // snapshot does.
        for (path, before, early) in &p.files {
            if *early && seen.insert(path.clone()) {
                files.push(change(path, before.clone()));
            }
        }
        for (rel, before) in tree_changes {
            let path = self.cwd.join(rel);
            if seen.insert(path.clone()) {
                files.push(change(&path, before));
            }
        }
        for (path, before, _) in &p.files {
            if seen.insert(path.clone()) {
                files.push(change(path, before.clone()));
            }
        }
        // Unchanged after all (an edit undone by a later one, a failed write).
        files.retain(|f| f.before != f.after);
        Checkpoint {
            id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
            turn: p.turn,
            at: p.at,
            prompt: p.prompt,
            files,
            uncovered,
        }
    }
}

/// A `FileChange` for `path` as it is now (reached from `anchors`), from `before`.
fn change(anchors: Option<&beneath::Anchors>, path: &Path, before: Before) -> FileChange {
    let after = anchors
        .and_then(|a| blobs::state_in(a, path).ok().flatten())
        .map(|s| s.hash);
    let (before, mode) = match before {
        Some((h, m)) => (Some(h), m),
        None => (None, 0),
    };
    FileChange {
        path: path.to_string_lossy().into_owned(),
        before,
        mode,
        after,
    }
}

/// What changed in the tree since snapshot `t0`, each path with what it held then
/// (saved in the content store).
fn tree_diff(
    shadow: &Shadow,
    blobs: &Blobs,
    t0: &str,
    limit: u64,
) -> Result<Vec<(PathBuf, Before)>, ShadowError> {
    let t1 = shadow.snapshot(limit)?;
    let changed = shadow.diff(t0, &t1)?;
    let ids: Vec<String> = changed
        .iter()
        .filter_map(|c| c.before.as_ref().map(|(_, id)| id.clone()))
        .collect();
    let mut contents = shadow.blobs(&ids)?.into_iter();
    let mut out = Vec::with_capacity(changed.len());
    for c in changed {
        let before = match c.before {
            Some((mode, _)) => {
                let bytes = contents
                    .next()
                    .ok_or_else(|| ShadowError::Git("a saved file is missing".into()))?;
                let hash = blobs::hash(&bytes, mode);
                blobs.put(&hash, &bytes)?;
                Some((hash, mode))
            }
            None => None,
        };
        out.push((c.path, before));
    }
    Ok(out)
}

/// A snapshot to take before a tool runs (off the async runtime: it runs git).
#[derive(Debug)]
pub struct Snapshot {
    shadow: Shadow,
    limit: u64,
    tracker: Option<Tracker>,
}

/// What `Snapshot::take` took, for `Checkpoints::snapshot_taken`.
#[derive(Debug)]
pub struct Taken(Mark);

impl Snapshot {
    /// Takes it (marks the tracked tree, else a full snapshot), or says why not. Blocking.
    pub fn take(self) -> Result<Taken, ShadowError> {
        match self.tracker {
            Some(t) => t.mark(),
            None => self.shadow.snapshot(self.limit).map(Mark::Tree),
        }
        .map(Taken)
    }
}

#[cfg(test)]
mod tests;
