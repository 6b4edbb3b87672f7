//! The tree a session's snapshots start from, kept current at the cost of what changed:
//! one full snapshot in the shadow repository when the session starts (in the background,
//! so the first turn does not wait for it unless it runs a command at once), then only the
//! paths the watch names, each changed file's content put in the content store. A turn's
//! first `bash` (external, MCP) call marks the tree: what every path holds then is known;
//! at the turn's end the paths changed since the mark come back with what each held at
//! the mark. When the watch lost track, the next mark takes a full snapshot again; without
//! a watch at all (inotify refused, too many folders) every mark and end is a full
//! snapshot, as before. Blocking: callers run it off the async runtime. Never writes in
//! the project; never runs git on the project's own `.git`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::Before;
use super::blobs::{self, Blobs};
use super::shadow::{Shadow, ShadowError};
use super::watch::{Seen, Watch, WatchError};

/// What a turn's mark took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// A full snapshot (no watch): the end compares another one with it.
    Tree(String),
    /// The tracker's state at the mark: the end asks it what changed since.
    Live,
}

/// The session's tracker of one project tree (cheap to clone: one shared state).
#[derive(Clone, Debug)]
pub(crate) struct Tracker {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    ready: Condvar,
    shadow: Shadow,
    blobs: Blobs,
    limit: u64,
    /// The ref that keeps this session's full snapshot from being pruned.
    keep: String,
}

#[derive(Debug)]
enum State {
    Starting,
    Live(Box<Live>),
    /// No watch: each mark and end is a full snapshot.
    Scanning,
    /// The tree is over the limit (`Some(limit_mb)`), or git failed at the start.
    Failed(Option<u64>, String),
}

#[derive(Debug)]
struct Live {
    watch: Watch,
    /// The last full snapshot.
    tree: String,
    /// What the paths that changed since `tree` hold now (content in the store).
    overlay: BTreeMap<PathBuf, Before>,
    /// The watch lost track, or a `.gitignore` changed (the watched folders may no longer
    /// be the covered ones): the next mark starts over with a full snapshot.
    stale: bool,
}

impl Tracker {
    /// Starts tracking the tree of `shadow` in the background: its size checked against
    /// `limit`, the watch set up, then one full snapshot.
    pub(crate) fn start(shadow: Shadow, blobs: Blobs, limit: u64) -> Tracker {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::Starting),
            ready: Condvar::new(),
            keep: super::growth::live_ref(),
            shadow,
            blobs,
            limit,
        });
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("ikigai-checkpoints".into())
            .spawn(move || {
                let state = s.begin();
                let live = matches!(state, State::Live(_));
                *s.lock() = state;
                s.ready.notify_all();
                if live {
                    super::growth::prune(&s.shadow);
                }
            });
        if spawned.is_err() {
            *shared.lock() = State::Scanning;
        }
        Tracker { shared }
    }

    /// Marks the tree before a turn's first command: what every path holds now.
    pub(crate) fn mark(&self) -> Result<Mark, ShadowError> {
        let s = &self.shared;
        let mut state = s.wait();
        match &mut *state {
            State::Live(live) => match s.catch_up(live) {
                Ok(()) => Ok(Mark::Live),
                Err(Rebuild::Unwatched) => {
                    *state = State::Scanning;
                    s.shadow.snapshot(s.limit).map(Mark::Tree)
                }
                Err(Rebuild::Failed(e)) => {
                    live.stale = true;
                    Err(e)
                }
            },
            State::Scanning => s.shadow.snapshot(s.limit).map(Mark::Tree),
            State::Failed(limit, why) => Err(failure(*limit, why)),
            State::Starting => Err(ShadowError::Git("not started".into())),
        }
    }

    /// What changed since `mark`, each path (relative) with what it held then.
    pub(crate) fn since(&self, mark: &Mark) -> Result<Vec<(PathBuf, Before)>, ShadowError> {
        let s = &self.shared;
        if let Mark::Tree(t0) = mark {
            return super::tree_diff(&s.shadow, &s.blobs, t0, s.limit);
        }
        let mut state = s.wait();
        let State::Live(live) = &mut *state else {
            return Err(ShadowError::Git("the tree is no longer tracked".into()));
        };
        match live.watch.take() {
            Seen::Paths { changed, gone } => {
                let out = s.record(live, changed, gone, true);
                if out.is_err() {
                    live.stale = true;
                }
                out
            }
            Seen::Lost => {
                live.stale = true;
                Err(ShadowError::Git(
                    "lost track of the tree's changes (too many at once)".into(),
                ))
            }
        }
    }
}

/// Why a mark could not catch up with the watch.
enum Rebuild {
    /// The tree can no longer be watched.
    Unwatched,
    Failed(ShadowError),
}

