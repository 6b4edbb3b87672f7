#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn skill(dir: &Path, folder: &str, text: &str) {
    std::fs::create_dir_all(dir.join(folder)).unwrap();
    std::fs::write(dir.join(folder).join("SKILL.md"), text).unwrap();
}

fn ok(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nDo it the {name} way.\n")
}

#[test]
fn the_user_s_and_a_trusted_project_s_three_folders_are_read_in_order() {
    let t = tempfile::tempdir().unwrap();
    let user = t.path().join("user");
    let root = t.path().join("proj");
    skill(&user, "u", &ok("u-skill", "the user's"));
    skill(&root.join(".ikigai/skills"), "a", &ok("ik", "ikigai's"));
    // Claude Code's format: extra fields, a folded description, a file beside it.
    skill(
        &root.join(".claude/skills"),
        "pdf",
        "---\nname: pdf\ndescription: >\n  Extract text from PDF files.\n  Use when the user mentions PDFs.\nallowed-tools: Read, Grep\n---\n# PDF\nRun scripts/extract.py.\n",
    );
    std::fs::write(root.join(".claude/skills/pdf/extract.py"), "print()").unwrap();
    skill(
        &root.join(".agents/skills"),
        "z",
        &ok("agents", "the agents folder's"),
    );
    // A folder without SKILL.md and a plain file are not skills, and no notice.
    std::fs::create_dir_all(root.join(".claude/skills/empty")).unwrap();
    std::fs::write(root.join(".claude/skills/README.md"), "x").unwrap();
    let (s, notices) = Skills::load(Some(&user), &root, true);
    assert!(notices.is_empty(), "{notices:?}");
    let got: Vec<(&str, String)> = s.iter().map(|s| (s.name.as_str(), s.source.label())).collect();
    assert_eq!(
        got,
        [
            ("u-skill", "user".to_string()),
            ("ik", "project .ikigai/skills".to_string()),
            ("pdf", "project .claude/skills".to_string()),
            ("agents", "project .agents/skills".to_string()),
        ]
    );
    let pdf = s.get("pdf").unwrap();
    assert_eq!(
        pdf.description,
        "Extract text from PDF files. Use when the user mentions PDFs."
    );
    assert_eq!(pdf.body, "# PDF\nRun scripts/extract.py.");
    assert_eq!(pdf.dir, root.join(".claude/skills/pdf").canonicalize().unwrap());
    assert!(pdf.block().contains(&format!("folder=\"{}\"", pdf.dir.display())));

    // Untrusted: only the user's, and one notice naming what was left out.
    let (s, notices) = Skills::load(Some(&user), &root, false);
    assert_eq!(s.names(), "u-skill");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("3 project skills in") && notices[0].contains(".claude/skills/pdf"),
        "{notices:?}"
    );
    assert_eq!(in_project(&root).len(), 3);
}

