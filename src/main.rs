//! The `ikigai` binary: parses flags, runs, prints errors, picks exit codes.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let _cli = ikigai::cli::Cli::parse();
    ExitCode::SUCCESS
}
