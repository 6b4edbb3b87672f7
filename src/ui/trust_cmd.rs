//! `ikigai trust [DIR]`, `--list`, `--revoke [DIR]`: the printing front end of
//! `permissions::trust`. Results go to stdout, remarks to stderr; paths are shown with
//! control characters made visible. Returns its own error; `app.rs` converts it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::TrustArgs;
use crate::permissions::trust::{Revoked, Store, TrustError, Trusted};
use crate::text::visible;

/// Why `ikigai trust` failed.
#[derive(Debug, thiserror::Error)]
pub enum TrustCmdError {
    /// The store could not be read or written, or the folder is not one. Not retryable.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// Writing the answer failed. Not retryable.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

fn shown(p: &Path) -> String {
    visible(&p.display().to_string()).into_owned()
}

/// Runs the subcommand; returns the exit code: 0 when done, 1 when there was nothing to
/// revoke.
pub fn run(args: &TrustArgs) -> Result<u8, TrustCmdError> {
    let store = Store::default_location()?;
    let mut out = std::io::stdout().lock();
    if args.list {
        let list = store.list()?;
        if list.is_empty() {
            eprintln!("No folder is trusted; `ikigai trust DIR` trusts one.");
        }
        for e in list {
            writeln!(out, "{}  (since {})", shown(&e.path), visible(&e.since))?;
        }
        return Ok(0);
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        // The folder whose settings apply here: a repository's root from a subfolder.
        None => crate::paths::settings_root(&std::env::current_dir()?, &|k| crate::environ::var(k)),
    };
    if args.revoke {
        return Ok(match store.revoke(&dir)? {
            Revoked::Removed(p) => {
                writeln!(out, "No longer trusted: {}", shown(&p))?;
                0
            }
            Revoked::Through(e) => {
                eprintln!(
                    "ikigai: {} is trusted through {}; `ikigai trust --revoke {}` revokes that",
                    shown(&dir),
                    shown(&e.path),
                    shown(&e.path)
                );
                1
            }
            Revoked::NotTrusted(p) => {
                eprintln!("ikigai: {} is not trusted", shown(&p));
                1
            }
        });
    }
    let trusted = store.trust(&dir)?;
    let pinned = pinned(&dir);
    match trusted {
        Trusted::Added(p) => {
            writeln!(
                out,
                "Trusted: {} and every folder under it. ikigai now runs its project tools \
                 (.ikigai/tools) and reads its project settings.\n\
                 `ikigai trust --revoke {}` undoes it.",
                shown(&p),
                shown(&p)
            )?;
            if is_broad(&p) {
                eprintln!(
                    "ikigai: note: {} holds many projects; every repository under it is now trusted",
                    shown(&p)
                );
            }
        }
        Trusted::Already(e) if same(&e.path, &dir) => {
            writeln!(
                out,
                "Already trusted: {} (since {})",
                shown(&e.path),
                visible(&e.since)
            )?;
        }
        Trusted::Already(e) => {
            writeln!(
                out,
                "Already trusted through {} (since {})",
                shown(&e.path),
                visible(&e.since)
            )?;
        }
    }
    if !pinned.is_empty() {
        writeln!(
            out,
            "Its settings run these project files, trusted as they are now (a change stops \
             them until you trust again): {}",
            visible(&pinned.join(", "))
        )?;
    }
    Ok(0)
}

/// The project files `dir`'s settings run (`scripts/mcp.sh (MCP server helper)`).
fn pinned(dir: &Path) -> Vec<String> {
    let reached = crate::permissions::reach::reached(dir);
    crate::permissions::pin::covered(dir, &reached)
        .into_iter()
        .filter(|c| !c.starts_with(".ikigai/"))
        .collect()
}

fn same(a: &Path, b: &Path) -> bool {
    b.canonicalize().is_ok_and(|b| b == a)
}

/// The root or the home folder: trusting it trusts everything of the user.
fn is_broad(p: &Path) -> bool {
    let home = crate::environ::var("HOME").map(PathBuf::from);
    p == Path::new("/") || home.and_then(|h| h.canonicalize().ok()).is_some_and(|h| h == p)
}
