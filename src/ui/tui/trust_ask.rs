//! The question the TUI asks once, at start, when the folder is not trusted but holds
//! project tools: it lists them and asks whether to trust the folder (`y`: trust it and
//! remember; anything else: not this time; Ctrl+C: quit). One key, read in raw mode,
//! before the TUI takes the screen. Names are shown with control characters visible.

use std::io::Write;
use std::path::{Path, PathBuf};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

/// The user's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Trust,
    NotNow,
    Quit,
}

/// Restores cooked mode however the question ends.
struct Raw;

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Asks on the terminal (stdout, stdin) whether to trust `cwd`, whose project folder
/// holds `tools`.
pub(crate) fn ask(cwd: &Path, tools: &[PathBuf], home: Option<&str>) -> std::io::Result<Answer> {
    let shown = |p: &Path| crate::text::visible(&super::display_path(p, home)).into_owned();
    let mut out = std::io::stdout().lock();
    writeln!(out, "This folder is not trusted: {}", shown(cwd))?;
    writeln!(out, "It holds project tools, programs ikigai would run:")?;
    for t in tools {
        let rel = t.strip_prefix(cwd).unwrap_or(t);
        writeln!(out, "  {}", crate::text::visible(&rel.display().to_string()))?;
    }
    write!(
        out,
        "Trust this folder and the folders under it, and load them? (remembered; \
         `ikigai trust --revoke` undoes it) [y/N] "
    )?;
    out.flush()?;
    let answer = {
        crossterm::terminal::enable_raw_mode()?;
        let _raw = Raw;
        loop {
            if let Event::Key(k) = event::read()?
                && k.kind == KeyEventKind::Press
            {
                break match k.code {
                    KeyCode::Char('y' | 'Y') => Answer::Trust,
                    KeyCode::Char('c' | 'd') if k.modifiers.contains(KeyModifiers::CONTROL) => Answer::Quit,
                    _ => Answer::NotNow,
                };
            }
        }
    };
    let said = match answer {
        Answer::Trust => "y",
        Answer::NotNow => "n",
        Answer::Quit => "",
    };
    writeln!(out, "{said}")?;
    if answer == Answer::NotNow {
        writeln!(out, "Not trusted this time: the project tools are not loaded.")?;
    }
    out.flush()?;
    Ok(answer)
}