fn failure(limit: Option<u64>, why: &str) -> ShadowError {
    match limit {
        Some(limit_mb) => ShadowError::TooLarge { limit_mb },
        None => ShadowError::Git(why.to_string()),
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, once the start is over.
    fn wait(&self) -> MutexGuard<'_, State> {
        let mut state = self.lock();
        while matches!(*state, State::Starting) {
            state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state
    }

    fn begin(&self) -> State {
        // Watched first: a change made while the snapshot reads the tree is seen.
        let watch = match self.watch() {
            Ok(w) => w,
            Err(Rebuild::Failed(e)) => return failed(e),
            Err(Rebuild::Unwatched) => return State::Scanning,
        };
        match self.shadow.take(Some(&self.keep)) {
            Ok(tree) => State::Live(Box::new(Live {
                watch,
                tree,
                overlay: BTreeMap::new(),
                stale: false,
            })),
            Err(e) => failed(e),
        }
    }

    /// Brings `live` up to date with what the watch saw (a full snapshot again when it
    /// lost track).
    fn catch_up(&self, live: &mut Live) -> Result<(), Rebuild> {
        if let Seen::Paths { changed, gone } = live.watch.take()
            && !live.stale
            && self.record(live, changed, gone, false).is_ok()
        {
            return Ok(());
        }
        live.watch = self.watch()?;
        live.tree = self.shadow.take(Some(&self.keep)).map_err(Rebuild::Failed)?;
        live.overlay.clear();
        live.stale = false;
        Ok(())
    }

    /// A new watch on the tree, which is weighed on the way.
    fn watch(&self) -> Result<Watch, Rebuild> {
        match Watch::start(self.shadow.work_tree(), self.shadow.excluded(), self.limit) {
            Ok(w) => Ok(w),
            Err(WatchError::TooLarge) => Err(Rebuild::Failed(ShadowError::TooLarge {
                limit_mb: self.limit / 1_000_000,
            })),
            Err(_) => Err(Rebuild::Unwatched),
        }
    }

    /// Takes in what these paths hold now (`changed`: files or links, or what they
    /// became; `gone`: folders moved away, standing for what was below them). With
    /// `before`, returns each covered path with what it held before (at the last mark).
    fn record(
        &self,
        live: &mut Live,
        changed: BTreeSet<PathBuf>,
        gone: BTreeSet<PathBuf>,
        before: bool,
    ) -> Result<Vec<(PathBuf, Before)>, ShadowError> {
        if changed.is_empty() && gone.is_empty() {
            return Ok(Vec::new());
        }
        let root = self.shadow.work_tree().to_path_buf();
        let mut paths = changed;
        // A moved-away folder: everything that was below it.
        for g in &gone {
            paths.extend(
                live.overlay
                    .range(g.clone()..)
                    .take_while(|(p, _)| p.starts_with(g))
                    .map(|(p, _)| p.clone()),
            );
        }
        // What the last full snapshot held there, for paths the overlay does not know
        // (and for the moved-away folders' contents).
        let unknown: Vec<PathBuf> = paths
            .iter()
            .filter(|p| !live.overlay.contains_key(*p))
            .chain(gone.iter())
            .cloned()
            .collect();
        let base: HashMap<PathBuf, (u32, String)> = if before || !gone.is_empty() {
            self.shadow
                .entries(&live.tree, &unknown)?
                .into_iter()
                .map(|(p, mode, id)| (p, (mode, id)))
                .collect()
        } else {
            HashMap::new()
        };
        paths.extend(base.keys().cloned());
        let paths = self.covered(&root, paths)?;
        if paths
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == ".gitignore"))
        {
            live.stale = true;
        }
        // What each holds now, kept in the store at once (one file in memory at a time).
        let mut now: Vec<Before> = Vec::with_capacity(paths.len());
        let mut bytes = 0u64;
        for p in &paths {
            let state = blobs::state_of(&root.join(p))?;
            now.push(match state {
                Some(s) => {
                    bytes += s.bytes.len() as u64;
                    if bytes > self.limit {
                        return Err(ShadowError::TooLarge {
                            limit_mb: self.limit / 1_000_000,
                        });
                    }
                    self.blobs.put(&s.hash, &s.bytes)?;
                    Some((s.hash, s.mode))
                }
                None => None,
            });
        }
        let mut out = Vec::new();
        if before {
            let from_base: Vec<&PathBuf> = paths
                .iter()
                .filter(|p| !live.overlay.contains_key(*p) && base.contains_key(*p))
                .collect();
            let ids: Vec<String> = from_base.iter().map(|p| base[*p].1.clone()).collect();
            let mut contents = self.shadow.blobs(&ids)?.into_iter();
            let mut held: HashMap<&PathBuf, Before> = HashMap::new();
            for p in from_base {
                let mode = base[p].0;
                let content = contents
                    .next()
                    .ok_or_else(|| ShadowError::Git("a saved file is missing".into()))?;
                let hash = blobs::hash(&content, mode);
                self.blobs.put(&hash, &content)?;
                held.insert(p, Some((hash, mode)));
            }
            for p in &paths {
                let was = match live.overlay.get(p) {
                    Some(b) => b.clone(),
                    None => held.get(p).cloned().flatten(),
                };
                out.push((p.clone(), was));
            }
        }
        for (p, state) in paths.into_iter().zip(now) {
            live.overlay.insert(p, state);
        }
        Ok(out)
    }

    /// The paths a snapshot covers: not inside a nested repository, not ignored.
    fn covered(&self, root: &Path, paths: BTreeSet<PathBuf>) -> Result<Vec<PathBuf>, ShadowError> {
        let mut nested: HashMap<PathBuf, bool> = HashMap::new();
        let mut is_nested = |dir: &Path| {
            *nested
                .entry(dir.to_path_buf())
                .or_insert_with(|| root.join(dir).join(".git").exists())
        };
        let paths: Vec<PathBuf> = paths
            .into_iter()
            .filter(|p| {
                let mut dir = p.parent();
                while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
                    if is_nested(d) {
                        return false;
                    }
                    dir = d.parent();
                }
                true
            })
            .collect();
        let ignored = self.shadow.ignored(&paths)?;
        Ok(paths.into_iter().filter(|p| !ignored.contains(p)).collect())
    }
}

fn failed(e: ShadowError) -> State {
    match e {
        ShadowError::TooLarge { limit_mb } => State::Failed(Some(limit_mb), String::new()),
        e => State::Failed(None, e.to_string()),
    }
}

#[cfg(test)]
#[path = "tracker_tests.rs"]
mod tests;
