//! The spool: writes that could not reach the database at exit, kept in private files
//! (folder 0700, files 0600) under `$XDG_STATE_HOME/ikigai/spool/`, one JSON line each
//! after a header naming the database. Reads, claims and removes them for replay.
//! Knows files only; the writer decides when to spool and replays in order.

use std::io::{BufRead, Write as _};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::backend::Write;

/// `$XDG_STATE_HOME/ikigai/spool`, else `$HOME/.local/state/ikigai/spool`.
pub fn default_spool_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    crate::paths::state_home(env).map(|d| d.join("ikigai").join("spool"))
}

#[derive(Serialize, Deserialize)]
struct Header {
    ikigai_spool: u32,
    /// `Location::name()` of the database the writes are for.
    database: String,
}

/// Writes `items` for `database` to a new spool file (complete or not at all); returns
/// its path.
pub(crate) fn write(dir: &Path, database: &str, items: &[Write]) -> std::io::Result<PathBuf> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    // Files sort in the order they were written: the time, then (for two in the same
    // millisecond) this process's own count; the random part only keeps names unique.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!(
        "{:013}-{}-{:010}-{}",
        chrono::Utc::now().timestamp_millis(),
        std::process::id(),
        seq,
        uuid::Uuid::new_v4().simple()
    );
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(format!("{name}.jsonl"));
    let mut text = serde_json::to_string(&Header {
        ikigai_spool: 1,
        database: database.to_string(),
    })
    .map_err(std::io::Error::other)?;
    text.push('\n');
    for item in items {
        text.push_str(&serde_json::to_string(item).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// A spool file this process took for replay, with its writes in order.
pub(crate) struct Taken {
    pub path: PathBuf,
    pub items: Vec<Write>,
}

fn pid_of_claim(name: &str) -> Option<i32> {
    let rest = name.strip_suffix(".claimed")?;
    rest.rsplit('.').next()?.parse().ok()
}

fn claimable(name: &str) -> bool {
    if name.ends_with(".jsonl") {
        return true;
    }
    // Claimed by a process that died before it finished.
    match pid_of_claim(name) {
        Some(pid) if pid > 0 && i64::from(pid) != i64::from(std::process::id()) => matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        ),
        _ => false,
    }
}

fn read(path: &Path, database: &str) -> Option<Vec<Write>> {
    let f = std::fs::File::open(path).ok()?;
    let mut lines = std::io::BufReader::new(f).lines();
    let header: Header = serde_json::from_str(&lines.next()?.ok()?).ok()?;
    if header.database != database {
        return None;
    }
    let mut items = Vec::new();
    for line in lines {
        let line = line.ok()?;
        if line.trim().is_empty() {
            continue;
        }
        // A line that does not parse is damage; keep the file for a person to look at.
        items.push(serde_json::from_str(&line).ok()?);
    }
    Some(items)
}

/// Takes every spool file for `database`, oldest first, by renaming it (so two
/// processes never replay the same file at once). Files for other databases stay.
pub(crate) fn take(dir: &Path, database: &str) -> Vec<Taken> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| claimable(n))
        .collect();
    names.sort();
    let mut taken = Vec::new();
    for name in names {
        let from = dir.join(&name);
        if read(&from, database).is_none() {
            continue;
        }
        let stem = name
            .strip_suffix(".claimed")
            .and_then(|s| s.rsplit_once('.').map(|(a, _)| a))
            .unwrap_or(&name);
        let to = dir.join(format!("{stem}.{}.claimed", std::process::id()));
        if std::fs::rename(&from, &to).is_err() {
            continue; // another process took it first
        }
        if let Some(items) = read(&to, database) {
            taken.push(Taken { path: to, items });
        }
    }
    taken
}

/// A replayed (or re-spooled) file is done with.
pub(crate) fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SessionMeta;

    fn meta(id: &str) -> Write {
        Write::Session {
            meta: SessionMeta {
                id: id.into(),
                cwd: "/w".into(),
                provider: "p".into(),
                model: "m".into(),
                parent: None,
            },
            at: "t".into(),
        }
    }

    #[test]
    fn files_are_private_ordered_and_per_database() {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("state").join("spool");
        let a = write(&spool, "db-a", &[meta("1")]).unwrap();
        let _b = write(&spool, "db-b", &[meta("2")]).unwrap();
        let c = write(&spool, "db-a", &[meta("3"), meta("4")]).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&spool), 0o700);
        assert_eq!(mode(&a), 0o600);
        let taken = take(&spool, "db-a");
        let ids: Vec<Vec<String>> = taken
            .iter()
            .map(|t| {
                t.items
                    .iter()
                    .map(|w| match w {
                        Write::Session { meta, .. } => meta.id.clone(),
                        Write::Event(e) => e.id.clone(),
                    })
                    .collect()
            })
            .collect();
        assert_eq!(ids, vec![vec!["1".to_string()], vec!["3".into(), "4".into()]]);
        assert!(!a.exists() && !c.exists(), "claimed files are renamed");
        // Claimed by this (live) process: nobody else takes them.
        assert!(take(&spool, "db-a").is_empty());
        for t in &taken {
            remove(&t.path);
        }
        assert_eq!(take(&spool, "db-b").len(), 1);
    }
}
