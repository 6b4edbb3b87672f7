//! Large pastes: a paste of more than `FOLD_LINES` lines shows in the input as one marker,
//! `[pasted N lines]`, and the whole text takes the marker's place when the input is sent.
//! Owns only the markers and their texts; never touches the screen.

use super::editor::Editor;

/// Pastes with more lines than this are folded into a marker.
pub(crate) const FOLD_LINES: usize = 20;

/// The folded pastes of the input being typed.
#[derive(Debug, Default)]
pub struct Pastes {
    folded: Vec<(String, String)>,
}

impl Pastes {
    /// Inserts `text` at the cursor: as it is when short, else as a marker.
    pub fn insert(&mut self, editor: &mut Editor, text: &str) {
        let text: String = text
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .chars()
            .filter(|c| matches!(c, '\n' | '\t') || !c.is_control())
            .collect();
        let lines = text.trim_end_matches('\n').split('\n').count();
        if lines <= FOLD_LINES {
            editor.insert_str(&text);
            return;
        }
        let same = self
            .folded
            .iter()
            .filter(|(m, _)| m.starts_with(&format!("[pasted {lines} lines")))
            .count();
        let marker = if same == 0 {
            format!("[pasted {lines} lines]")
        } else {
            format!("[pasted {lines} lines #{}]", same + 1)
        };
        editor.insert_str(&marker);
        self.folded.push((marker, text));
    }

    /// `input` with each marker still in it replaced by its paste (a marker the user
    /// edited away is gone, and so is its paste). Forgets the pastes.
    pub fn expand(&mut self, input: &str) -> String {
        let mut out = input.to_string();
        for (marker, text) in std::mem::take(&mut self.folded) {
            if let Some(at) = out.find(&marker) {
                out.replace_range(at..at + marker.len(), &text);
            }
        }
        out
    }

    /// Forgets the pastes (the input was cleared).
    pub fn clear(&mut self) {
        self.folded.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_pastes_fold_and_expand_whole() {
        let mut e = Editor::new();
        let mut p = Pastes::default();
        e.insert_str("look: ");
        let long: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        p.insert(&mut e, &long);
        e.insert_str(" and ");
        p.insert(&mut e, &long.replace("line", "row"));
        p.insert(&mut e, "short\npaste");
        assert_eq!(
            e.text(),
            "look: [pasted 30 lines] and [pasted 30 lines #2]short\npaste"
        );
        let sent = p.expand(e.text());
        assert_eq!(
            sent,
            format!("look: {long} and {}short\npaste", long.replace("line", "row"))
        );
        assert_eq!(
            p.expand("[pasted 30 lines]"),
            "[pasted 30 lines]",
            "forgotten after a send"
        );
    }

    #[test]
    fn an_edited_marker_sends_what_is_there() {
        let mut e = Editor::new();
        let mut p = Pastes::default();
        let long = "x\n".repeat(25);
        p.insert(&mut e, &long);
        assert_eq!(e.text(), "[pasted 25 lines]");
        assert_eq!(p.expand("[pasted 25 li"), "[pasted 25 li");
    }
}
