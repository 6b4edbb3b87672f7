//! A server's echo of the prefilled assistant message: llama-server (and others built on
//! llama.cpp's chat parser) starts its answer with the whole assistant text it was asked to
//! continue. Read as new text, that echo runs the earlier commands again and shows their
//! output blocks as the model's words. `EchoStrip` drops the echo from the first text of a
//! response; a server that does not echo loses nothing. Pure: no IO.

/// Strips a leading copy of `prefill` from a response's text, across any chunking.
#[derive(Debug)]
pub struct EchoStrip {
    prefill: String,
    held: String,
    done: bool,
}

impl EchoStrip {
    /// `prefill`: the assistant text the request ends with ("" when it ends with a user
    /// message: nothing to strip).
    pub fn new(prefill: String) -> Self {
        let done = prefill.is_empty();
        EchoStrip {
            prefill,
            held: String::new(),
            done,
        }
    }

    /// The part of `text` that is new. Text that may still be the start of an echo is held
    /// back until it either completes the echo (dropped) or differs from it (passed on whole).
    pub fn push(&mut self, text: &str) -> String {
        if self.done {
            return text.to_string();
        }
        self.held.push_str(text);
        if self.held.len() < self.prefill.len() {
            if self.prefill.starts_with(self.held.as_str()) {
                return String::new();
            }
        } else if self.held.starts_with(self.prefill.as_str()) {
            self.done = true;
            return self.held.split_off(self.prefill.len());
        }
        self.done = true;
        std::mem::take(&mut self.held)
    }

    /// At the end of the response: text still held back was an echo cut short (the
    /// server's answer ended inside it), which is nothing new.
    pub fn finish(&mut self) {
        self.done = true;
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFILL: &str =
        "<||SYSTEM.EXEC>wc -l data.csv<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\n17 data.csv\n<SYSTEM.OUTPUT||>\n";

    fn run(prefill: &str, chunks: &[&str]) -> String {
        let mut s = EchoStrip::new(prefill.to_string());
        let out: String = chunks.iter().map(|c| s.push(c)).collect();
        s.finish();
        out
    }

    #[test]
    fn an_echo_in_one_chunk_or_split_at_every_byte_is_dropped() {
        let answer = "data.csv has 17 lines.";
        let whole = format!("{PREFILL}{answer}");
        // llama-server's real first chunk: the echo and the first new word together.
        assert_eq!(
            run(PREFILL, &[&format!("{PREFILL}data.csv"), " has 17 lines."]),
            answer
        );
        for cut in 1..whole.len() {
            if !whole.is_char_boundary(cut) {
                continue;
            }
            assert_eq!(run(PREFILL, &[&whole[..cut], &whole[cut..]]), answer, "cut {cut}");
        }
        let bytes: Vec<String> = whole.chars().map(String::from).collect();
        let refs: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(run(PREFILL, &refs), answer);
    }

    #[test]
    fn a_server_that_does_not_echo_loses_nothing() {
        assert_eq!(
            run(PREFILL, &["data.csv", " has 17 lines."]),
            "data.csv has 17 lines."
        );
        // Starts like the echo, then differs: every byte comes through, in order.
        assert_eq!(
            run(PREFILL, &["<||SYSTEM.EXEC>", "ls<SYSTEM.EXEC||>"]),
            "<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>"
        );
        // No prefill: nothing is held.
        let mut s = EchoStrip::new(String::new());
        assert_eq!(s.push("<||SYSTEM.EXEC>"), "<||SYSTEM.EXEC>");
    }

    #[test]
    fn only_the_first_copy_is_an_echo() {
        let twice = format!("{PREFILL}{PREFILL}");
        assert_eq!(run(PREFILL, &[&twice]), PREFILL);
    }
}
