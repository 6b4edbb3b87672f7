//! The property of the permission decision, tested on random bash lines built from the
//! grammar's constructs (words, quoting, expansions, pipes, redirections, substitutions,
//! compound commands, wrappers, builtins, text fed to shells) with `deny = ["bash(rm *)"]`
//! in force: a line that runs `rm` — wherever the generator put it — is never allowed;
//! a line that is allowed was fully understood and none of its parts matches the rule;
//! and an allowed line, run by the real bash in a scratch folder, leaves the file
//! `victim` in place. The generator knows by construction whether a line runs `rm`.
//! Deterministic (a seeded xorshift); `IKIGAI_PROPERTY_CASES` and `IKIGAI_PROPERTY_SEED`
//! run more or other lines.

use super::decide::{Policy, Rules, Verdict};
use super::mode::Mode;
use super::rule::{Rule, Source};
use super::shell::analyse;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A generated command and whether it runs `rm` (anywhere it may execute).
struct Gen {
    text: String,
    rm: bool,
    /// A single simple command (wrappers and prefixes apply to it).
    simple: bool,
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Harmless commands (run for real in the live check).
const HARMLESS: [&str; 14] = [
    "ls",
    "ls -la",
    "echo hi",
    "cat f",
    "true",
    "wc -l f",
    "grep -n x f",
    "sort f",
    "head -n 1 f",
    "echo rm -rf victim",
    "printf '%s\\n' rm",
    "echo $HOME",
    "cat *.txt",
    "git --version",
];

/// `rm -rf victim` in every spelling that runs it.
const RM: [&str; 22] = [
    "rm -rf victim",
    "'rm' -rf victim",
    "r\\m -rf victim",
    "\"r\"m -rf victim",
    "/bin/rm -rf victim",
    "\\rm -rf victim",
    "$'\\x72m' -rf victim",
    "{rm,-rf,victim}",
    "/bin/r? -rf victim",
    "${X:-rm} -rf victim",
    "$(echo rm) -rf victim",
    "`echo rm` -rf victim",
    "rm -rf $(echo victim)",
    "rm -rf \"$V\"victim",
    "rm -rf vict*",
    "rm -r -f victim",
    "command rm -rf victim",
    "\"$(printf rm)\" -rf victim",
    "r''m -rf victim",
    "/usr/bin/rm -rf victim",
    "rm -rf ./victim",
    "rm -rf -- victim",
];

/// Wrappers that run the command after them.
const WRAPPERS: [&str; 14] = [
    "env",
    "env -u Y",
    "env A=1",
    "env -i",
    "nice -n 1",
    "timeout 5",
    "command",
    "time",
    "time -p",
    "stdbuf -o0",
    "setsid -w",
    "exec",
    "builtin command",
    "strace -f -o /dev/null",
];

fn leaf(rng: &mut Rng) -> Gen {
    if rng.below(3) == 0 {
        Gen {
            text: rng.pick(&RM).to_string(),
            rm: true,
            simple: true,
        }
    } else {
        Gen {
            text: rng.pick(&HARMLESS).to_string(),
            rm: false,
            simple: true,
        }
    }
}

fn command(rng: &mut Rng, depth: usize) -> Gen {
    if depth == 0 {
        return leaf(rng);
    }
    let a = command(rng, depth - 1);
    match rng.below(26) {
        0 => {
            let b = command(rng, depth - 1);
            g(format!("{}; {}", a.text, b.text), a.rm || b.rm)
        }
        1 => {
            let b = command(rng, depth - 1);
            g(format!("{} && {}", a.text, b.text), a.rm || b.rm)
        }
        2 => {
            let b = command(rng, depth - 1);
            g(format!("{} || {}", a.text, b.text), a.rm || b.rm)
        }
        3 => {
            let b = command(rng, depth - 1);
            g(format!("{} | {}", a.text, b.text), a.rm || b.rm)
        }
        4 => g(format!("({})", a.text), a.rm),
        5 => g(format!("{{ {}; }}", a.text), a.rm),
        6 => g(format!("if true; then {}; fi", a.text), a.rm),
        7 => g(format!("for i in 1; do {}; done", a.text), a.rm),
        8 => g(format!("echo \"$({})\"", a.text), a.rm),
        9 => g(format!("diff <({}) f", a.text), a.rm),
        10 => g(format!("{} > out 2>&1", a.text), a.rm),
        11 => g(format!("x=$({}); echo $x", a.text), a.rm),
        12 => g(format!("bash -c {}", quote(&a.text)), a.rm),
        13 => g(format!("echo {} | bash", quote(&a.text)), a.rm),
        14 => g(format!("bash <<< {}", quote(&a.text)), a.rm),
        15 => g(format!("eval {}", quote(&a.text)), a.rm),
        16 => g(format!("bash <<'EOF'\n{}\nEOF", a.text), a.rm),
        17 => g(format!("trap {} EXIT", quote(&a.text)), a.rm),
        18 => g(format!("f() {{ {}; }}; f", a.text), a.rm),
        19 => g(format!("source <(echo {})", quote(&a.text)), a.rm),
        20 if a.simple => {
            let w = rng.pick(&WRAPPERS);
            Gen {
                text: format!("{w} {}", a.text),
                rm: a.rm,
                simple: true,
            }
        }
        21 if a.simple => Gen {
            text: format!("LANG=C {}", a.text),
            rm: a.rm,
            simple: true,
        },
        22 => g(format!("echo {}", quote(&a.text)), false),
        23 => g(format!("grep -n {} f", quote(&a.text)), false),
        24 => g(format!("cat <<'EOF'\n{}\nEOF", a.text), false),
        25 if a.simple => g(format!("echo victim | xargs {}", a.text), a.rm),
        _ => g(format!("sh -c {}", quote(&a.text)), a.rm),
    }
}

fn g(text: String, rm: bool) -> Gen {
    Gen {
        text,
        rm,
        simple: false,
    }
}

fn cases() -> usize {
    std::env::var("IKIGAI_PROPERTY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500)
}

fn seed() -> u64 {
    std::env::var("IKIGAI_PROPERTY_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0042)
}

#[test]
fn no_line_that_runs_rm_is_allowed_with_a_deny_rule_and_every_allowed_line_was_understood() {
    let dir = tempfile::tempdir().unwrap();
    let deny = Rule::parse("bash(rm *)", Source::User, None).unwrap();
    let policy = Policy::new(
        Rules {
            deny: vec![deny.clone()],
            ..Rules::default()
        },
        dir.path(),
    );
    let mut rng = Rng(seed());
    let mut allowed: Vec<String> = Vec::new();
    let (mut harmless, mut harmless_allowed) = (0usize, 0usize);
    for _ in 0..cases() {
        let depth = 1 + rng.below(3);
        let line = command(&mut rng, depth);
        let args = serde_json::json!({ "command": line.text }).to_string();
        for mode in [Mode::Auto, Mode::Ask] {
            let d = policy.decide(mode, "bash", &args);
            if line.rm {
                assert_ne!(
                    d.verdict,
                    Verdict::Allow,
                    "{mode}: `{}` runs rm but was allowed",
                    line.text
                );
            }
            if d.verdict == Verdict::Allow {
                let a = analyse(&line.text);
                assert!(a.opaque.is_none(), "allowed but opaque: `{}`", line.text);
                assert!(
                    !a.parts
                        .iter()
                        .chain(&a.maybe)
                        .any(|p| deny.matches_command(&p.text)),
                    "allowed although a part matches: `{}`",
                    line.text
                );
            }
        }
        if !line.rm {
            harmless += 1;
            if policy.decide(Mode::Auto, "bash", &args).verdict == Verdict::Allow {
                harmless_allowed += 1;
                allowed.push(line.text);
            }
        }
    }
    // Not vacuous: most lines that do not run rm still run.
    assert!(
        harmless_allowed * 2 > harmless,
        "only {harmless_allowed} of {harmless} harmless lines were allowed"
    );
    live(&allowed);
}

/// Runs allowed lines in real bash next to a file `victim`: it must survive every one.
fn live(lines: &[String]) {
    let limit = (cases() / 10).max(50);
    for line in lines.iter().take(limit) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("victim"), "x").unwrap();
        std::fs::write(d.path().join("f"), "x\n").unwrap();
        let status = std::process::Command::new("bash")
            .arg("-c")
            .arg(line)
            .current_dir(d.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        assert!(status.is_ok(), "bash did not start");
        assert!(
            d.path().join("victim").exists(),
            "the allowed line `{line}` deleted victim"
        );
    }
}
