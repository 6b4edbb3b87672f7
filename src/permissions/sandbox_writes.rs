//! The sandbox's write rule for the tools that write inside ikigai's own process
//! (`file_write`, `file_edit`): Landlock confines only tool processes, so these tools ask
//! here first. A path is resolved as the write would reach it (symlinks of its existing
//! part followed, `..` applied, a missing tail placed under its nearest existing
//! ancestor) and checked against the very roots the launcher gives a tool process
//! (`Confinement::writable`, by `sandbox_denials::writable`), so both agree. The place
//! judged is the place written: the tool then reaches it without following any link
//! (`crate::beneath`), so a folder swapped for a link after the check fails the write
//! instead of moving it. Decides and words the denial; never writes, never prints.

use std::path::{Component, Path, PathBuf};

use super::sandbox_denials;
use crate::policy::confinement::Confinement;

/// How many symbolic links one path may go through (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Whether `c` lets ikigai write for a tool where `path` (absolute, as given) led when it
/// was resolved: `real` (`resolve`), which is what is judged — the file tools then write at
/// exactly `real` (`crate::beneath`), so nothing swapped in since can move the write.
/// `Err` is what the model reads, worded like a command's denial (`sandbox: write
/// outside the workspace denied: …`).
pub(crate) fn check_resolved(c: &Confinement, real: &Path, path: &Path) -> Result<(), String> {
    if sandbox_denials::writable(c, real) {
        return Ok(());
    }
    let shown = if real == sandbox_denials::normalize(path) {
        real.display().to_string()
    } else {
        format!("{} (as {})", real.display(), path.display())
    };
    Err(sandbox_denials::denied_write(c, &shown))
}

/// Where a write to `path` (absolute) lands: every existing component is followed
/// through its symbolic links (a dangling link leads to its target, which the write would
/// create); `..` goes to the real parent; a component that does not exist yet, and what
/// follows it, is taken as written. `None` past `MAX_LINKS` links (a loop).
pub(crate) fn resolve(path: &Path) -> Option<PathBuf> {
    // A path that exists whole: the kernel's own answer, in one call.
    if path.is_absolute()
        && let Ok(real) = path.canonicalize()
    {
        return Some(real);
    }
    resolve_from(PathBuf::from("/"), path, 0)
}

