//! The `ikigai` binary: parses flags, runs, prints errors, picks exit codes. The only
//! place that maps errors to exit codes. Started as the tool launcher (a hidden first
//! argument), it does only that, before anything else.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if ikigai::tools::launcher::is_launch(&args) {
        return ExitCode::from(ikigai::tools::launcher::run(args));
    }
    // The re-executed image takes the secrets it was handed (see `environ`).
    if let Err(e) = ikigai::environ::receive() {
        eprintln!("ikigai: {}", ikigai::text::visible(&e.to_string()));
    }
    let cli = ikigai::cli::Cli::parse_from(args);
    if let Some(result) = ikigai::app::run_without_config(&cli) {
        return match result {
            Ok(code) => ExitCode::from(code),
            Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        };
    }
    let loaded = match ikigai::app::load_config(&cli) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    // No secret stays in our environment block, where a tool could read it; returns only
    // when there is none to hide (or hiding failed, which is said).
    if let Err(e) = ikigai::environ::hide(&|name| ikigai::app::is_secret_var(&loaded, name)) {
        eprintln!("ikigai: {}", ikigai::text::visible(&e.to_string()));
    }
    // Processes of the same user cannot read our memory or attach to us.
    let _ = nix::sys::prctl::set_dumpable(false);
    // Every tool starts through the launcher (ikigai-launch beside us, else our own
    // launcher mode), so it dies with us.
    let exe = std::env::current_exe().ok();
    ikigai::tools::launcher::install(ikigai::tools::launcher::locate(exe.as_deref()));
    // Descendants that a tool orphans (setsid, daemons) come back to us to be killed.
    ikigai::tools::process::become_subreaper();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ikigai: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Tools are spawned on this thread (a current-thread runtime), which lives as long as
    // the process: their death signal fires when ikigai ends, not before.
    let result = runtime.block_on(ikigai::app::run(cli, loaded));
    // Do not wait for stray blocking tasks (a tool thread still reading) at exit.
    runtime.shutdown_background();
    // The read-only sandbox's private temporary folder goes with us.
    ikigai::permissions::sandbox::cleanup();
    match result {
        Ok(code) => ExitCode::from(code),
        // Whoever read our output stopped reading (`ikigai -p … | head`): nothing to say.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(e: &ikigai::app::AppError) -> ExitCode {
    let text = e.to_string();
    let shown = ikigai::redact::global().scrub_notice(&text).into_owned();
    eprintln!("ikigai: {}", ikigai::text::visible(&shown));
    ExitCode::from(e.exit_code())
}
