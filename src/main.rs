//! The `ikigai` binary: parses flags, runs, prints errors, picks exit codes. The only
//! place that maps errors to exit codes.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = ikigai::cli::Cli::parse();
    // Descendants that a tool orphans (setsid, daemons) come back to us to be killed.
    ikigai::tools::process::become_subreaper();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ikigai: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(ikigai::app::run(cli));
    // Do not wait for stray blocking tasks (a tool thread still reading) at exit.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        // Whoever read our output stopped reading (`ikigai -p … | head`): nothing to say.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            let text = e.to_string();
            eprintln!("ikigai: {}", ikigai::redact::global().scrub_notice(&text));
            ExitCode::from(e.exit_code())
        }
    }
}
