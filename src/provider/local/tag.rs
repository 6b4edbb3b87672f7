//! The tags the engine's prompt uses, as the text protocol defines them. The engine has no
//! tag matcher of its own: it scans sampled text with the text protocol's `Scanner` (same
//! near misses: any letter case, `<||file_read(path="x")||>` naming a known tool, tags
//! quoted in code shown, not run). This module only names the blocks the prompt renders.

pub use crate::provider::text_protocol::tags::{
    EXEC_CLOSE, EXEC_OPEN, OUTPUT_CLOSE, OUTPUT_OPEN, exec_block, output_block,
};

/// Watches the text the model writes for an output block of its own: its opening tag
/// (`<||SYSTEM.OUTPUT>`) or its closing one (`<SYSTEM.OUTPUT||>`, also as the escaped
/// `<\SYSTEM.OUTPUT||>` an output shows), any letter case. A model that writes one is
/// making up or echoing a command's output, so the engine ends the response there, and
/// the tag is never shown. Holds back any suffix that could still become one.
#[derive(Debug, Default)]
pub struct OutputGuard {
    held: String,
}

/// The forms that end the answer, lowercase.
const MADE_UP: [&str; 3] = ["<||system.output>", "<system.output||>", "<\\system.output||>"];

impl OutputGuard {
    /// Adds text; returns what may be shown, and whether a made-up block began.
    pub fn push(&mut self, text: &str) -> (String, bool) {
        self.held.push_str(text);
        let lower = self.held.to_ascii_lowercase();
        if let Some(at) = MADE_UP.iter().filter_map(|p| lower.find(p)).min() {
            let shown = self.held[..at].to_string();
            self.held.clear();
            return (shown, true);
        }
        let keep = MADE_UP
            .iter()
            .filter_map(|p| {
                (1..p.len().min(lower.len() + 1)).rev().find(|&n| {
                    lower.is_char_boundary(lower.len() - n) && p.starts_with(&lower[lower.len() - n..])
                })
            })
            .max()
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
            // Seen: after a failed command the 0.5B model echoed its output and closing tag
            // over and over until the time ran out.
            "It says:\n<SYSTEM.OUTPUT||>\nbash: x\n<SYSTEM.OUTPUT||>",
            "It says:\n<\\SYSTEM.OUTPUT||>\n",
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
