//! Why a snapshot could not be taken: shared by the shadow repository and its fast first
//! snapshot.

use std::io;

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// The tree is larger than the limit: not covered (not retryable in this session).
    #[error("the project holds more than {limit_mb} MB of files that are not ignored")]
    TooLarge { limit_mb: u64 },
    /// `git` is missing or failed.
    #[error("git: {0}")]
    Git(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}