#[test]
fn a_bad_skill_file_is_skipped_with_its_reason_and_the_others_load() {
    let t = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    skill(outside.path(), "secret", &ok("secret", "outside the project"));
    let root = t.path().join("proj");
    let place = root.join(".ikigai/skills");
    let huge = format!(
        "---\nname: huge\ndescription: d\n---\n{}",
        "x".repeat(MAX_FILE as usize)
    );
    let cases: Vec<(&str, String, &str)> = vec![
        ("plain", "Just text, no front matter.".into(), "no front matter"),
        ("noname", "---\ndescription: d\n---\nbody".into(), "no `name`"),
        (
            "nodesc",
            "---\nname: nodesc\n---\nbody".into(),
            "no `description`",
        ),
        (
            "empty",
            "---\nname: empty\ndescription: d\n---\n  \n".into(),
            "no instructions",
        ),
        (
            "badyaml",
            "---\nname: [\n---\nbody".into(),
            "front matter is not valid",
        ),
        (
            "list",
            "---\n- a\n- b\n---\nbody".into(),
            "front matter is not valid",
        ),
        (
            "spaces",
            "---\nname: two words\ndescription: d\n---\nbody".into(),
            "not a skill name",
        ),
        (
            "dollar",
            "---\nname: $x\ndescription: d\n---\nbody".into(),
            "not a skill name",
        ),
        (
            "long",
            format!("---\nname: {}\ndescription: d\n---\nbody", "n".repeat(65)),
            "not a skill name",
        ),
        ("huge", huge, "larger than 64 KB"),
        ("good", ok("good", "fine"), ""),
        ("twin", ok("good", "the same name"), "already loaded"),
    ];
    for (folder, text, _) in &cases {
        skill(&place, folder, text);
    }
    // A skill folder, and a SKILL.md, that lead out of the project.
    std::os::unix::fs::symlink(outside.path().join("secret"), place.join("zlinkdir")).unwrap();
    std::fs::create_dir_all(place.join("zlinkfile")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret/SKILL.md"),
        place.join("zlinkfile/SKILL.md"),
    )
    .unwrap();
    // A SKILL.md that is a folder, one that is a device.
    std::fs::create_dir_all(place.join("zdir/SKILL.md")).unwrap();
    std::fs::create_dir_all(place.join("zdev")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", place.join("zdev/SKILL.md")).unwrap();
    let (s, notices) = Skills::load(None, &root, true);
    assert_eq!(s.names(), "good", "{notices:?}");
    let mut expected: Vec<(String, &str)> = cases
        .iter()
        .filter(|(_, _, why)| !why.is_empty())
        .map(|(f, _, why)| (format!("{f}/SKILL.md"), *why))
        .collect();
    expected.extend([
        ("zdev/SKILL.md".to_string(), "leads outside the project"),
        ("zdir/SKILL.md".to_string(), "not a regular file"),
        ("zlinkdir/SKILL.md".to_string(), "leads outside the project"),
        ("zlinkfile/SKILL.md".to_string(), "leads outside the project"),
    ]);
    expected.sort();
    assert_eq!(notices.len(), expected.len(), "{notices:#?}");
    for (n, (file, why)) in notices.iter().zip(&expected) {
        assert!(
            n.contains(file.as_str()) && n.contains(why),
            "{n} should say {file}: {why}"
        );
    }
    // The user's own skills may live anywhere (a link to a shared folder), not in /dev.
    let user = t.path().join("user");
    std::fs::create_dir_all(&user).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), user.join("shared")).unwrap();
    std::fs::create_dir_all(user.join("dev")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", user.join("dev/SKILL.md")).unwrap();
    let (s, notices) = Skills::load(Some(&user), t.path(), true);
    assert_eq!(s.names(), "secret");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("system file"), "{notices:?}");
}

fn many(n: usize, description: &str) -> Skills {
    Skills::from_list(
        (0..n)
            .map(|i| Skill {
                name: format!("skill-{i:02}"),
                description: one_line(description),
                body: "b".into(),
                dir: PathBuf::from("/x"),
                source: Source::User,
            })
            .collect(),
    )
}

#[test]
fn the_listing_is_one_line_per_skill_within_its_caps() {
    assert_eq!(Skills::default().listing(), "", "no skills, no bytes");
    let few = many(3, "Formats code the team's way.");
    let l = few.listing();
    assert!(
        l.contains("`skill` tool") && l.contains("- skill-02: Formats code the team's way.\n"),
        "{l}"
    );
    assert!(!l.contains("More skills"), "{l}");
    // Long descriptions are cut; however many skills, the listing stays within its caps.
    for (n, description) in [
        (20, "d".repeat(1000)),
        (500, "word ".repeat(80)),
        (20, "short".into()),
    ] {
        let l = many(n, &description).listing();
        assert!(l.len() < LIST_CAP + NAMES_CAP + 400, "{n}: {}", l.len());
        assert!(
            l.lines().all(|line| line.chars().count() < MAX_DESCRIPTION + 80),
            "{l}"
        );
        let listed = l.matches("skill-").count();
        let counted: usize = l
            .split("- And ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .map_or(0, |n| n.parse().unwrap());
        assert_eq!(
            listed + counted,
            n,
            "every skill is described, named or counted: {l}"
        );
    }
}

#[test]
fn dollar_name_names_a_known_skill_as_a_word_of_its_own() {
    let s = many(3, "d");
    let names = |text: &str| -> Vec<String> { s.mentioned(text).iter().map(|s| s.name.clone()).collect() };
    assert_eq!(names("use $skill-01 please"), ["skill-01"]);
    assert_eq!(
        names("$skill-02, then $skill-00 and $skill-02 again"),
        ["skill-02", "skill-00"]
    );
    assert_eq!(names("($skill-01)"), ["skill-01"]);
    for none in [
        "no dollar",
        "$skill-0",        // a prefix of a name
        "$skill-011",      // a longer word
        "a$skill-01",      // inside a word
        "$$skill-01",      // a shell's pid
        "$HOME and $PATH", // shell variables
        "$",
        "skill-01",
    ] {
        assert!(names(none).is_empty(), "{none}");
    }
}
