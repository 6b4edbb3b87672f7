//! The seam through which a front end may serve the built-in file tools' text: an editor
//! that keeps unsaved buffers (ACP's `fs/read_text_file`, `fs/write_text_file`) reads and
//! writes them in ikigai's place. A `FileSeam` is made empty with the tool registry, the
//! front end fills it once it knows what the editor offers, and the file tools ask it
//! after the permission engine and the sandbox have judged the path. Moves text only:
//! decides nothing about which paths may be read or written, and does no I/O itself.

use std::path::Path;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

/// Text files served by someone other than the file system (an editor). Paths are
/// absolute, as the permission decision resolved them.
#[async_trait]
pub trait TextFiles: Send + Sync {
    /// Whether `read` may be asked.
    fn reads(&self) -> bool;
    /// Whether `write` may be asked.
    fn writes(&self) -> bool;
    /// The text of `path` as the server holds it (an unsaved buffer's, else the file's);
    /// `Err`: why it could not be read, in words for the model.
    async fn read(&self, path: &Path) -> Result<String, String>;
    /// Makes `text` the whole content of `path` (creating it); `Err`: why not.
    async fn write(&self, path: &Path, text: &str) -> Result<(), String>;
}

/// Where the front end puts its `TextFiles`, shared by every clone (the registry's, each
/// call's context). Empty: the tools use the file system.
#[derive(Clone, Default)]
pub struct FileSeam(Arc<RwLock<Option<Arc<dyn TextFiles>>>>);

impl FileSeam {
    /// Serves the tools' text through `files` from now on (`None`: the file system).
    pub fn set(&self, files: Option<Arc<dyn TextFiles>>) {
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = files;
    }

    /// The text files served now, if any.
    pub fn get(&self) -> Option<Arc<dyn TextFiles>> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl std::fmt::Debug for FileSeam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let served = self.get().map(|s| (s.reads(), s.writes()));
        f.debug_tuple("FileSeam").field(&served).finish()
    }
}
