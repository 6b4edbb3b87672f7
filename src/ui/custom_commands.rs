//! Custom slash commands: Markdown files in the user's `~/.config/ikigai/commands/` and, in
//! a trusted folder, the project's `.ikigai/commands/` (`review.md` is `/review`). Loads
//! them (optional YAML front matter: `description`, `arguments` / `argument-hint`), lists
//! them for `/help` and completion, and expands one into the message it sends (`$ARGUMENTS`,
//! `$1`…`$9`). Never replaces a built-in command; a project command never replaces a user
//! one; project files must be regular files inside the project, and a project command's
//! message may attach (`@file`) only files inside the project, unless you typed the
//! mention yourself. Sends nothing itself.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::permissions::trust::State;

/// Command files larger than this are skipped.
const MAX_FILE: u64 = 256 * 1024;

/// Where a command comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    User,
    Project,
}

/// One loaded command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CustomCommand {
    /// With its slash: `/review`.
    pub name: String,
    pub description: String,
    /// What its arguments are (`FILE [FOCUS]`), shown by `/help`; may be empty.
    pub arguments: String,
    pub origin: Origin,
    body: String,
    /// A project command's project (its `@file` mentions must stay inside it).
    root: Option<PathBuf>,
}

/// Every loaded command, sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CustomCommands {
    list: Vec<CustomCommand>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct FrontMatter {
    description: Option<String>,
    #[serde(alias = "argument-hint")]
    arguments: Option<Arguments>,
}

/// `arguments: "FILE [FOCUS]"` or `arguments: [file, focus]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Arguments {
    Hint(String),
    Names(Vec<String>),
}

/// The user's command folder: `$XDG_CONFIG_HOME/ikigai/commands`, else
/// `~/.config/ikigai/commands`.
pub(crate) fn user_dir() -> Option<PathBuf> {
    let env = |k: &str| crate::environ::var(k);
    crate::paths::config_home(&env).map(|d| d.join("ikigai").join("commands"))
}

impl CustomCommands {
    /// The user's commands, and the project's when the folder whose settings apply in
    /// `cwd` (`paths::settings_root`: the repository's root from a subfolder) is trusted
    /// (the trust list is read now); notices say what was skipped.
    pub(crate) fn load(cwd: &Path) -> (Self, Vec<String>) {
        let root = crate::paths::settings_root(cwd, &|k| crate::environ::var(k));
        let trust = crate::permissions::trust::state(&root);
        Self::load_with(user_dir().as_deref(), &root, trust)
    }

    /// `load` with the user folder given, and whether the folder is trusted.
    #[cfg(test)]
    pub(crate) fn load_from(user: Option<&Path>, cwd: &Path, trusted: bool) -> (Self, Vec<String>) {
        let trust = if trusted {
            State::Trusted
        } else {
            State::NotTrusted
        };
        Self::load_with(user, cwd, trust)
    }

