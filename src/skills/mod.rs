//! Skills: folders holding a `SKILL.md` (YAML front matter `name` and `description`, then
//! the instructions; other files beside it) in the user's `~/.config/ikigai/skills/` and,
//! in a trusted project (`paths::settings_root`), its `.ikigai/skills/`, `.claude/skills/`
//! and `.agents/skills/`. Loads and checks them once (a bad file is skipped with a notice),
//! writes the short listing the system prompt carries (name and one line each, within a
//! total cap: progressive disclosure), finds the skills a prompt names (`$NAME`) and
//! formats a skill's body for the model. Reads files; runs nothing; never decides trust
//! (the caller says whether the project is trusted) and never prints.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::front_matter::{is_name_byte, valid_name};

#[cfg(test)]
mod tests;

/// `SKILL.md` files larger than this are skipped (a skill is read whole into the context).
pub const MAX_FILE: u64 = 64 * 1024;
/// A skill's description in the listing is cut to this many characters (~60 tokens).
pub const MAX_DESCRIPTION: usize = 250;
/// The listing's described lines stop at this many bytes; later skills are named only.
pub const LIST_CAP: usize = 1_350;
/// The names-only tail of the listing stops at this many bytes; the rest are counted.
pub const NAMES_CAP: usize = 250;
/// Skill folders read at most from one place.
const MAX_PER_PLACE: usize = 200;

/// Where a skill was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The user's `~/.config/ikigai/skills/`.
    User,
    /// A project folder, relative to the project: `.ikigai/skills`, `.claude/skills`,
    /// `.agents/skills`.
    Project(&'static str),
}

/// The project's skill folders, in the order they are read.
pub const PROJECT_DIRS: [&str; 3] = [".ikigai/skills", ".claude/skills", ".agents/skills"];

impl Source {
    /// How `/skills` names it: `user`, `project .claude/skills`.
    pub fn label(self) -> String {
        match self {
            Source::User => "user".to_string(),
            Source::Project(dir) => format!("project {dir}"),
        }
    }
}

/// One loaded skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// One line, cut to `MAX_DESCRIPTION` characters.
    pub description: String,
    /// The instructions (the file after its front matter), trimmed.
    pub body: String,
    /// The folder holding its `SKILL.md` (the files beside it are read from there).
    pub dir: PathBuf,
    pub source: Source,
}

impl Skill {
    /// The skill as the model gets it with a prompt that names it (`$NAME`, `/skill`).
    pub fn block(&self) -> String {
        format!(
            "<skill name=\"{}\" folder=\"{}\">\n{}\n</skill>",
            self.name,
            self.dir.display(),
            self.body
        )
    }
}

/// Why a skill was not loaded (told once, as a notice).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SkillError {
    #[error("it leads outside the project, to {0}")]
    OutsideProject(PathBuf),
    #[error("it is a system file")]
    SystemFile,
    #[error("it is not a regular file")]
    NotAFile,
    #[error("cannot read it ({0})")]
    Unreadable(String),
    #[error("it is larger than {} KB", MAX_FILE / 1024)]
    TooLarge,
    #[error("it has no front matter (a first line `---`, then `name:` and `description:`, then `---`)")]
    NoFrontMatter,
    #[error("{0}")]
    BadFrontMatter(String),
    #[error("its front matter has no `name`")]
    NoName,
    #[error("its front matter has no `description`")]
    NoDescription,
    #[error("its name `{0}` is not a skill name (letters, digits, `-` and `_`, at most 64)")]
    BadName(String),
    #[error("it has no instructions after its front matter")]
    NoBody,
    #[error("a skill named `{0}` was already loaded from {1}")]
    Duplicate(String, PathBuf),
}

#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// Every loaded skill, in the order found: the user's, then the project's folders in
/// `PROJECT_DIRS` order, each folder's skills by folder name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skills {
    list: Vec<Skill>,
}

