//! The tags the engine's prompt uses, as the text protocol defines them. The engine has no
//! tag matcher of its own: it scans sampled text with the text protocol's `Scanner` (same
//! near misses: any letter case, `<||file_read(path="x")||>` naming a known tool, tags
//! quoted in code shown, not run). This module only names the blocks the prompt renders.

pub use crate::provider::text_protocol::tags::{
    EXEC_CLOSE, EXEC_OPEN, OUTPUT_CLOSE, OUTPUT_OPEN, exec_block,
};

/// The block injected after a command: `<||SYSTEM.OUTPUT>\n…\n<SYSTEM.OUTPUT||>`, the
/// output's own tags defused as the text protocol does.
pub fn output_block(output: &str) -> String {
    let body = crate::provider::text_protocol::tags::escape_output(output);
    format!("{OUTPUT_OPEN}\n{body}\n{OUTPUT_CLOSE}")
}
