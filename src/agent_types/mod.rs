//! Sub-agent types: Markdown files in the user's `~/.config/ikigai/agents/` and a trusted
//! project's `.ikigai/agents/` (`NAME.md`: YAML front matter `name`, `description`,
//! optional `tools`, `model`, `max_tool_turns`, `timeout_secs`; the body is the
//! sub-agent's system prompt), in Claude Code's format. Loads and checks them once (a bad
//! file is a notice) and writes the lines the `task` tool's description lists them by.
//! Reads files; runs nothing; the caller says whether the project is trusted.

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[cfg(test)]
mod tests;

/// Files larger than this are skipped.
const MAX_FILE: u64 = 64 * 1024;
/// A type's description in the `task` tool's description is cut to this many characters.
const MAX_DESCRIPTION: usize = 250;
/// Type files read at most from one folder.
const MAX_PER_PLACE: usize = 100;
/// The project's folder of types, relative to the project.
pub const PROJECT_DIR: &str = ".ikigai/agents";

/// Where a type was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    User,
    Project,
}

/// One sub-agent type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentType {
    pub name: String,
    /// One line.
    pub description: String,
    /// The tools it may use, as written (`Read, Grep` or `[file_read, grep]`); `None`:
    /// the read-only default.
    pub tools: Option<Vec<String>>,
    /// Another model for it (`None`, or `inherit`: the parent's).
    pub model: Option<String>,
    pub max_tool_turns: Option<u32>,
    pub timeout_secs: Option<u64>,
    /// Its system prompt.
    pub prompt: String,
    pub source: Source,
    pub path: PathBuf,
}

/// Why a type file was not loaded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AgentTypeError {
    #[error("it leads outside the project, to {0}")]
    OutsideProject(PathBuf),
    #[error("it is not a regular file")]
    NotAFile,
    #[error("cannot read it ({0})")]
    Unreadable(String),
    #[error("it is larger than {} KB", MAX_FILE / 1024)]
    TooLarge,
    #[error("it has no front matter (`name:` and `description:` between two `---` lines)")]
    NoFrontMatter,
    #[error("{0}")]
    BadFrontMatter(String),
    #[error("its front matter has no `name`")]
    NoName,
    #[error("its name `{0}` is not a name (letters, digits, `-` and `_`, at most 64)")]
    BadName(String),
    #[error("its front matter has no `description`")]
    NoDescription,
    #[error("a type named `{0}` was already loaded")]
    Duplicate(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    tools: Option<Tools>,
    model: Option<String>,
    #[serde(alias = "max_tool_turns")]
    max_tool_turns: Option<u32>,
    #[serde(alias = "timeout_secs")]
    timeout_secs: Option<u64>,
}

/// `tools: Read, Grep` or `tools: [Read, Grep]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Tools {
    Line(String),
    List(Vec<String>),
}

/// Every loaded type: the user's, then the project's, each folder's by file name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentTypes {
    list: Vec<AgentType>,
}

/// The user's folder: `$XDG_CONFIG_HOME/ikigai/agents`, else `~/.config/ikigai/agents`.
pub fn user_dir() -> Option<PathBuf> {
    let env = |k: &str| crate::environ::var(k);
    crate::paths::config_home(&env).map(|d| d.join("ikigai").join("agents"))
}

/// The `*.md` files of `dir`, by name (at most `MAX_PER_PLACE`).
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
    files.truncate(MAX_PER_PLACE);
    files
}

/// The project's type files, relative to the project (for the trust question).
pub fn in_project(root: &Path) -> Vec<String> {
    md_files(&root.join(PROJECT_DIR))
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| format!("{PROJECT_DIR}/{}", n.to_string_lossy()))
        .collect()
}

impl AgentTypes {
    /// The user's types (from `user`), and the project's in `root` when `trusted`;
    /// notices say what was skipped and why.
    pub fn load(user: Option<&Path>, root: &Path, trusted: bool) -> (Self, Vec<String>) {
        let mut notices = Vec::new();
        let mut list = Vec::new();
        if let Some(dir) = user {
            read_place(dir, Source::User, None, &mut list, &mut notices);
        }
        if trusted {
            let project = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
            read_place(
                &root.join(PROJECT_DIR),
                Source::Project,
                Some(&project),
                &mut list,
                &mut notices,
            );
        } else {
            let found = in_project(root);
            if !found.is_empty() {
                notices.push(format!(
                    "{} project agent type(s) in {} not loaded ({}): this folder is not trusted \
                     (or its settings changed since it was); `ikigai trust` trusts it",
                    found.len(),
                    root.display(),
                    found.join(", ")
                ));
            }
        }
        (AgentTypes { list }, notices)
    }

    pub fn from_list(list: Vec<AgentType>) -> Self {
        AgentTypes { list }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &AgentType> {
        self.list.iter()
    }

    pub fn get(&self, name: &str) -> Option<&AgentType> {
        self.list.iter().find(|t| t.name == name)
    }

    /// Every name, comma-separated.
    pub fn names(&self) -> String {
        self.list
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn read_place(
    dir: &Path,
    source: Source,
    inside: Option<&Path>,
    list: &mut Vec<AgentType>,
    notices: &mut Vec<String>,
) {
    for path in md_files(dir) {
        let result = read_one(&path, source, inside).and_then(|t| {
            if list.iter().any(|o| o.name == t.name) {
                Err(AgentTypeError::Duplicate(t.name))
            } else {
                Ok(t)
            }
        });
        match result {
            Ok(t) => list.push(t),
            Err(why) => notices.push(format!("agent type {} not loaded: {why}", path.display())),
        }
    }
}

fn read_one(path: &Path, source: Source, inside: Option<&Path>) -> Result<AgentType, AgentTypeError> {
    let real = path
        .canonicalize()
        .map_err(|e| AgentTypeError::Unreadable(e.to_string()))?;
    if let Some(root) = inside
        && !real.starts_with(root)
    {
        return Err(AgentTypeError::OutsideProject(real));
    }
    let meta = std::fs::metadata(&real).map_err(|e| AgentTypeError::Unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(AgentTypeError::NotAFile);
    }
    if meta.len() > MAX_FILE {
        return Err(AgentTypeError::TooLarge);
    }
    let text = std::fs::read_to_string(&real).map_err(|e| AgentTypeError::Unreadable(e.to_string()))?;
    let (front, body) =
        crate::front_matter::parse::<FrontMatter>(&text).map_err(AgentTypeError::BadFrontMatter)?;
    let front = front.ok_or(AgentTypeError::NoFrontMatter)?;
    let name = front.name.map(|n| n.trim().to_string()).unwrap_or_default();
    if name.is_empty() {
        return Err(AgentTypeError::NoName);
    }
    if !crate::front_matter::valid_name(&name) {
        return Err(AgentTypeError::BadName(
            crate::text::shorten(&name, 64).to_string(),
        ));
    }
    let description = front
        .description
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if description.is_empty() {
        return Err(AgentTypeError::NoDescription);
    }
    let description = match description.char_indices().nth(MAX_DESCRIPTION) {
        Some((i, _)) => format!("{}…", &description[..i]),
        None => description,
    };
    let tools = front.tools.map(|t| match t {
        Tools::Line(l) => l
            .split(',')
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty())
            .collect(),
        Tools::List(v) => v.into_iter().map(|w| w.trim().to_string()).collect(),
    });
    let model = front
        .model
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty() && m != "inherit");
    Ok(AgentType {
        name,
        description,
        tools,
        model,
        max_tool_turns: front.max_tool_turns,
        timeout_secs: front.timeout_secs,
        prompt: body.trim().to_string(),
        source,
        path: real,
    })
}