    /// `load` with the user folder and the trust state given.
    pub(crate) fn load_with(user: Option<&Path>, cwd: &Path, trust: State) -> (Self, Vec<String>) {
        let mut notices = Vec::new();
        let mut list: Vec<CustomCommand> = Vec::new();
        if let Some(dir) = user {
            for c in read_dir(dir, Origin::User, None, &mut notices) {
                add(&mut list, c, &mut notices);
            }
        }
        let project = cwd.join(".ikigai").join("commands");
        let files = md_files(&project);
        if !files.is_empty() {
            if trust == State::Trusted {
                let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
                for mut c in read_dir(&project, Origin::Project, Some(&root), &mut notices) {
                    c.root = Some(root.clone());
                    add(&mut list, c, &mut notices);
                }
            } else {
                let n = files.len();
                let why = if trust == State::Changed {
                    "this folder's ikigai settings changed since you trusted it; look at them, then \
                     `ikigai trust` trusts it again"
                } else {
                    "this folder is not trusted; `ikigai trust` trusts it"
                };
                notices.push(format!(
                    "{n} project command{} in {} not loaded: {why}",
                    if n == 1 { "" } else { "s" },
                    project.display()
                ));
            }
        }
        list.sort_by(|a, b| a.name.cmp(&b.name));
        (CustomCommands { list }, notices)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &CustomCommand> {
        self.list.iter()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.list.iter().find(|c| c.name == name)
    }

    /// The message `line` sends when it calls a custom command (`/review src/x.rs`), or
    /// why it is not sent (a project command attaching a file from outside the project).
    pub(crate) fn expand(&self, line: &str) -> Option<Result<String, String>> {
        let t = line.trim();
        let (name, args) = match t.split_once(char::is_whitespace) {
            Some((n, a)) => (n, a.trim()),
            None => (t, ""),
        };
        let c = self.get(name)?;
        let text = c.expand(args);
        Some(match c.attaches_from_outside(&text, args) {
            Some(why) => Err(why),
            None => Ok(text),
        })
    }

    /// `/help`'s section for them: one aligned line each (empty when there are none).
    pub(crate) fn help_text(&self) -> String {
        let rows = self.rows();
        let width = rows.iter().map(|(u, _)| u.chars().count()).max().unwrap_or(0);
        let mut out = String::new();
        if !rows.is_empty() {
            out.push_str("Custom commands:\n");
        }
        for (usage, what) in rows {
            out.push_str(&format!("{usage:<width$}  {what}\n"));
        }
        out
    }

    /// `(usage, description)` for each command.
    pub(crate) fn rows(&self) -> Vec<(String, String)> {
        self.list
            .iter()
            .map(|c| {
                let usage = if c.arguments.is_empty() {
                    c.name.clone()
                } else {
                    format!("{} {}", c.name, c.arguments)
                };
                let origin = match c.origin {
                    Origin::User => "user",
                    Origin::Project => "project",
                };
                let what = if c.description.is_empty() {
                    format!("({origin})")
                } else {
                    format!("{} ({origin})", c.description)
                };
                (usage, what)
            })
            .collect()
    }
}

impl CustomCommand {
    /// Why the message `text` (this project command called with `args`) may not be sent:
    /// it mentions a file outside the project (`@~/.ssh/id_rsa`, `@/etc/x`) that the user
    /// did not type as a mention in `args`. `None` for the user's own commands.
    fn attaches_from_outside(&self, text: &str, args: &str) -> Option<String> {
        let root = self.root.as_deref()?;
        let typed = crate::agent::mentions::from_outside(args, root);
        let foreign: Vec<String> = crate::agent::mentions::from_outside(text, root)
            .into_iter()
            .filter(|m| !typed.contains(m))
            .map(|m| format!("@{m}"))
            .collect();
        (!foreign.is_empty()).then(|| {
            format!(
                "{} not sent: this project command attaches {}, outside the project; a project's \
                 command attaches only files inside it (type the mention yourself to attach one)",
                self.name,
                foreign.join(", ")
            )
        })
    }

    /// The body with `$ARGUMENTS` (all of `args`) and `$1`…`$9` (its words; quotes group
    /// words) replaced. A body with no placeholder gets the arguments appended.
    pub(crate) fn expand(&self, args: &str) -> String {
        let words = split_args(args);
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut used = false;
        let mut rest = self.body.as_str();
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                used = true;
                rest = tail;
            } else if let Some(d) = after
                .chars()
                .next()
                .and_then(|c| c.to_digit(10))
                .filter(|d| *d >= 1)
            {
                out.push_str(words.get(d as usize - 1).map_or("", String::as_str));
                used = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        let mut out = out.trim().to_string();
        if !used && !args.is_empty() {
            out.push_str("\n\n");
            out.push_str(args);
        }
        out
    }
}

/// Words of `args`; `"two words"` and `'two words'` are one.
fn split_args(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(cur);
    }
    words
}

/// Adds `c` unless a built-in or an earlier command has its name.
fn add(list: &mut Vec<CustomCommand>, c: CustomCommand, notices: &mut Vec<String>) {
    let builtin = crate::ui::slash::COMMANDS.iter().any(|(n, _, _)| *n == c.name) || c.name == "/?";
    if builtin {
        notices.push(format!(
            "custom command {} not loaded: {} is a built-in command",
            c.name, c.name
        ));
    } else if list.iter().any(|o| o.name == c.name) {
        notices.push(format!(
            "project command {} not loaded: a user command has that name",
            c.name
        ));
    } else {
        list.push(c);
    }
}

/// The `*.md` files of `dir` (none when it is missing), sorted.
fn md_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

/// The commands in `dir`; with `inside`, each file must resolve to a regular file under it.
fn read_dir(
    dir: &Path,
    origin: Origin,
    inside: Option<&Path>,
    notices: &mut Vec<String>,
) -> Vec<CustomCommand> {
    let mut out = Vec::new();
    for path in md_files(dir) {
        match read_one(&path, origin, inside) {
            Ok(c) => out.push(c),
            Err(why) => notices.push(format!("command {} skipped: {why}", path.display())),
        }
    }
    out
}

