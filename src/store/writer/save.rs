//! How the writer saves: the leading run of queued writes in one transaction (one at a
//! time when that fails, to find the write at fault), a SQLite file recreated when it
//! was deleted, and the spool written at exit or taken back for replay.

use std::collections::HashMap;
use std::sync::Arc;

use super::{BATCH, Item, Writer};
use crate::protocol::NoticeLevel;
use crate::store::backend::{Backend, DbError, EventRow, Write};
use crate::store::channel::Conn;
use crate::store::spool;

impl Writer {
    /// A SQLite file deleted under us: warn, recreate it with what this store wrote.
    pub(super) async fn check_file(&mut self, db: Arc<dyn Backend>) -> Option<Arc<dyn Backend>> {
        if !db.file_gone() {
            return Some(db);
        }
        let keep: Vec<String> = self.touched.iter().cloned().collect();
        match db.recreate(&keep).await {
            Ok(fresh) => {
                let text = format!(
                    "{} was deleted or replaced while ikigai was using it; it was created again \
                     with this run's sessions ({} of them), and saving goes on there",
                    self.name,
                    keep.len()
                );
                self.notice(NoticeLevel::Warning, text);
                self.next_seq.clear();
                if let Some(id) = self.held.clone() {
                    let _ = fresh.hold(&id).await;
                }
                self.db = Some(fresh.clone());
                self.state.send_replace(Conn::Up(fresh.clone()));
                Some(fresh)
            }
            Err(e) => {
                let why = match e {
                    DbError::Unavailable(w) | DbError::Rejected(w) => w,
                    DbError::Conflict => "duplicate key".into(),
                };
                self.db = None;
                self.went_down(&format!(
                    "the file was deleted and cannot be created again: {why}"
                ));
                self.spool_if_flushing();
                None
            }
        }
    }

    /// Writes the leading run of writes, up to `BATCH` in one transaction. False when
    /// the database went away (the writes stay queued).
    pub(super) async fn write_some(&mut self, db: Arc<dyn Backend>) -> bool {
        let mut batch: Vec<(Write, bool)> = Vec::new();
        while batch.len() < BATCH && matches!(self.queue.front(), Some(Item::Write { .. })) {
            if let Some(Item::Write { write, counted }) = self.queue.pop_front() {
                batch.push((write, counted));
            }
        }
        match self.write_batch(db.as_ref(), &mut batch).await {
            Ok(()) => {
                self.after_written(db.as_ref(), &batch).await;
                let counted = batch.iter().filter(|(_, c)| *c).count();
                self.done(batch.len(), counted);
                self.refused = false;
                self.recovered(db);
                true
            }
            Err(DbError::Unavailable(_)) if db.file_gone() => {
                // Deleted while it was written: `work` recreates it, then writes again.
                self.requeue(batch);
                true
            }
            Err(DbError::Unavailable(why)) => {
                self.requeue(batch);
                self.went_down(&why);
                self.spool_if_flushing();
                false
            }
            // A conflict or a refused statement: find it by writing one at a time.
            Err(_) => self.write_each(db, batch).await,
        }
    }

    async fn write_batch(&mut self, db: &dyn Backend, batch: &mut [(Write, bool)]) -> Result<(), DbError> {
        let mut next: HashMap<String, i64> = HashMap::new();
        for (w, _) in batch.iter_mut() {
            if let Write::Event(row) = w {
                let seq = match next.get(&row.session_id).or(self.next_seq.get(&row.session_id)) {
                    Some(s) => *s,
                    None => db.max_seq(&row.session_id).await? + 1,
                };
                row.seq = seq;
                next.insert(row.session_id.clone(), seq + 1);
            }
        }
        let writes: Vec<Write> = batch.iter().map(|(w, _)| w.clone()).collect();
        match db.write_batch(&writes).await {
            Ok(()) => {
                self.next_seq.extend(next);
                Ok(())
            }
            Err(e) => {
                for s in next.keys() {
                    self.next_seq.remove(s);
                }
                Err(e)
            }
        }
    }

    async fn write_each(&mut self, db: Arc<dyn Backend>, batch: Vec<(Write, bool)>) -> bool {
        let mut rest = batch.into_iter();
        while let Some((mut write, counted)) = rest.next() {
            let result = match &mut write {
                Write::Session { meta, at } => db.insert_session(meta, at).await,
                Write::Event(row) => self.write_event(db.as_ref(), row).await,
            };
            match result {
                Ok(()) => {
                    let one = [(write, counted)];
                    self.after_written(db.as_ref(), &one).await;
                    self.done(1, usize::from(counted));
                    self.refused = false;
                    self.recovered(db.clone());
                }
                Err(DbError::Unavailable(why)) => {
                    let mut back = vec![(write, counted)];
                    back.extend(rest);
                    self.requeue(back);
                    if db.file_gone() {
                        return true;
                    }
                    self.went_down(&why);
                    self.spool_if_flushing();
                    return false;
                }
                Err(e) => {
                    let why = match e {
                        DbError::Rejected(why) | DbError::Unavailable(why) => why,
                        DbError::Conflict => "duplicate key".to_string(),
                    };
                    self.done(1, usize::from(counted));
                    // One warning until a write succeeds again, not one per event.
                    if !self.refused {
                        self.refused = true;
                        let text = format!("an event could not be saved to {}: {why}", self.name);
                        self.notice(NoticeLevel::Warning, text);
                    }
                }
            }
        }
        true
    }

