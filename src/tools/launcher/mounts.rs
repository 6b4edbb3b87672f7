//! The sandbox's private mount table (Linux). One process per ikigai — the launcher in its
//! holding mode — builds it once: a mount namespace of its own (inside a user namespace
//! that maps the user to itself, unless it may create one directly, as root may) in which
//! every mount is read-only except bind mounts of the writable folders, and `/dev/pts` is a
//! devpts instance of its own; then it waits, keeping the namespace alive, until ikigai
//! closes its stdin (or dies). Each sandboxed tool's launcher joins that namespace before
//! Landlock (a `setns`, cheap; building and tearing down a namespace per call would cost a
//! tool call milliseconds), checking by inode that it is the one ikigai named. A read-only
//! mount refuses every change of metadata — `chmod`, `chown`, `utimes`, extended
//! attributes, links — whatever the path or descriptor form, which Landlock (up to ABI 6)
//! does not cover; the private devpts leaves the terminal ikigai runs in out of reach.
//! Landlock then forbids the tool to change mounts, root included. Nothing here is seen
//! outside: the mounts are private. Self-contained (std, nix), like `exec.rs`;
//! decides nothing.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, setns, unshare};

use super::Namespace;

/// What the holder writes on stdout once the mount table is ready.
pub(crate) const READY: &str = "ready";

/// One line of `/proc/self/mountinfo`: where the mount is and its per-mount flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mount {
    pub(crate) point: PathBuf,
    /// The per-mount flags a bind remount must carry again (a user namespace may not clear
    /// the ones it inherited locked): `nosuid`, `nodev`, `noexec`, the atime mode,
    /// `nosymfollow`; and `ro`.
    pub(crate) flags: MsFlags,
}

/// The holding mode: builds the private mount table for `writable`, says `ready` on stdout
/// (or why not on stderr, exit 1), then keeps it until stdin ends. Returns the exit code.
pub(crate) fn hold(writable: &[PathBuf]) -> u8 {
    if let Err(e) = isolate(writable) {
        eprintln!("{e}");
        return 1;
    }
    let mut out = std::io::stdout();
    if writeln!(out, "{READY}").and_then(|()| out.flush()).is_err() {
        return 1;
    }
    // Returns at the end of stdin (ikigai closed it, or is gone).
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    0
}

/// Joins the private mount table `ns` (and its user namespace), then finds the working
/// directory again by its path (joining a mount namespace moves it to the root).
pub(crate) fn join(ns: &Namespace) -> Result<(), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let open = |kind: &str, ino: u64| -> Result<std::fs::File, String> {
        let path = format!("/proc/{}/ns/{kind}", ns.pid);
        let f = std::fs::File::open(&path)
            .map_err(|e| format!("the private mount table is gone ({path}: {e})"))?;
        match f.metadata() {
            Ok(m) if m.ino() == ino => Ok(f),
            _ => Err(format!("{path} is not the private mount table ikigai made")),
        }
    };
    // Both checked before anything changes.
    let user = ns.user.map(|ino| open("user", ino)).transpose()?;
    let mnt = open("mnt", ns.mnt)?;
    if let Some(user) = user {
        setns(user, CloneFlags::CLONE_NEWUSER)
            .map_err(|e| format!("cannot enter the user namespace: {e}"))?;
    }
    setns(mnt, CloneFlags::CLONE_NEWNS).map_err(|e| format!("cannot enter the private mount table: {e}"))?;
    std::env::set_current_dir(&cwd).map_err(|e| format!("cannot enter {}: {e}", cwd.display()))
}

/// Gives this process a private mount table in which only `writable` (absolute, canonical)
/// and what lies beneath them can be changed, with a devpts of its own.
fn isolate(writable: &[PathBuf]) -> Result<(), String> {
    enter()?;
    // Nothing done here propagates back out, and nothing mounted outside later comes in
    // (a mount arriving after the read-only pass would be writable).
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    if writable.iter().any(|w| w == Path::new("/")) {
        // Everything is writable: nothing to make read-only (and a bind over `/` would not
        // be this process's root).
        return devpts();
    }
    for root in writable {
        mount(
            Some(root.as_path()),
            root.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("cannot bind {}: {e}", root.display()))?;
    }
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read the mount table: {e}"))?;
    for m in parse(&table) {
        let inside = writable.iter().any(|w| m.point.starts_with(w));
        let flags = if inside {
            // Writable, but no device and no set-user-ID program works from there.
            (m.flags - MsFlags::MS_RDONLY) | MsFlags::MS_NOSUID | MsFlags::MS_NODEV
        } else {
            m.flags | MsFlags::MS_RDONLY
        };
        match remount(&m.point, flags) {
            Ok(()) => {}
            // A mount this process cannot reach by its path (beneath a folder it may not
            // search, or hidden under another mount) is out of the tool's reach too.
            Err(Errno::EACCES | Errno::ENOENT) => {}
            Err(e) => return Err(format!("cannot make {} read-only: {e}", m.point.display())),
        }
    }
    devpts()
}

