//! A sub-agent's view of the parent's store: every call goes to the parent's `Sessions`,
//! except that the session it begins is written as the child of the parent's session and
//! `task` call (`store::Parent`), so it is listed under the parent and never held by this
//! process as the parent is (it can be resumed on its own). Decides nothing else.

use std::sync::Arc;

use async_trait::async_trait;

use crate::store::{
    Claimed, EventInfo, Parent, Record, SessionInfo, SessionMeta, Sessions, StoreError, Target,
};

/// The parent's store, beginning sessions as `parent`'s children.
pub(super) struct Child {
    store: Arc<dyn Sessions>,
    parent: Parent,
}

impl Child {
    pub(super) fn of(store: Arc<dyn Sessions>, parent: Parent) -> Arc<dyn Sessions> {
        Arc::new(Child { store, parent })
    }
}

#[async_trait]
impl Sessions for Child {
    fn begin(&self, mut meta: SessionMeta) {
        meta.parent = Some(self.parent.clone());
        self.store.begin(meta);
    }

    fn record(&self, session_id: &str, record: Record) {
        self.store.record(session_id, record);
    }

    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.store.list().await
    }

    async fn latest_in(&self, cwd: &str) -> Result<Option<SessionInfo>, StoreError> {
        self.store.latest_in(cwd).await
    }

    async fn load(&self, id_prefix: &str) -> Result<(SessionInfo, Vec<Record>), StoreError> {
        self.store.load(id_prefix).await
    }

    async fn claim(&self, target: Target<'_>) -> Result<Claimed, StoreError> {
        self.store.claim(target).await
    }

    async fn delete(&self, id_prefix: &str) -> Result<SessionInfo, StoreError> {
        self.store.delete(id_prefix).await
    }

    async fn export(&self, id_prefix: &str) -> Result<(SessionInfo, Vec<EventInfo>), StoreError> {
        self.store.export(id_prefix).await
    }

    async fn flush(&self) {
        self.store.flush().await
    }
}
