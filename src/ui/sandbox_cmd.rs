//! `ikigai sandbox [--mode MODE] -- CMD…`: runs one command the way a tool process runs
//! (through the launcher, under the installed sandbox, with the tools' filtered
//! environment, in this folder), with the terminal's stdin, stdout and stderr (in a
//! session of its own, without the terminal as its controlling one), and ends with its
//! exit code. For trying a policy by hand; prints only its own notes: what the sandbox
//! covers on this system, and what it does not.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use crate::config::Config;

/// Runs `command` and returns its exit code (128+N when killed by signal N, 127 when it
/// could not be started).
pub async fn run(command: &[OsString], config: &Config) -> io::Result<u8> {
    let Some((program, args)) = command.split_first() else {
        return Ok(2);
    };
    match crate::permissions::sandbox_in_force::sandbox() {
        Some(c) => {
            let roots: Vec<String> = c.writable.iter().map(|w| w.display().to_string()).collect();
            eprintln!(
                "ikigai: sandbox {}: writes only in {}{}",
                c.mode,
                roots.join(", "),
                if c.network { "" } else { "; no network" }
            );
            let mounts = crate::tools::launcher::private_mounts(&c.writable).map(|_| ());
            let (covered, missing) = crate::permissions::sandbox::coverage(&c, &mounts);
            eprintln!("ikigai: also: {}", covered.join(", "));
            if !missing.is_empty() {
                eprintln!("ikigai: not covered here: {}", missing.join("; "));
            }
        }
        None => eprintln!(
            "ikigai: the sandbox is off (`sandbox` in the config, or `--mode workspace-write|read-only`); running the command without it"
        ),
    }
    let cwd = std::env::current_dir()?;
    let env = crate::tools::EnvPolicy::from_config(config, crate::provider::key_vars(config)).current();
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_os_str());
    let mut cmd = match crate::tools::launcher::sandboxed_command(Path::new(program), args, &cwd, path_var) {
        Ok(cmd) => cmd,
        Err(e) => {
            eprintln!(
                "ikigai: {}",
                crate::text::visible(&format!("cannot run {}: {e}", Path::new(program).display()))
            );
            return Ok(127);
        }
    };
    cmd.current_dir(&cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    let status = match cmd.status().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "ikigai: {}",
                crate::text::visible(&format!("cannot run {}: {e}", Path::new(program).display()))
            );
            return Ok(127);
        }
    };
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
        (None, None) => 1,
    })
}
