use super::*;
use crate::permissions::getopt::Spec;
use crate::permissions::shell::analyse;

fn ro(cmd: &str) -> bool {
    let a = analyse(cmd);
    a.opaque.is_none()
        && a.writes.is_empty()
        && a.unseen_redirect.is_none()
        && a.parts.iter().all(is_read_only_part)
}

#[test]
fn the_list_reads() {
    for yes in [
        "ls -la",
        "ls --color=never -1 src",
        "cat README.md | head -n 5",
        "head -5 a",
        "grep -rn foo src | wc -l",
        "grep -C3 -e x --include='*.rs' .",
        "rg TODO",
        "rg -n --hidden -g '*.rs' fn src",
        "find . -name '*.rs' -type f -print",
        "find src -maxdepth 2 -newermt 2024-01-01 ! -path './target/*'",
        "git status",
        "git status -uno --porcelain=v1",
        "git diff HEAD~1",
        "git diff --stat --cached -- src",
        "git log --oneline | head",
        "git log -n 5 --format=%H --author=me",
        "git -P show --stat HEAD",
        "git --no-pager log -3",
        "git branch --show-current",
        "git branch -a",
        "git tag -l 'v*'",
        "git rev-parse --show-toplevel",
        "git ls-files -z",
        "git blame -L 1,10 src/main.rs",
        "sort a.txt",
        "sort -k2,2n -t, a.csv",
        "sort -u a b | uniq -c",
        "uniq in",
        "wc -l src/*.rs",
        "sed -n 1,20p README.md",
        "sed 's/a/b/g' f",
        "date +%s",
        "echo hi",
        "printf '%s\\n' a b",
        "test -f x && echo yes",
        "[ -d src ]",
        "diff -u a b",
        "stat -c %s f",
        "tr a-z A-Z < f",
        "cat < f",
        "true",
    ] {
        assert!(ro(yes), "{yes}");
    }
}

#[test]
fn an_option_not_on_the_list_an_abbreviation_or_a_run_time_word_is_not_read_only() {
    for no in [
        // Seen: a repository program as the compressor, `--out` as getopt's `--output`.
        "sort --compress-program=./evil.sh a",
        "sort --out=/root/.bashrc a",
        "sort --outp=x a",
        "sort -o out a",
        "sort -uo out /dev/null",
        "sort -T /tmp a",
        "tree -o out",
        "tree -xo pwned",
        "rg --pre ./x foo",
        "rg --pre=./x foo",
        "rg -z foo",
        "rg --search-zip foo",
        "rg --hostname-bin=./x foo",
        "file -C -m x",
        "file -z x",
        "diff -l a b",
        "find . -delete",
        "find . -exec rm {} ;",
        "find . -execdir id ;",
        "find . -fprint out",
        "find . -fls out",
        "find . -ok id ;",
        "find . -newerXY x",
        "git push",
        "git -c core.pager=x log",
        "git -C /tmp status",
        "git --git-dir=/tmp/x status",
        "git diff --output=x",
        "git diff --out=x",
        "git diff --ext-diff",
        "git log --textconv",
        "git grep -O foo",
        "git grep --open-files-in-pager=vi foo",
        "git branch new-branch",
        "git branch -D main",
        "git tag v1",
        "git remote show origin",
        "git difftool -x rm",
        "git stash",
        "date -s 2020-01-01",
        "date 010100002030",
        "uniq in out",
        "sed -i s/a/b/ f",
        "sed 1e f",
        "sed 's/a/b/w out' f",
        "printf -v PATH %s .evil",
        "printf -vx y",
        "test -v 'a[1]'",
        "ls --dired=x",
        "head --bytes",
        // A word decided when it runs may be any option.
        "sort $X a",
        "sort \"$X\" a",
        "sort *",
        "git log $X",
        "find . $X",
        "cat $(echo -A)",
        "ls > listing.txt",
        "cat < $F",
        "cat < ${PATH/*//dev}/tcp/127.0.0.1/9",
        "PAGER=x git log",
        "LANG=C ls",
        "./ls",
        "/bin/ls",
        "cat x | sh",
        "xargs cat",
        "env ls",
        "awk '{print}' f",
    ] {
        assert!(!ro(no), "{no}");
    }
}

#[test]
fn every_spec_in_the_tables_is_well_formed() {
    for (name, spec) in table::COMMANDS {
        assert!(Spec::well_formed(spec), "{name}: {spec}");
    }
    // A name appears once.
    let mut names = names();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before);
}

/// The README lists the same commands as the table.
#[test]
fn the_readme_lists_every_read_only_command() {
    let readme = include_str!("../../../README.md");
    let start = readme.find("The built-in read-only commands").expect("section");
    let section = &readme[start..start + 6000.min(readme.len() - start)];
    for name in names() {
        assert!(
            section.contains(&format!("`{name}`")),
            "{name} is not in the README"
        );
    }
}
