//! The approval modes (`approval = "auto" | "ask" | "read-only"`): their names, the order
//! Shift+Tab cycles them in, and what each lets run without asking. Pure data.

use serde::{Deserialize, Serialize};

/// How much runs without asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every call runs, except what a `deny` (or `ask`) rule says.
    Auto,
    /// Read-only tools and commands, and edits inside the working directory, run; every
    /// other call asks.
    Ask,
    /// Nothing that writes runs unless an `allow` rule says so.
    ReadOnly,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Ask, Mode::Auto, Mode::ReadOnly];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Ask => "ask",
            Mode::ReadOnly => "read-only",
        }
    }

    /// The mode Shift+Tab switches to: ask → auto → read-only → ask.
    pub fn next(self) -> Mode {
        match self {
            Mode::Ask => Mode::Auto,
            Mode::Auto => Mode::ReadOnly,
            Mode::ReadOnly => Mode::Ask,
        }
    }

    /// The mode named `s`, or a message listing the names.
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "auto" => Ok(Mode::Auto),
            "ask" => Ok(Mode::Ask),
            "read-only" | "readonly" | "read_only" => Ok(Mode::ReadOnly),
            other => Err(format!("`{other}` is not one of auto, ask, read-only")),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The mode in force, shared between the agent's turn and its command loop (Shift+Tab
/// changes it while a turn runs).
#[derive(Clone, Debug)]
pub struct SharedMode(std::sync::Arc<std::sync::atomic::AtomicU8>);

impl SharedMode {
    pub fn new(mode: Mode) -> SharedMode {
        SharedMode(std::sync::Arc::new(std::sync::atomic::AtomicU8::new(mode as u8)))
    }

    pub fn get(&self) -> Mode {
        match self.0.load(std::sync::atomic::Ordering::Relaxed) {
            0 => Mode::Auto,
            1 => Mode::Ask,
            _ => Mode::ReadOnly,
        }
    }

    pub fn set(&self, mode: Mode) {
        self.0.store(mode as u8, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_cycle_visits_every_mode() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()), Ok(m));
        }
        assert_eq!(Mode::Ask.next().next().next(), Mode::Ask);
        assert!(Mode::parse("yolo").unwrap_err().contains("auto, ask, read-only"));
    }
}
