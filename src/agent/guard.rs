//! The loop guard: within one user turn, a call identical to earlier ones (same tool, same
//! arguments compared as parsed JSON) runs at most `max_identical_calls` times. Pure.

use std::collections::HashMap;

use serde_json::Value;

use crate::tool_vocab::{Envelope, ErrorCode};

/// Counts the calls of one turn.
#[derive(Debug)]
pub(crate) struct RepeatGuard {
    max: u32,
    seen: HashMap<(String, String), u32>,
}

impl RepeatGuard {
    /// `max` of 0 turns the guard off.
    pub(crate) fn new(max: u32) -> Self {
        RepeatGuard {
            max,
            seen: HashMap::new(),
        }
    }

    /// Records a call about to run; `false` when it must not run (one too many repeats).
    pub(crate) fn allow(&mut self, name: &str, arguments: &str) -> bool {
        if self.max == 0 {
            return true;
        }
        let count = self
            .seen
            .entry((name.to_string(), canonical(arguments)))
            .or_insert(0);
        if *count >= self.max {
            return false;
        }
        *count += 1;
        true
    }

    pub(crate) fn max(&self) -> u32 {
        self.max
    }
}

/// Arguments compared as parsed JSON (key order and spacing do not matter); text that is
/// not JSON compares as itself.
fn canonical(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        // Objects keep their order when read (serde_json's `preserve_order`, which the ACP
        // SDK turns on): sorted here, so that order does not matter.
        Ok(mut v) => {
            v.sort_all_objects();
            v.to_string()
        }
        Err(_) => arguments.to_string(),
    }
}

/// What the model gets instead of running a repeated call.
pub(crate) fn repeated_envelope(name: &str, times: u32) -> Envelope {
    Envelope::failure(
        ErrorCode::RepeatedCall,
        format!(
            "Not executed: you already called {name} with these exact arguments {times} times in this turn \
             and have its output above. Answer with what you have, or try something different."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_identical_call_is_refused_whatever_the_key_order() {
        let mut g = RepeatGuard::new(2);
        assert!(g.allow("glob", r#"{"pattern":"*.rs","path":"src"}"#));
        assert!(g.allow("glob", r#"{ "path": "src", "pattern": "*.rs" }"#));
        assert!(!g.allow("glob", r#"{"path":"src","pattern":"*.rs"}"#));
        // Other arguments or another tool are separate.
        assert!(g.allow("glob", r#"{"pattern":"*.md"}"#));
        assert!(g.allow("grep", r#"{"pattern":"*.rs","path":"src"}"#));
        // Raw text that is not JSON compares as text.
        assert!(g.allow("bash", "{oops"));
        assert!(g.allow("bash", "{oops"));
        assert!(!g.allow("bash", "{oops"));
    }

    #[test]
    fn zero_turns_the_guard_off() {
        let mut g = RepeatGuard::new(0);
        for _ in 0..10 {
            assert!(g.allow("glob", "{}"));
        }
    }

    #[test]
    fn the_refusal_tells_the_model_what_to_do() {
        let e = repeated_envelope("glob", 2).to_value();
        assert_eq!(e["tool_success"], false);
        assert_eq!(e["error_code"], "REPEATED_CALL");
        assert!(e["error"].as_str().unwrap().contains("try something different"));
    }
}
