//! `ikigai undo [N] [--force] [--list]`: `/undo` from the shell, for the newest session of
//! the working directory. Puts the files back, records the undo in the session (so the
//! model hears of it when the session is resumed), and prints what it restored. Refuses,
//! naming the file, when a file was changed since ikigai's turn left it (unless `--force`).

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use crate::checkpoints::{Checkpoint, Checkpoints, DEFAULT_LIMIT, undo};
use crate::config::Config;
use crate::message::Message;
use crate::protocol::Event;
use crate::store::{MarkerKind, Record, StoreError, Target};

/// Why `ikigai undo` did not undo.
#[derive(Debug, thiserror::Error)]
pub enum UndoCmdError {
    #[error("no stored session in {0}; nothing to undo")]
    NoSession(String),
    #[error(transparent)]
    Store(StoreError),
    /// Nothing to undo, too few turns, or a file changed since (the message names it).
    #[error("{0}")]
    Refused(String),
    #[error("checkpoints are not kept: no data folder (set HOME or XDG_DATA_HOME)")]
    NoDataFolder,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Runs `ikigai undo` in `cwd`; returns the exit code.
pub async fn run(args: &crate::cli::UndoArgs, config: &Config, cwd: PathBuf) -> Result<u8, UndoCmdError> {
    let (notices, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let store = crate::store::open(config, notices);
    let shown = cwd.display().to_string();
    let claimed = match store.claim(Target::LatestIn(&shown)).await {
        Ok(c) => c,
        Err(StoreError::NotFound(_)) => return Err(UndoCmdError::NoSession(shown)),
        Err(e) => return Err(UndoCmdError::Store(e)),
    };
    let list: Vec<Checkpoint> = crate::agent::undo::parse(claimed.restored.checkpoints);
    let mut out = std::io::stdout().lock();
    if args.list {
        writeln!(out, "{}", crate::text::visible(&undo::listing(&list, &cwd)))?;
        store.flush().await;
        return Ok(0);
    }
    let checkpoints = Checkpoints::for_user(cwd.clone(), DEFAULT_LIMIT);
    let Some(blobs) = checkpoints.blobs() else {
        return Err(UndoCmdError::NoDataFolder);
    };
    let n = usize::try_from(args.turns).unwrap_or(usize::MAX);
    let done =
        undo::undo(&list, n, &blobs, &cwd, args.force).map_err(|e| UndoCmdError::Refused(e.to_string()))?;
    let id = claimed.info.id;
    store.record(
        &id,
        Record::Marker {
            kind: MarkerKind::Undo,
            data: json!({"checkpoints": done.ids, "files": done.files}),
        },
    );
    store.record(&id, Record::Message(Message::user(undo::note(&done))));
    store.flush().await;
    while let Ok(ev) = rx.try_recv() {
        if let Event::Notice { text, .. } = ev {
            eprintln!("ikigai: {}", crate::text::visible(&text));
        }
    }
    if let Some(from) = claimed.forked_from {
        eprintln!(
            "ikigai: session {from} is open in another ikigai; the undo is recorded in session {id}, forked from it"
        );
    }
    writeln!(out, "{}", crate::text::visible(&undo::summary(&done)))?;
    Ok(u8::from(!done.failed.is_empty()))
}
