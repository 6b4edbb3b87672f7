//! The descriptor-relative operations against every way a path can lead elsewhere: a
//! folder that is a link (absolute, relative, pointing inside, a loop, a magic link of
//! `/proc`), `..` and `.`, a path outside the anchor, a link or a hard link where a file
//! is replaced or removed, a FIFO where a file is read.

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::change::Keep;
use super::{Anchors, Error, Folder, Kind};

/// A project `proj` and a folder `out` beside it, canonical; `out` holds `victim`.
fn place() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (proj, out) = (base.join("proj"), base.join("out"));
    fs::create_dir_all(proj.join("real")).unwrap();
    fs::create_dir(&out).unwrap();
    fs::write(out.join("victim"), "outside\n").unwrap();
    (dir, proj, out)
}

/// Every entry under `dir` with what it holds (links by their target, never followed).
fn tree(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let m = fs::symlink_metadata(&p).unwrap();
        if m.file_type().is_symlink() {
            out.push((p.clone(), format!("-> {}", fs::read_link(&p).unwrap().display())));
        } else if m.is_dir() {
            out.push((p.clone(), "dir".into()));
            out.extend(tree(&p));
        } else {
            out.push((p.clone(), fs::read_to_string(&p).unwrap_or_default()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_folder_that_is_a_link_is_never_followed_whatever_it_points_to() {
    let (_d, proj, out) = place();
    let before = tree(&out);
    symlink(&out, proj.join("abs")).unwrap();
    symlink("../out", proj.join("rel")).unwrap();
    // Even a link that stays inside the project: the path was resolved without it.
    symlink("real", proj.join("inside")).unwrap();
    symlink(proj.join("real"), proj.join("inside-abs")).unwrap();
    symlink(format!("/proc/self/root{}", out.display()), proj.join("magic")).unwrap();
    symlink("loop", proj.join("loop")).unwrap();
    symlink("nowhere", proj.join("dangling")).unwrap();
    let anchor = Folder::anchor(&proj).unwrap();
    for link in ["abs", "rel", "inside", "inside-abs", "magic", "loop", "dangling"] {
        for create in [false, true] {
            for rest in ["f", "new/f"] {
                let path = proj.join(link).join(rest);
                match anchor.locate(&path, create) {
                    Err(Error::Link(p)) => assert_eq!(p, proj.join(link), "{link}/{rest}"),
                    other => panic!("{link}/{rest} (create {create}): {other:?}"),
                }
            }
        }
    }
    // A link deeper down, under a real folder.
    symlink(&out, proj.join("real/deep")).unwrap();
    assert!(matches!(
        anchor.locate(&proj.join("real/deep/f"), true),
        Err(Error::Link(_))
    ));
    // From the root too, and through /proc's magic links.
    let root = Folder::root().unwrap();
    assert!(matches!(
        root.locate(&proj.join("abs/f"), true),
        Err(Error::Link(_))
    ));
    let magic = PathBuf::from(format!("/proc/self/root{}/f", out.display()));
    assert!(
        matches!(root.locate(&magic, true), Err(Error::Link(_))),
        "/proc/self is a link"
    );
    assert_eq!(tree(&out), before, "nothing outside was created or changed");
}

#[test]
fn only_plain_absolute_paths_beneath_the_anchor_are_located() {
    let (_d, proj, out) = place();
    let anchor = Folder::anchor(&proj).unwrap();
    for path in [
        proj.join("real/../../out/victim"),
        PathBuf::from("real/f"),
        out.join("victim"),
        proj.clone(),
        proj.join(".."),
    ] {
        assert!(
            matches!(anchor.locate(&path, true), Err(Error::NotResolved { .. })),
            "{}",
            path.display()
        );
    }
    assert!(matches!(
        anchor.walk(Path::new("../out"), false),
        Err(Error::NotResolved { .. })
    ));
    assert!(matches!(
        anchor.walk(Path::new("/etc"), false),
        Err(Error::NotResolved { .. })
    ));
    // A `.` inside a path is no component at all (`Path` drops it).
    let (folder, name) = anchor.locate(&proj.join("./real/./f"), false).unwrap();
    assert_eq!(
        (folder.path.as_path(), name.as_os_str()),
        (proj.join("real").as_path(), OsStr::new("f"))
    );
    assert!(matches!(
        anchor.locate(&proj.join("missing/f"), false),
        Err(Error::Missing(_))
    ));
    fs::write(proj.join("file"), "x").unwrap();
    assert!(matches!(
        anchor.locate(&proj.join("file/f"), true),
        Err(Error::NotFolder(_))
    ));
}

#[test]
fn missing_folders_are_made_but_never_through_a_link_put_in_their_place() {
    let (_d, proj, out) = place();
    let anchor = Folder::anchor(&proj).unwrap();
    let (folder, name) = anchor.locate(&proj.join("a/b/c/f.txt"), true).unwrap();
    folder.replace(&name, b"made\n", Keep::default()).unwrap();
    assert_eq!(fs::read_to_string(proj.join("a/b/c/f.txt")).unwrap(), "made\n");
    // The folder a write would make exists already, as a link out: not followed.
    symlink(&out, proj.join("a/b/new")).unwrap();
    assert!(matches!(
        anchor.locate(&proj.join("a/b/new/f"), true),
        Err(Error::Link(_))
    ));
    assert!(!out.join("f").exists());
}

#[test]
fn replace_puts_the_name_in_place_never_what_a_link_or_hard_link_leads_to() {
    let (_d, proj, out) = place();
    let anchor = Folder::anchor(&proj).unwrap();
    let folder = anchor.walk(Path::new("real"), false).unwrap();
    // A link to a file outside, and a hard link to one: the name is replaced.
    symlink(out.join("victim"), proj.join("real/link")).unwrap();
    fs::write(out.join("hard"), "outside\n").unwrap();
    fs::hard_link(out.join("hard"), proj.join("real/hard")).unwrap();
    for name in ["link", "hard"] {
        folder
            .replace(OsStr::new(name), b"new\n", Keep::default())
            .unwrap();
        let p = proj.join("real").join(name);
        assert!(fs::symlink_metadata(&p).unwrap().is_file(), "{name}");
        assert_eq!(fs::read_to_string(&p).unwrap(), "new\n");
    }
    assert_eq!(fs::read_to_string(out.join("victim")).unwrap(), "outside\n");
    assert_eq!(fs::read_to_string(out.join("hard")).unwrap(), "outside\n");
    assert_eq!(fs::metadata(out.join("hard")).unwrap().nlink(), 1);

    // The mode is set exactly (past the umask); a new file gets 0666 less the umask.
    let keep = Keep {
        mode: Some(0o750),
        owner: None,
    };
    folder.replace(OsStr::new("x"), b"x", keep).unwrap();
    assert_eq!(fs::metadata(proj.join("real/x")).unwrap().mode() & 0o7777, 0o750);
    folder.replace(OsStr::new("y"), b"y", Keep::default()).unwrap();
    assert_ne!(fs::metadata(proj.join("real/y")).unwrap().mode() & 0o777, 0o600);

    // Over a folder the rename fails: the temporary file goes too.
    fs::create_dir(proj.join("real/full")).unwrap();
    fs::write(proj.join("real/full/keep"), "k").unwrap();
    assert!(folder.replace(OsStr::new("full"), b"z", Keep::default()).is_err());
    folder
        .replace_with_link(OsStr::new("l2"), OsStr::new("/etc/passwd"))
        .unwrap();
    assert_eq!(
        fs::read_link(proj.join("real/l2")).unwrap(),
        Path::new("/etc/passwd")
    );
    let temps: Vec<_> = tree(&proj)
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains(".ikigai-"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}

#[test]
fn open_read_does_not_follow_a_link_nor_open_a_fifo() {
    let (_d, proj, out) = place();
    let folder = Folder::anchor(&proj).unwrap();
    symlink(out.join("victim"), proj.join("link")).unwrap();
    assert!(matches!(
        folder.open_read(OsStr::new("link")),
        Err(Error::Link(_))
    ));
    nix::unistd::mkfifo(
        &proj.join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let (mut f, st) = folder.open_read(OsStr::new("fifo")).unwrap().unwrap();
    assert_eq!(Kind::of(&st), Kind::Other);
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "", "a FIFO is not opened (nor waited on)");
    fs::write(proj.join("f"), "text").unwrap();
    let (mut f, st) = folder.open_read(OsStr::new("f")).unwrap().unwrap();
    assert_eq!(Kind::of(&st), Kind::File);
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "text");
    assert!(folder.open_read(OsStr::new("gone")).unwrap().is_none());
}

#[test]
fn removing_a_tree_or_a_name_never_reaches_through_a_link() {
    let (_d, proj, out) = place();
    fs::create_dir(out.join("dir")).unwrap();
    fs::write(out.join("dir/kept"), "k").unwrap();
    let before = tree(&out);
    let t = proj.join("t");
    fs::create_dir_all(t.join("sub/deeper")).unwrap();
    fs::write(t.join("sub/deeper/a"), "a").unwrap();
    symlink(out.join("dir"), t.join("sub/dirlink")).unwrap();
    symlink(out.join("victim"), t.join("filelink")).unwrap();
    let folder = Folder::anchor(&proj).unwrap();
    folder.remove_tree(OsStr::new("t")).unwrap();
    assert!(!t.exists());
    // Removing a link removes the link.
    symlink(out.join("victim"), proj.join("l")).unwrap();
    folder.remove_file(OsStr::new("l")).unwrap();
    folder.remove_file(OsStr::new("l")).unwrap();
    assert_eq!(tree(&out), before);
}

#[test]
fn empty_parents_go_up_to_the_base_and_never_through_a_link() {
    let (_d, proj, out) = place();
    fs::create_dir_all(proj.join("a/b/c")).unwrap();
    fs::create_dir(out.join("empty")).unwrap();
    let anchors = Anchors::new(Some(&proj)).unwrap();
    anchors.remove_empty_parents(&proj.join("a/b/c/gone.txt"));
    assert!(!proj.join("a").exists() && proj.exists());
    // A link to an empty folder outside, on the way up: neither it nor its target goes.
    symlink(out.join("empty"), proj.join("l")).unwrap();
    anchors.remove_empty_parents(&proj.join("l/gone.txt"));
    assert!(out.join("empty").is_dir());
    assert!(fs::symlink_metadata(proj.join("l")).is_ok());
    // A path outside the base is left alone.
    anchors.remove_empty_parents(&out.join("empty/gone.txt"));
    assert!(out.join("empty").is_dir());
    // A path outside the base is located from `/`, still without links.
    symlink(&out, proj.join("real/out")).unwrap();
    assert!(anchors.locate(&out.join("victim"), false).is_ok());
    assert!(matches!(
        anchors.locate(&proj.join("real/out/victim"), false),
        Err(Error::Link(_))
    ));
    let mode = fs::metadata(&proj).unwrap().permissions().mode();
    assert_ne!(mode, 0, "the base itself is never removed");
}