/// A mount namespace of our own: directly with the right to (root), else inside a new user
/// namespace in which we are ourselves (same uid and gid; supplementary groups show as
/// `nogroup`).
fn enter() -> Result<(), String> {
    if unshare(CloneFlags::CLONE_NEWNS).is_ok() {
        return Ok(());
    }
    let (uid, gid) = (nix::unistd::geteuid(), nix::unistd::getegid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("user namespaces are not available here ({e})"))?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}

fn remount(point: &Path, flags: MsFlags) -> Result<(), Errno> {
    mount(
        None::<&str>,
        point,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | flags,
        None::<&str>,
    )
}

/// A devpts instance of our own on `/dev/pts` (pseudo-terminals the tool opens work; the
/// one ikigai's terminal lives in is hidden). `/dev/ptmx` opens the instance beside it.
fn devpts() -> Result<(), String> {
    if !Path::new("/dev/pts").is_dir() {
        return Ok(());
    }
    mount(
        Some("devpts"),
        "/dev/pts",
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
    .map_err(|e| format!("cannot mount a private /dev/pts: {e}"))
}

/// The mounts of a `mountinfo` text, in order, with the flags a remount keeps.
pub(crate) fn parse(table: &str) -> Vec<Mount> {
    table
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let point = fields.nth(4)?;
            let options = fields.next()?;
            Some(Mount {
                point: PathBuf::from(unescape(point)),
                flags: flags(options),
            })
        })
        .collect()
}

/// The per-mount option list (`rw,nosuid,nodev,relatime`) as mount flags.
fn flags(options: &str) -> MsFlags {
    let mut f = MsFlags::empty();
    let mut atime = false;
    for o in options.split(',') {
        match o {
            "ro" => f |= MsFlags::MS_RDONLY,
            "nosuid" => f |= MsFlags::MS_NOSUID,
            "nodev" => f |= MsFlags::MS_NODEV,
            "noexec" => f |= MsFlags::MS_NOEXEC,
            "noatime" => {
                f |= MsFlags::MS_NOATIME;
                atime = true;
            }
            "relatime" => {
                f |= MsFlags::MS_RELATIME;
                atime = true;
            }
            "nodiratime" => f |= MsFlags::MS_NODIRATIME,
            "nosymfollow" => f |= nosymfollow(),
            _ => {}
        }
    }
    // Neither noatime nor relatime: strict atime, which a remount must ask for by name
    // (it defaults to relatime).
    if !atime {
        f |= MsFlags::MS_STRICTATIME;
    }
    f
}

/// `MS_NOSYMFOLLOW` (Linux 5.10), which nix does not name.
fn nosymfollow() -> MsFlags {
    MsFlags::from_bits_retain(nix::libc::MS_NOSYMFOLLOW)
}

/// A mountinfo path with its octal escapes (`\040` for a space) decoded.
fn unescape(s: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(
                    d.iter()
                        .fold(0u8, |n, c| n.wrapping_mul(8).wrapping_add(c - b'0')),
                );
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_the_point_and_the_flags_a_remount_keeps() {
        let table = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                     23 22 0:5 / /dev rw,nosuid,noexec shared:2 - devtmpfs udev rw\n\
                     24 22 0:21 / /mnt/my\\040disk ro,nodev,noatime,nodiratime - vfat /dev/sdb1 ro\n\
                     25 22 0:22 / /sym rw,nosymfollow - tmpfs t rw\n";
        let m = parse(table);
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].point, Path::new("/"));
        assert_eq!(m[0].flags, MsFlags::MS_RELATIME);
        assert_eq!(
            m[1].flags,
            MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC | MsFlags::MS_STRICTATIME
        );
        assert_eq!(m[2].point, Path::new("/mnt/my disk"));
        assert_eq!(
            m[2].flags,
            MsFlags::MS_RDONLY | MsFlags::MS_NODEV | MsFlags::MS_NOATIME | MsFlags::MS_NODIRATIME
        );
        assert_eq!(m[3].flags, nosymfollow() | MsFlags::MS_STRICTATIME);
        assert!(parse("garbage\n").is_empty());
    }

    #[test]
    fn octal_escapes_decode_and_other_backslashes_stay() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(unescape("/a\\040b\\011c\\134d").as_bytes(), b"/a b\tc\\d");
        assert_eq!(unescape("/x\\9y\\").as_bytes(), b"/x\\9y\\");
    }
}