/// The user's skill folder: `$XDG_CONFIG_HOME/ikigai/skills`, else `~/.config/ikigai/skills`.
pub fn user_dir() -> Option<PathBuf> {
    let env = |k: &str| crate::environ::var(k);
    crate::paths::config_home(&env).map(|d| d.join("ikigai").join("skills"))
}

/// The skill folders (each holding a `SKILL.md`) of the project folder `root`, for the
/// trust question: `.claude/skills/review`, one relative path each.
pub fn in_project(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for rel in PROJECT_DIRS {
        for dir in skill_dirs(&root.join(rel)) {
            if let Some(name) = dir.file_name() {
                out.push(format!("{rel}/{}", name.to_string_lossy()));
            }
        }
    }
    out
}

/// The folders of `place` holding a `SKILL.md`, each where it really is (links
/// followed): what loading `place` reads, for the trust digest.
pub fn real_folders(place: &Path) -> Vec<PathBuf> {
    skill_dirs(place)
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .collect()
}

impl Skills {
    /// The user's skills (from `user`), and the project's in `root` when `trusted`;
    /// notices say what was skipped and why (an untrusted project's skills are counted).
    pub fn load(user: Option<&Path>, root: &Path, trusted: bool) -> (Self, Vec<String>) {
        let mut notices = Vec::new();
        let mut list: Vec<Skill> = Vec::new();
        if let Some(dir) = user {
            read_place(dir, Source::User, None, &mut list, &mut notices);
        }
        let project = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if trusted {
            for rel in PROJECT_DIRS {
                let dir = root.join(rel);
                read_place(
                    &dir,
                    Source::Project(rel),
                    Some(&project),
                    &mut list,
                    &mut notices,
                );
            }
        } else {
            let found = in_project(root);
            if !found.is_empty() {
                let n = found.len();
                notices.push(format!(
                    "{n} project skill{} in {} not loaded ({}): this folder is not trusted \
                     (or its settings changed since it was); `ikigai trust` trusts it",
                    if n == 1 { "" } else { "s" },
                    root.display(),
                    found.join(", ")
                ));
            }
        }
        (Skills { list }, notices)
    }

    /// Skills given as they are (tests, and callers that built them).
    pub fn from_list(list: Vec<Skill>) -> Self {
        Skills { list }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.list.iter()
    }

    /// The skill of that name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.list.iter().find(|s| s.name == name)
    }

    /// Every name, comma-separated (what an unknown name is answered with).
    pub fn names(&self) -> String {
        self.list
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What the system prompt carries: a paragraph naming the `skill` tool, then
    /// `- name: description` per skill while `LIST_CAP` lasts, then the rest by name
    /// while `NAMES_CAP` lasts, then how many more. Empty when there are none (the prompt
    /// is then the bytes it was without skills).
    pub fn listing(&self) -> String {
        if self.list.is_empty() {
            return String::new();
        }
        let mut out =
            String::from("\nSkills (before a task one fits, call the `skill` tool with its name):\n");
        let mut used = 0;
        let mut rest = self.list.iter().peekable();
        while let Some(s) = rest.peek() {
            let line = format!("- {}: {}\n", s.name, s.description);
            if used + line.len() > LIST_CAP {
                break;
            }
            used += line.len();
            out.push_str(&line);
            rest.next();
        }
        let mut names = Vec::new();
        let mut len = 0;
        while let Some(s) = rest.peek() {
            if len + s.name.len() + 2 > NAMES_CAP {
                break;
            }
            len += s.name.len() + 2;
            names.push(s.name.as_str());
            rest.next();
        }
        if !names.is_empty() {
            out.push_str(&format!("- More skills, by name: {}\n", names.join(", ")));
        }
        let more = rest.count();
        if more > 0 {
            out.push_str(&format!(
                "- And {more} more (a `skill` call with an unknown name lists every name)\n"
            ));
        }
        out
    }

    /// The skills `text` names as `$NAME` (a word of its own, a known skill's name), each
    /// once, in the order named.
    pub fn mentioned(&self, text: &str) -> Vec<&Skill> {
        let mut out: Vec<&Skill> = Vec::new();
        let bytes = text.as_bytes();
        for (i, _) in text.match_indices('$') {
            let before_ok = i == 0 || !is_name_byte(bytes[i - 1]) && bytes[i - 1] != b'$';
            if !before_ok {
                continue;
            }
            let rest = &text[i + 1..];
            let end = rest.bytes().position(|b| !is_name_byte(b)).unwrap_or(rest.len());
            let name = &rest[..end];
            if let Some(s) = self.get(name)
                && !out.iter().any(|o| o.name == s.name)
            {
                out.push(s);
            }
        }
        out
    }
}

