//! ikigai's view of its environment: the process's own variables plus the secret ones it
//! took out of its environment block at start. A tool process could read that block
//! (`/proc/PID/environ`), so when it holds a secret (a provider key, a token, the database
//! URL…) the binary re-executes itself once without them and hands the values over in an
//! inherited memfd that the new image reads and closes; from then on they live only in
//! this module's memory. Every read of a variable goes through `var`/`var_os`/`vars_os`.
//! Decides nothing about which names are secret (the caller says) and never prints.

use std::ffi::{CString, OsStr, OsString};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::OnceLock;

/// Names the inherited memfd (its number) in the re-executed image. Not a secret.
pub const HANDOVER_VAR: &str = "IKIGAI_HANDOVER_FD";
/// The memfd's name, checked before it is read (`/proc/self/fd/N` -> `/memfd:NAME`).
const MEMFD_NAME: &str = "ikigai-handover";

/// The variables handed over at start (names and values), never in the environment block.
static HELD: OnceLock<Vec<(OsString, OsString)>> = OnceLock::new();

fn held() -> &'static [(OsString, OsString)] {
    HELD.get().map_or(&[], Vec::as_slice)
}

/// Why the handover or the re-execution failed; ikigai then runs on, as before.
#[derive(Debug, thiserror::Error)]
pub enum HandoverError {
    /// `IKIGAI_HANDOVER_FD` does not name ikigai's memfd (set by someone else). Not retryable.
    #[error("{HANDOVER_VAR} does not name ikigai's handover; it was ignored")]
    Foreign,
    /// The memfd could not be made, written, read or closed, or the binary not re-executed.
    /// Not retryable.
    #[error("cannot keep secrets out of ikigai's environment: {0}")]
    Io(String),
}

/// A variable's value, as `std::env::var` would give it before the handover: held secrets
/// first, then the environment block. `None` when unset or not UTF-8.
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

/// A variable's raw value (see `var`).
pub fn var_os(name: &str) -> Option<OsString> {
    let key = OsStr::new(name);
    held()
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os(name))
}

/// Every variable: the environment block (without the handover's own) and the held ones.
pub fn vars_os() -> Vec<(OsString, OsString)> {
    let mut all: Vec<(OsString, OsString)> = std::env::vars_os().filter(|(k, _)| k != HANDOVER_VAR).collect();
    all.extend(held().iter().cloned());
    all
}

/// How many variables are held outside the environment block.
pub fn held_count() -> usize {
    held().len()
}

/// In the re-executed image: reads the handed-over variables and closes the memfd. Marks
/// the process non-dumpable first, so no process of the same user can read the memfd
/// meanwhile. `Ok(false)` when there was no handover.
pub fn receive() -> Result<bool, HandoverError> {
    let Some(fd) = std::env::var_os(HANDOVER_VAR) else {
        return Ok(false);
    };
    let _ = nix::sys::prctl::set_dumpable(false);
    let fd: i32 = fd
        .to_str()
        .and_then(|s| s.parse().ok())
        .filter(|n| *n > 2)
        .ok_or(HandoverError::Foreign)?;
    let link = format!("/proc/self/fd/{fd}");
    let target = std::fs::read_link(&link).map_err(|_| HandoverError::Foreign)?;
    if !target
        .as_os_str()
        .as_bytes()
        .starts_with(format!("/memfd:{MEMFD_NAME}").as_bytes())
    {
        return Err(HandoverError::Foreign);
    }
    let bytes = std::fs::read(&link).map_err(|e| HandoverError::Io(format!("reading the handover: {e}")))?;
    nix::unistd::close(fd).map_err(|e| HandoverError::Io(format!("closing the handover: {e}")))?;
    let _ = HELD.set(decode(&bytes));
    Ok(true)
}

/// Re-executes this binary (same pid, same arguments) without the variables `is_secret`
/// names, handing their values over (see `receive`). Returns `Ok` without doing anything
/// when the environment block holds none of them; on success it does not return.
pub fn hide(is_secret: &dyn Fn(&str) -> bool) -> Result<(), HandoverError> {
    let (secret, kept): (Vec<_>, Vec<_>) = std::env::vars_os()
        .filter(|(k, _)| k != HANDOVER_VAR)
        .partition(|(k, _)| is_secret(&k.to_string_lossy()));
    if secret.is_empty() {
        return Ok(());
    }
    let io = |what: &str, e: &dyn std::fmt::Display| HandoverError::Io(format!("{what}: {e}"));
    let mut all: Vec<(OsString, OsString)> = held().to_vec();
    all.extend(secret);
    let fd = nix::sys::memfd::memfd_create(MEMFD_NAME, nix::sys::memfd::MFdFlags::empty())
        .map_err(|e| io("memfd_create", &e))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&encode(&all))
        .map_err(|e| io("writing the handover", &e))?;
    let cstring = |bytes: Vec<u8>| CString::new(bytes).map_err(|e| io("an argument holds a NUL byte", &e));
    let argv = std::env::args_os()
        .map(|a| cstring(a.into_vec()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut envp = Vec::with_capacity(kept.len() + 1);
    for (k, v) in kept {
        let mut entry = k.into_vec();
        entry.push(b'=');
        entry.extend(v.into_vec());
        envp.push(cstring(entry)?);
    }
    envp.push(cstring(
        format!("{HANDOVER_VAR}={}", file.as_raw_fd()).into_bytes(),
    )?);
    let exe = cstring(own_binary().into_os_string().into_vec())?;
    let err = nix::unistd::execve(&exe, &argv, &envp).map_or_else(|e| e, |never| match never {});
    drop(file);
    Err(io("re-executing ikigai", &err))
}

/// This binary by its own path when that still is this binary (so `ps` shows its name),
/// else `/proc/self/exe` (it was replaced or removed since it started).
fn own_binary() -> std::path::PathBuf {
    use std::os::unix::fs::MetadataExt;
    let me = std::path::PathBuf::from("/proc/self/exe");
    let same = |p: &std::path::Path| {
        let (Ok(a), Ok(b)) = (std::fs::metadata(p), std::fs::metadata(&me)) else {
            return false;
        };
        a.dev() == b.dev() && a.ino() == b.ino()
    };
    match std::env::current_exe() {
        Ok(p) if same(&p) => p,
        _ => me,
    }
}

/// `NAME\0VALUE\0` per variable.
fn encode(vars: &[(OsString, OsString)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in vars {
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

fn decode(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    let mut parts = bytes.split(|&b| b == 0);
    let mut out = Vec::new();
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        if k.is_empty() {
            break;
        }
        out.push((OsString::from_vec(k.to_vec()), OsString::from_vec(v.to_vec())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handover_format_round_trips_any_bytes() {
        let vars = vec![
            (OsString::from("A_KEY"), OsString::from("sk-1=2")),
            (OsString::from("EMPTY"), OsString::new()),
            (OsString::from("RAW"), OsString::from_vec(vec![0xff, b'x', b'\n'])),
        ];
        assert_eq!(decode(&encode(&vars)), vars);
        assert!(decode(b"").is_empty());
    }
}
