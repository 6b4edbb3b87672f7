//! The question the TUI asks once, at start, when the folder is not trusted (or its
//! settings changed since it was) but holds project tools or settings: it lists the tools,
//! the MCP servers with what they run and the permission rules, and asks whether to trust
//! the folder (`y`: trust it and
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

/// What the question shows: everything `y` would load.
pub(crate) struct Question<'a> {
    pub cwd: &'a Path,
    /// Project tools (programs).
    pub tools: &'a [PathBuf],
    /// What the project's settings add (MCP servers and what they run, permission rules).
    pub settings: &'a [String],
    /// The folder was trusted, but its settings changed since.
    pub changed: bool,
}

/// Asks on the terminal (stdout, stdin) whether to trust the question's folder.
pub(crate) fn ask(q: &Question<'_>, home: Option<&str>) -> std::io::Result<Answer> {
    let shown = |p: &Path| crate::text::visible(&super::display_path(p, home)).into_owned();
    let mut out = std::io::stdout().lock();
    if q.changed {
        writeln!(
            out,
            "This folder's ikigai settings, or the project files they run, changed since you trusted it: {}",
            shown(q.cwd)
        )?;
    } else {
        writeln!(out, "This folder is not trusted: {}", shown(q.cwd))?;
    }
    if !q.tools.is_empty() {
        writeln!(out, "It holds project tools, programs ikigai would run:")?;
        for t in q.tools {
            let rel = t.strip_prefix(q.cwd).unwrap_or(t);
            writeln!(out, "  {}", crate::text::visible(&rel.display().to_string()))?;
        }
    }
    if !q.settings.is_empty() {
        writeln!(out, "Its settings (.ikigai/config.toml) add:")?;
        for line in q.settings {
            writeln!(out, "  {}", crate::text::visible(line))?;
        }
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
        writeln!(
            out,
            "Not trusted this time: its project tools and settings are not loaded."
        )?;
    }
    out.flush()?;
    Ok(answer)
}