fn resolve_from(mut out: PathBuf, path: &Path, links: usize) -> Option<PathBuf> {
    for comp in path.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir => out = PathBuf::from("/"),
            Component::CurDir => {}
            // `out` is always real (no links, no `..`), so its parent is the real parent.
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                let next = out.join(name);
                out = match next.canonicalize() {
                    Ok(real) => real,
                    Err(_) => match std::fs::read_link(&next) {
                        // A dangling link (or a loop): follow it by hand, counting.
                        Ok(target) if links < MAX_LINKS => {
                            let base = out.clone();
                            resolve_from(base, &target, links + 1)?
                        }
                        Ok(_) => return None,
                        // Not there yet: created by the write, beneath `out`.
                        Err(_) => next,
                    },
                };
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// Whether `c` lets ikigai write `path` (absolute) for a tool: `Err` is what the model
    /// reads, worded like a command's denial (`sandbox: write outside the workspace denied:
    /// …`).
    fn check(c: &Confinement, path: &Path) -> Result<(), String> {
        match resolve(path) {
            Some(real) => check_resolved(c, &real, path),
            None => {
                let shown = format!("{} (too many symbolic links to resolve)", path.display());
                Err(sandbox_denials::denied_write(c, &shown))
            }
        }
    }

    /// A project `proj`, a writable root `root` and a folder `out` outside both, canonical.
    fn place() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (proj, root, out) = (base.join("proj"), base.join("root"), base.join("out"));
        for d in [&proj, &root, &out] {
            std::fs::create_dir(d).unwrap();
        }
        (dir, proj, root, out)
    }

    fn workspace(proj: &Path, root: &Path) -> Confinement {
        Confinement {
            mode: "workspace-write".into(),
            writable: vec![proj.to_path_buf(), root.to_path_buf()],
            network: false,
            tmpdir: None,
            ..Confinement::default()
        }
    }

    #[test]
    fn a_missing_tail_resolves_through_its_nearest_existing_ancestor() {
        let (_d, proj, _root, out) = place();
        symlink(&out, proj.join("link")).unwrap();
        assert_eq!(
            resolve(&proj.join("new/deeper/x.txt")).unwrap(),
            proj.join("new/deeper/x.txt")
        );
        assert_eq!(
            resolve(&proj.join("link/new/x.txt")).unwrap(),
            out.join("new/x.txt")
        );
        // `..` after a link goes to the link target's parent, as the kernel goes.
        let base = proj.parent().unwrap();
        assert_eq!(resolve(&proj.join("link/../x")).unwrap(), base.join("x"));
        assert_eq!(resolve(&proj.join("missing/../../out/x")).unwrap(), out.join("x"));
        assert_eq!(resolve(&proj.join("./a/./b")).unwrap(), proj.join("a/b"));
    }

    #[test]
    fn links_are_followed_dangling_ones_to_what_the_write_would_create() {
        let (_d, proj, _root, out) = place();
        std::fs::write(out.join("victim"), "x").unwrap();
        symlink(out.join("victim"), proj.join("file-link")).unwrap();
        symlink(out.join("not-yet"), proj.join("dangling")).unwrap();
        symlink("../out", proj.join("relative")).unwrap();
        assert_eq!(resolve(&proj.join("file-link")).unwrap(), out.join("victim"));
        assert_eq!(resolve(&proj.join("dangling")).unwrap(), out.join("not-yet"));
        assert_eq!(resolve(&proj.join("relative/y")).unwrap(), out.join("y"));
        symlink(proj.join("loop-b"), proj.join("loop-a")).unwrap();
        symlink(proj.join("loop-a"), proj.join("loop-b")).unwrap();
        assert_eq!(resolve(&proj.join("loop-a/x")), None);
    }

    #[test]
    fn workspace_write_allows_the_roots_and_denies_the_rest_by_where_it_lands() {
        let (_d, proj, root, out) = place();
        symlink(&out, proj.join("link")).unwrap();
        let c = workspace(&proj, &root);
        for ok in [
            proj.join("a.txt"),
            proj.join("new/dir/a.txt"),
            root.join("r.txt"),
            proj.join("link/../proj/a.txt"),
            PathBuf::from("/dev/null"),
        ] {
            assert_eq!(check(&c, &ok), Ok(()), "{}", ok.display());
        }
        for (denied, names) in [
            (out.join("x"), out.join("x")),
            (proj.join("../out/x"), out.join("x")),
            (proj.join("link/x"), out.join("x")),
            (proj.join("link/new/x"), out.join("new/x")),
        ] {
            let e = check(&c, &denied).unwrap_err();
            assert!(
                e.starts_with("sandbox: write outside the workspace denied: ")
                    && e.contains(names.to_str().unwrap())
                    && e.contains("sandbox = \"workspace-write\" allows writes only in")
                    && e.contains(proj.to_str().unwrap()),
                "{e}"
            );
        }
        let e = check(&c, &proj.join("link/x")).unwrap_err();
        assert!(
            e.contains(&format!("(as {})", proj.join("link/x").display())),
            "{e}"
        );
    }

    #[test]
    fn read_only_denies_the_project_and_allows_its_private_folder() {
        let (_d, proj, root, _out) = place();
        let c = Confinement {
            mode: "read-only".into(),
            writable: vec![root.clone()],
            network: false,
            tmpdir: Some(root.clone()),
            ..Confinement::default()
        };
        let e = check(&c, &proj.join("a.txt")).unwrap_err();
        assert!(
            e.starts_with("sandbox: write denied (read-only sandbox): "),
            "{e}"
        );
        assert_eq!(check(&c, &root.join("scratch")), Ok(()));
    }

    #[test]
    fn a_file_tools_decision_pins_the_place_it_judged_in_every_mode() {
        use crate::permissions::{Mode, Policy, Rules};
        use crate::policy::Pinned;
        let (_d, proj, _root, out) = place();
        symlink(&out, proj.join("link")).unwrap();
        symlink("loop", proj.join("loop")).unwrap();
        let policy = Policy::new(Rules::default(), &proj);
        let cases = [
            (
                "file_write",
                Some("a/new.txt"),
                "a/new.txt",
                Some(proj.join("a/new.txt")),
            ),
            ("file_edit", Some("link/x"), "link/x", Some(out.join("x"))),
            ("file_read", Some("loop/x"), "loop/x", None),
            ("list_dir", None, ".", Some(proj.clone())),
            ("grep", Some("link/../proj"), "link/../proj", Some(proj.clone())),
        ];
        for mode in [Mode::Auto, Mode::Ask, Mode::ReadOnly] {
            for (tool, path, given, real) in &cases {
                let args = match path {
                    Some(p) => serde_json::json!({ "path": p }),
                    None => serde_json::json!({}),
                };
                let d = policy.decide(mode, tool, &args.to_string());
                let want = Pinned {
                    given: (*given).to_string(),
                    real: real.clone(),
                };
                assert_eq!(d.pinned, Some(want), "{mode:?} {tool}");
            }
            let d = policy.decide(mode, "bash", r#"{"command":"ls"}"#);
            assert_eq!(d.pinned, None);
        }
    }
}
