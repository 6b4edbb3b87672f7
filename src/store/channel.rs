//! What the store's handle and its writer task share: the commands the handle queues,
//! and the connection state the writer publishes for readers (with the final failure it
//! keeps). Types only; neither side's logic.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::StoreError;
use super::backend::{Backend, Write};

/// What the handle sends. A write is the large variant since serde_json keeps object order
/// (`preserve_order`, which the ACP SDK turns on): each is moved once, not worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Cmd {
    Write(Write),
    /// The handle now holds this session (a claim): keep it across a recreated file.
    Held(String),
    /// Answered once every earlier write is done (readers).
    Sync(oneshot::Sender<()>),
    /// At exit: answered once every earlier write is done, or spooled.
    Flush(oneshot::Sender<()>),
}

/// The connection as readers see it.
#[derive(Clone)]
pub(crate) enum Conn {
    Connecting,
    Up(Arc<dyn Backend>),
    /// Why it is down, naming the database.
    Down(String),
    /// A final failure, kept so every later read can report it.
    Failed(StoreError),
}
