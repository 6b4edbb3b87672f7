//! The in-process engine's tiny SYSTEM.EXEC matcher: splits sampled text into what may be
//! shown and a complete `<||SYSTEM.EXEC>command<SYSTEM.EXEC||>`. Holds back any suffix that
//! could still become the opening tag. It knows nothing of tokens, threads or providers;
//! the provider-wide text-protocol wrapper (issue 12) is separate and richer (near misses,
//! code fences); this one only serves the engine, which sees every byte as it is sampled.

pub const EXEC_OPEN: &str = "<||SYSTEM.EXEC>";
pub const EXEC_CLOSE: &str = "<SYSTEM.EXEC||>";
pub const OUTPUT_OPEN: &str = "<||SYSTEM.OUTPUT>";
pub const OUTPUT_CLOSE: &str = "<SYSTEM.OUTPUT||>";

/// What one push of text produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Text safe to show now.
    pub text: String,
    /// The command of a tag completed by this push (text after it is not consumed).
    pub command: Option<String>,
}

/// Streaming matcher; feed it sampled text in any chunking.
#[derive(Debug, Default)]
pub struct ExecMatcher {
    /// Text not yet shown: a possible start of the opening tag, or an open tag's body.
    held: String,
    /// True once the opening tag has been seen; `held` is then the command so far.
    open: bool,
}

impl ExecMatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds sampled text. Stops at the first completed tag: anything after it is dropped,
    /// since the engine pauses generation there.
    pub fn push(&mut self, piece: &str) -> Scan {
        self.held.push_str(piece);
        let mut out = Scan::default();
        if !self.open {
            if let Some(at) = self.held.find(EXEC_OPEN) {
                out.text.push_str(&self.held[..at]);
                self.held.drain(..at + EXEC_OPEN.len());
                self.open = true;
            } else {
                let keep = partial_suffix(&self.held, EXEC_OPEN);
                let cut = self.held.len() - keep;
                out.text.push_str(&self.held[..cut]);
                self.held.drain(..cut);
                return out;
            }
        }
        if let Some(at) = self.held.find(EXEC_CLOSE) {
            out.command = Some(self.held[..at].to_string());
            self.held.clear();
            self.open = false;
        }
        out
    }

    /// True while inside an opening tag whose closing tag has not come yet.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Generation ended. An open tag whose body is one line counts as a complete command
    /// (the model stopped where the closing tag belongs); anything else held is text.
    pub fn finish(&mut self, stopped_by_model: bool) -> Scan {
        let held = std::mem::take(&mut self.held);
        let was_open = std::mem::replace(&mut self.open, false);
        if was_open && stopped_by_model && !held.trim().is_empty() && !held.trim_end().contains('\n') {
            return Scan {
                text: String::new(),
                command: Some(held.trim_end().to_string()),
            };
        }
        let text = if was_open {
            format!("{EXEC_OPEN}{held}")
        } else {
            held
        };
        Scan { text, command: None }
    }
}

/// Length of the longest suffix of `s` that is a proper prefix of `tag`.
fn partial_suffix(s: &str, tag: &str) -> usize {
    let max = tag.len().saturating_sub(1).min(s.len());
    (1..=max)
        .rev()
        .find(|&n| s.is_char_boundary(s.len() - n) && tag.starts_with(&s[s.len() - n..]))
        .unwrap_or(0)
}

/// The block injected after a command: `<||SYSTEM.OUTPUT>\n…\n<SYSTEM.OUTPUT||>`, the
/// output's own tags defused as the text protocol does.
pub fn output_block(output: &str) -> String {
    let body = crate::provider::text_protocol::tags::escape_output(output);
    format!("{OUTPUT_OPEN}\n{body}\n{OUTPUT_CLOSE}")
}

/// The tag as the model wrote it, for rendering a stored call back into the prompt.
pub fn exec_block(command: &str) -> String {
    format!("{EXEC_OPEN}{command}{EXEC_CLOSE}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (String, Option<String>) {
        let mut m = ExecMatcher::new();
        let mut text = String::new();
        for c in chunks {
            let s = m.push(c);
            text.push_str(&s.text);
            if s.command.is_some() {
                return (text, s.command);
            }
        }
        let s = m.finish(false);
        text.push_str(&s.text);
        (text, s.command)
    }

    #[test]
    fn a_tag_split_at_every_byte_is_found_and_hidden() {
        let whole = "Let me look. <||SYSTEM.EXEC>ls -la<SYSTEM.EXEC||>ignored";
        for i in 0..=whole.len() {
            let (text, cmd) = run(&[&whole[..i], &whole[i..]]);
            assert_eq!(text, "Let me look. ", "split at {i}");
            assert_eq!(cmd.as_deref(), Some("ls -la"), "split at {i}");
        }
        let bytes: Vec<String> = whole.chars().map(String::from).collect();
        let refs: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(run(&refs), ("Let me look. ".into(), Some("ls -la".into())));
    }

    #[test]
    fn text_that_only_starts_like_a_tag_is_released() {
        let mut m = ExecMatcher::new();
        assert_eq!(m.push("a <|").text, "a ");
        assert_eq!(m.push("| b").text, "<|| b");
        assert_eq!(m.finish(false).text, "");
    }

    #[test]
    fn an_open_tag_at_the_end_is_a_command_only_when_the_model_stopped_on_one_line() {
        let mut m = ExecMatcher::new();
        m.push("<||SYSTEM.EXEC>uname -a\n");
        assert_eq!(m.finish(true).command.as_deref(), Some("uname -a"));
        let mut m = ExecMatcher::new();
        m.push("<||SYSTEM.EXEC>uname -a\nmore prose");
        let s = m.finish(true);
        assert_eq!(s.command, None);
        assert_eq!(s.text, "<||SYSTEM.EXEC>uname -a\nmore prose");
        let mut m = ExecMatcher::new();
        m.push("<||SYSTEM.EXEC>uname");
        assert_eq!(m.finish(false).command, None, "cut off by the length limit");
    }
}
