//! Shell integration printed from the command line's own definition (`cli.rs`): completion
//! scripts (`ikigai completions SHELL`, clap_complete) and the manual page (`ikigai man`,
//! clap_mangen). Reads no configuration and starts nothing.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// Writes the completion script for `shell` to stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<u8, std::io::Error> {
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut cmd, "ikigai", &mut out);
    out.flush()?;
    Ok(0)
}

/// Writes the manual page (roff, section 1) to stdout.
pub(crate) fn man_page() -> Result<u8, std::io::Error> {
    let page = clap_mangen::Man::new(Cli::command());
    let mut out = std::io::stdout().lock();
    page.render(&mut out)?;
    out.flush()?;
    Ok(0)
}