    /// Inserts at the session's next `seq`; when another writer took it, re-reads the
    /// highest `seq` and tries again. An event already stored (same id) is done.
    async fn write_event(&mut self, db: &dyn Backend, row: &mut EventRow) -> Result<(), DbError> {
        for _ in 0..1000 {
            let seq = match self.next_seq.get(&row.session_id) {
                Some(s) => *s,
                None => db.max_seq(&row.session_id).await? + 1,
            };
            row.seq = seq;
            match db.insert_event(row).await {
                Ok(()) => {
                    self.next_seq.insert(row.session_id.clone(), seq + 1);
                    return Ok(());
                }
                Err(DbError::Conflict) => {
                    self.next_seq.remove(&row.session_id);
                    // An earlier attempt (or a replay) may have landed already.
                    if db.event_exists(&row.id).await? {
                        return Ok(());
                    }
                }
                Err(e) => {
                    self.next_seq.remove(&row.session_id);
                    return Err(e);
                }
            }
        }
        Err(DbError::Rejected(
            "another writer kept taking the next position".into(),
        ))
    }

    /// A new session is held by this store from its first write on; a sub-agent's is not
    /// (it is written only while its `task` call runs, and this store keeps holding the
    /// parent's), so it can be resumed on its own.
    async fn after_written(&mut self, db: &dyn Backend, written: &[(Write, bool)]) {
        let mut begun = None;
        for (w, _) in written {
            match w {
                Write::Session { meta, .. } => {
                    self.touched.insert(meta.id.clone());
                    if meta.parent.is_none() {
                        begun = Some(meta.id.clone());
                    }
                }
                Write::Event(row) => {
                    self.touched.insert(row.session_id.clone());
                }
            }
        }
        if let Some(id) = begun {
            let _ = db.hold(&id).await;
            self.held = Some(id);
        }
    }

    fn requeue(&mut self, batch: Vec<(Write, bool)>) {
        for (write, counted) in batch.into_iter().rev() {
            self.queue.push_front(Item::Write { write, counted });
        }
    }

    /// At exit with the database down: every queued write goes to a spool file now.
    pub(super) fn spool_if_flushing(&mut self) {
        let flushing = self.queue.iter().any(|i| matches!(i, Item::Flush(_)));
        if !flushing || !self.down || self.failed {
            return;
        }
        let mut writes = Vec::new();
        let mut counted = 0;
        let mut replaced = Vec::new();
        let mut answers = Vec::new();
        for item in std::mem::take(&mut self.queue) {
            match item {
                Item::Write { write, counted: c } => {
                    counted += usize::from(c);
                    writes.push(write);
                }
                Item::SpoolDone { path, .. } => replaced.push(path),
                Item::Sync(tx) | Item::Flush(tx) => answers.push(tx),
            }
        }
        let n = writes.len();
        let events = writes.iter().filter(|w| matches!(w, Write::Event(_))).count();
        let result = match &self.spool_dir {
            Some(dir) => spool::write(dir, &self.name, &writes),
            None => Err(std::io::Error::other(
                "no spool folder: set HOME or XDG_STATE_HOME",
            )),
        };
        match result {
            Ok(path) => {
                // Their writes are in the new file now (replays are idempotent anyway).
                for p in &replaced {
                    spool::remove(p);
                }
                self.done(n, counted);
                self.spooled = true;
                if n > 0 {
                    let text = format!(
                        "{events} events could not be saved to {}; they are kept in {} and saved \
                         at the next start of ikigai",
                        self.name,
                        path.display()
                    );
                    self.notice(NoticeLevel::Warning, text);
                }
            }
            Err(e) => {
                self.done(n, counted);
                let text = format!(
                    "{events} events are lost: {} is unavailable and the spool failed: {e}",
                    self.name
                );
                self.notice(NoticeLevel::Error, text);
            }
        }
        for tx in answers {
            let _ = tx.send(());
        }
    }

    /// Puts this database's spool files (oldest first) before everything queued.
    pub(super) fn take_spool(&mut self) {
        let Some(dir) = &self.spool_dir else { return };
        let taken = spool::take(dir, &self.name);
        for t in taken.into_iter().rev() {
            let n = t.items.iter().filter(|w| matches!(w, Write::Event(_))).count();
            self.queue.push_front(Item::SpoolDone { path: t.path, n });
            for write in t.items.into_iter().rev() {
                self.queued += 1;
                self.queue.push_front(Item::Write {
                    write,
                    counted: false,
                });
            }
        }
    }
}