fn read_one(path: &Path, origin: Origin, inside: Option<&Path>) -> Result<CustomCommand, String> {
    let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
        return Err("its name is not UTF-8".into());
    };
    if stem.is_empty()
        || !stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err("a command name has only letters, digits, `-` and `_`".into());
    }
    let real = path
        .canonicalize()
        .map_err(|e| format!("cannot resolve it ({e})"))?;
    if let Some(root) = inside
        && !real.starts_with(root)
    {
        return Err(format!("it leads outside the project, to {}", real.display()));
    }
    if ["/proc", "/sys", "/dev"].iter().any(|s| real.starts_with(s)) {
        return Err("it is a system file".into());
    }
    let meta = std::fs::metadata(&real).map_err(|e| format!("cannot read it ({e})"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_FILE {
        return Err(format!("it is larger than {} KB", MAX_FILE / 1024));
    }
    let text = std::fs::read_to_string(&real).map_err(|e| format!("cannot read it ({e})"))?;
    let (fm, body) = crate::front_matter::parse::<FrontMatter>(&text)?;
    let fm = fm.unwrap_or_default();
    if body.trim().is_empty() {
        return Err("it has no text to send".into());
    }
    let arguments = match fm.arguments {
        Some(Arguments::Hint(h)) => h,
        Some(Arguments::Names(n)) => n.iter().map(|a| format!("<{a}>")).collect::<Vec<_>>().join(" "),
        None => String::new(),
    };
    Ok(CustomCommand {
        name: format!("/{stem}"),
        description: fm.description.unwrap_or_default().trim().to_string(),
        arguments,
        origin,
        body: body.to_string(),
        root: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front_matter::split as split_front_matter;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn loads_both_folders_with_front_matter_and_never_over_a_builtin() {
        let home = tempfile::tempdir().unwrap();
        let user = home.path().join("user");
        let proj = home.path().join("proj");
        write(
            &user,
            "review.md",
            "---\ndescription: Review a file\narguments: FILE [FOCUS]\n---\nReview $1 for $2.\n",
        );
        write(&user, "help.md", "not used");
        write(&user, "bad name.md", "x");
        write(&user, "notes.txt", "x");
        let cmds = proj.join(".ikigai/commands");
        write(
            &cmds,
            "test.md",
            "---\narguments: [target]\n---\nRun the tests of $ARGUMENTS.",
        );
        write(&cmds, "review.md", "project review");
        write(&cmds, "model.md", "not used");
        let (c, notices) = CustomCommands::load_from(Some(&user), &proj, true);
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["/review", "/test"]);
        let review = c.get("/review").unwrap();
        assert_eq!(
            (review.description.as_str(), review.arguments.as_str()),
            ("Review a file", "FILE [FOCUS]")
        );
        assert_eq!(review.origin, Origin::User);
        assert_eq!(c.get("/test").unwrap().arguments, "<target>");
        assert!(
            notices.iter().any(|n| n.contains("/help is a built-in")),
            "{notices:?}"
        );
        assert!(
            notices.iter().any(|n| n.contains("/model is a built-in")),
            "{notices:?}"
        );
        assert!(
            notices.iter().any(|n| n.contains("a user command has that name")),
            "{notices:?}"
        );
        assert!(
            notices.iter().any(|n| n.contains("bad name.md skipped")),
            "{notices:?}"
        );
        assert!(
            c.help_text()
                .contains("/review FILE [FOCUS]  Review a file (user)"),
            "{}",
            c.help_text()
        );

        let (c, notices) = CustomCommands::load_from(Some(&user), &proj, false);
        assert!(c.get("/test").is_none());
        assert!(
            notices
                .iter()
                .any(|n| n.contains("3 project commands in") && n.contains("not trusted")),
            "{notices:?}"
        );
    }

    #[test]
    fn expands_arguments() {
        let c = CustomCommand {
            name: "/r".into(),
            description: String::new(),
            arguments: String::new(),
            origin: Origin::User,
            body: "Look at $1 ($2$3) — all: $ARGUMENTS; cost $ 5, $0.\n".into(),
            root: None,
        };
        assert_eq!(
            c.expand("a.rs \"two words\""),
            "Look at a.rs (two words) — all: a.rs \"two words\"; cost $ 5, $0."
        );
        let plain = CustomCommand {
            body: "Summarise the diff.".into(),
            ..c.clone()
        };
        assert_eq!(plain.expand(""), "Summarise the diff.");
        assert_eq!(plain.expand("briefly"), "Summarise the diff.\n\nbriefly");
        let cmds = CustomCommands { list: vec![c] };
        assert_eq!(
            cmds.expand("/r x").unwrap(),
            Ok("Look at x () — all: x; cost $ 5, $0.".to_string())
        );
        assert!(cmds.expand("/other").is_none());
    }

    #[test]
    fn a_project_command_leading_outside_or_with_bad_front_matter_is_skipped() {
        let home = tempfile::tempdir().unwrap();
        let proj = home.path().join("proj");
        let cmds = proj.join(".ikigai/commands");
        write(&cmds, "ok.md", "fine");
        write(&cmds, "empty.md", "---\ndescription: nothing\n---\n\n");
        write(&cmds, "broken.md", "---\ndescription: [unclosed\n---\nbody");
        write(home.path(), "outside.md", "secret");
        std::os::unix::fs::symlink(home.path().join("outside.md"), cmds.join("out.md")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", cmds.join("env.md")).unwrap();
        let (c, notices) = CustomCommands::load_from(None, &proj, true);
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["/ok"]);
        assert!(
            notices
                .iter()
                .any(|n| n.contains("out.md skipped: it leads outside")),
            "{notices:?}"
        );
        assert!(
            notices.iter().any(|n| n.contains("env.md skipped"))
                && notices
                    .iter()
                    .any(|n| n.contains("empty.md skipped: it has no text")),
            "{notices:?}"
        );
        assert!(
            notices
                .iter()
                .any(|n| n.contains("broken.md skipped: its front matter")),
            "{notices:?}"
        );
    }

    #[test]
    fn a_project_commands_mentions_stay_inside_unless_the_user_typed_them() {
        let home = tempfile::tempdir().unwrap();
        let proj = home.path().join("proj");
        let cmds = proj.join(".ikigai/commands");
        write(&proj, "in.rs", "x");
        write(&cmds, "key.md", "Review @~/.ssh/id_rsa and @in.rs.");
        write(&cmds, "abs.md", "Review @/etc/hostname.");
        write(&cmds, "arg.md", "Review @~/$1.");
        write(
            &cmds,
            "fenced.md",
            "Look:\n```\n@/etc/hostname\n```\nand `@~/.ssh/id_rsa`.",
        );
        write(&cmds, "in.md", "Review @in.rs");
        let (c, _) = CustomCommands::load_from(None, &proj, true);
        let refused = |line: &str| c.expand(line).unwrap().err().unwrap_or_default();
        assert!(refused("/key").contains("/key not sent: this project command attaches @~/.ssh/id_rsa,"));
        assert!(refused("/abs").contains("@/etc/hostname"));
        assert!(refused("/arg .ssh/id_rsa").contains("@~/.ssh/id_rsa"));
        // Text in code is no mention; inside the project, or typed by the user: sent.
        assert!(c.expand("/fenced").unwrap().is_ok());
        assert!(c.expand("/in").unwrap().is_ok());
        assert!(c.expand("/in @/etc/hostname").unwrap().is_ok());
        assert!(
            c.expand("/arg x @~/.ssh/id_rsa").unwrap().is_err(),
            "$1 is not the typed mention"
        );
        // The user's own commands attach what they name.
        let user = home.path().join("user");
        write(&user, "mine.md", "Review @~/.ssh/id_rsa.");
        let (c, _) = CustomCommands::load_from(Some(&user), &proj, false);
        assert!(c.expand("/mine").unwrap().is_ok());
        // A trusted folder whose settings changed: not loaded, and said why.
        let (c, notices) = CustomCommands::load_with(None, &proj, State::Changed);
        assert!(c.get("/key").is_none());
        assert!(
            notices.iter().any(|n| n.contains("changed since you trusted it")),
            "{notices:?}"
        );
    }

    #[test]
    fn front_matter_is_optional() {
        assert_eq!(split_front_matter("just text"), (None, "just text"));
        assert_eq!(
            split_front_matter("---\na: 1\n---\nbody"),
            (Some("a: 1\n"), "body")
        );
        assert_eq!(split_front_matter("---\nno end"), (None, "---\nno end"));
    }
}
