//! The editor's files (`fs/read_text_file`, `fs/write_text_file`), served to the built-in
//! file tools through the seam they take (`tool_vocab::files`): when the editor offers
//! them, a read sees its unsaved buffer and an edit lands in it. Only moves text for the
//! session open in the editor: which paths may be read or written is decided before, by
//! the permission engine and the sandbox, and the tools ask here only for a path in the
//! working directory.

use std::path::Path;
use std::sync::{Arc, Weak};

use agent_client_protocol::v1::schema::{FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest};
use async_trait::async_trait;

use super::{Cx, Shared, lock};
use crate::tool_vocab::files::TextFiles;

/// The editor's side of the file tools, for the session it has open.
pub(super) struct EditorFiles {
    cx: Cx,
    /// Weak: the tools hold this, and the front end's state holds the agent's channel.
    shared: Weak<Shared>,
    reads: bool,
    writes: bool,
}

impl EditorFiles {
    /// The editor's files as far as `fs` offers them; `None`: it offers neither.
    pub(super) fn offered(
        cx: Cx,
        shared: &Arc<Shared>,
        fs: &FileSystemCapabilities,
    ) -> Option<Arc<dyn TextFiles>> {
        if !fs.read_text_file && !fs.write_text_file {
            return None;
        }
        Some(Arc::new(EditorFiles {
            cx,
            shared: Arc::downgrade(shared),
            reads: fs.read_text_file,
            writes: fs.write_text_file,
        }))
    }

    /// The session the editor has open (the requests name it).
    fn session(&self) -> Result<String, String> {
        let shared = self.shared.upgrade().ok_or("the editor is gone")?;
        lock(&shared.current)
            .clone()
            .ok_or_else(|| "no session is open in the editor".to_string())
    }
}

#[async_trait]
impl TextFiles for EditorFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    async fn read(&self, path: &Path) -> Result<String, String> {
        let req = ReadTextFileRequest::new(self.session()?, path.to_path_buf());
        match self.cx.send_request(req).block_task().await {
            Ok(r) => Ok(r.content),
            Err(e) => Err(format!("the editor answered: {}", e.message)),
        }
    }

    async fn write(&self, path: &Path, text: &str) -> Result<(), String> {
        let req = WriteTextFileRequest::new(self.session()?, path.to_path_buf(), text.to_string());
        match self.cx.send_request(req).block_task().await {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("the editor answered: {}", e.message)),
        }
    }
}
