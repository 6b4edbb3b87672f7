#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

#[test]
fn types_load_in_claude_code_s_format_and_bad_files_are_told() {
    let t = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "x.md", "---\nname: x\ndescription: d\n---\nP");
    let user = t.path().join("user");
    let root = t.path().join("proj");
    let place = root.join(PROJECT_DIR);
    write(
        &user,
        "code-reviewer.md",
        "---\nname: code-reviewer\ndescription: Expert code review. Use after\n  writing code.\ntools: Read, Grep, Glob\nmodel: inherit\n---\nYou are a senior reviewer.\n",
    );
    write(
        &place,
        "explorer.md",
        "---\nname: explorer\ndescription: Finds things\ntools: [file_read, grep]\nmodel: small-model\nmax_tool_turns: 5\ntimeout_secs: 30\n---\nFind it.\n",
    );
    write(&place, "nofront.md", "just a prompt");
    write(&place, "noname.md", "---\ndescription: d\n---\nP");
    write(&place, "nodesc.md", "---\nname: nodesc\n---\nP");
    write(
        &place,
        "twin.md",
        "---\nname: explorer\ndescription: again\n---\nP",
    );
    write(
        &place,
        "bad name.md",
        "---\nname: bad name\ndescription: d\n---\nP",
    );
    std::os::unix::fs::symlink(outside.path().join("x.md"), place.join("zlink.md")).unwrap();
    write(&place, "notes.txt", "not a type");
    let (types, notices) = AgentTypes::load(Some(&user), &root, true);
    assert_eq!(types.names(), "code-reviewer, explorer", "{notices:?}");
    let r = types.get("code-reviewer").unwrap();
    assert_eq!(r.description, "Expert code review. Use after writing code.");
    assert_eq!(
        r.tools.as_deref(),
        Some(&["Read".to_string(), "Grep".into(), "Glob".into()][..])
    );
    assert_eq!((r.model.as_deref(), r.source), (None, Source::User));
    assert_eq!(r.prompt, "You are a senior reviewer.");
    let e = types.get("explorer").unwrap();
    assert_eq!(
        e.tools.as_deref(),
        Some(&["file_read".to_string(), "grep".into()][..])
    );
    assert_eq!(
        (e.model.as_deref(), e.max_tool_turns, e.timeout_secs),
        (Some("small-model"), Some(5), Some(30))
    );
    let expected = [
        ("bad name.md", "is not a name"),
        ("nodesc.md", "no `description`"),
        ("nofront.md", "no front matter"),
        ("noname.md", "no `name`"),
        ("twin.md", "already loaded"),
        ("zlink.md", "leads outside the project"),
    ];
    assert_eq!(notices.len(), expected.len(), "{notices:#?}");
    for (n, (file, why)) in notices.iter().zip(expected) {
        assert!(n.contains(file) && n.contains(why), "{n}: {file} {why}");
    }
    // Untrusted: the user's only, and one notice.
    let (types, notices) = AgentTypes::load(Some(&user), &root, false);
    assert_eq!(types.names(), "code-reviewer");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains(".ikigai/agents/explorer.md"), "{notices:?}");
}