/// The folders of `place` that hold a `SKILL.md`, by name (at most `MAX_PER_PLACE`).
fn skill_dirs(place: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(place) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p.join("SKILL.md")).is_ok())
        .collect();
    dirs.sort();
    dirs.truncate(MAX_PER_PLACE);
    dirs
}

/// Reads the skills of one place into `list`; `inside`: each must resolve into it.
fn read_place(
    place: &Path,
    source: Source,
    inside: Option<&Path>,
    list: &mut Vec<Skill>,
    notices: &mut Vec<String>,
) {
    for dir in skill_dirs(place) {
        let file = dir.join("SKILL.md");
        let result =
            read_one(&dir, source, inside).and_then(|s| match list.iter().find(|o| o.name == s.name) {
                Some(o) => Err(SkillError::Duplicate(s.name, o.dir.join("SKILL.md"))),
                None => Ok(s),
            });
        match result {
            Ok(s) => list.push(s),
            Err(why) => notices.push(format!("skill {} not loaded: {why}", file.display())),
        }
    }
}

/// One skill folder's `SKILL.md`, checked.
fn read_one(dir: &Path, source: Source, inside: Option<&Path>) -> Result<Skill, SkillError> {
    let file = dir.join("SKILL.md");
    let real = file
        .canonicalize()
        .map_err(|e| SkillError::Unreadable(e.to_string()))?;
    let real_dir = dir
        .canonicalize()
        .map_err(|e| SkillError::Unreadable(e.to_string()))?;
    if let Some(root) = inside {
        for r in [&real_dir, &real] {
            if !r.starts_with(root) {
                return Err(SkillError::OutsideProject(r.clone()));
            }
        }
    }
    if ["/proc", "/sys", "/dev"].iter().any(|s| real.starts_with(s)) {
        return Err(SkillError::SystemFile);
    }
    let meta = std::fs::metadata(&real).map_err(|e| SkillError::Unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(SkillError::NotAFile);
    }
    if meta.len() > MAX_FILE {
        return Err(SkillError::TooLarge);
    }
    let text = std::fs::read_to_string(&real).map_err(|e| SkillError::Unreadable(e.to_string()))?;
    let (front, body) =
        crate::front_matter::parse::<FrontMatter>(&text).map_err(SkillError::BadFrontMatter)?;
    let front = front.ok_or(SkillError::NoFrontMatter)?;
    let name = front.name.map(|n| n.trim().to_string()).unwrap_or_default();
    if name.is_empty() {
        return Err(SkillError::NoName);
    }
    if !valid_name(&name) {
        return Err(SkillError::BadName(crate::text::shorten(&name, 64).to_string()));
    }
    let description = one_line(front.description.as_deref().unwrap_or_default());
    if description.is_empty() {
        return Err(SkillError::NoDescription);
    }
    let body = body.trim();
    if body.is_empty() {
        return Err(SkillError::NoBody);
    }
    Ok(Skill {
        name,
        description,
        body: body.to_string(),
        dir: real_dir,
        source,
    })
}

/// `text` on one line (runs of white space one space), cut to `MAX_DESCRIPTION`
/// characters with an ellipsis.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_DESCRIPTION {
        return joined;
    }
    let mut cut: String = joined.chars().take(MAX_DESCRIPTION - 1).collect();
    cut.push('…');
    cut
}
