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

/// Watches the text the model writes for an output block of its own (`<||SYSTEM.OUTPUT>`,
/// any letter case): a model that writes one is making up a command's output, so the
/// engine ends the response there, and the block is never shown. Holds back any suffix
/// that could still become it.
#[derive(Debug, Default)]
pub struct OutputGuard {
    held: String,
}

impl OutputGuard {
    /// Adds text; returns what may be shown, and whether the made-up block began.
    pub fn push(&mut self, text: &str) -> (String, bool) {
        self.held.push_str(text);
        let lower = self.held.to_ascii_lowercase();
        let open = OUTPUT_OPEN.to_ascii_lowercase();
        if let Some(at) = lower.find(&open) {
            let shown = self.held[..at].to_string();
            self.held.clear();
            return (shown, true);
        }
        let keep = (1..open.len().min(lower.len() + 1))
            .rev()
            .find(|&n| lower.is_char_boundary(lower.len() - n) && open.starts_with(&lower[lower.len() - n..]))
            .unwrap_or(0);
        let cut = self.held.len() - keep;
        let shown = self.held[..cut].to_string();
        self.held.drain(..cut);
        (shown, false)
    }

    /// The response ended: what is held is text.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_up_output_block_ends_the_text_split_anywhere_and_in_any_case() {
        for whole in [
            "It says:\n<||SYSTEM.OUTPUT>\n42\n",
            "It says:\n<||system.output>\n42",
        ] {
            for i in 0..=whole.len() {
                let mut g = OutputGuard::default();
                let (a, stop_a) = g.push(&whole[..i]);
                let (b, stop_b) = if stop_a {
                    (String::new(), true)
                } else {
                    g.push(&whole[i..])
                };
                assert!(stop_b, "split at {i}");
                assert_eq!(format!("{a}{b}"), "It says:\n", "split at {i}");
            }
        }
    }

    #[test]
    fn text_that_only_starts_like_the_block_is_shown() {
        let mut g = OutputGuard::default();
        assert_eq!(g.push("a <||SYS"), ("a ".to_string(), false));
        assert_eq!(g.push("TEM.EXEC"), ("<||SYSTEM.EXEC".to_string(), false));
        assert_eq!(g.push(" <|"), (" ".to_string(), false));
        assert_eq!(g.finish(), "<|");
    }
}
