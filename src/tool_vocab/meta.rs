//! What each built-in tool declares about itself, so that no other layer keeps a list of
//! tool names: what kind of tool it is (ACP's kinds: read, edit, execute, fetch, search,
//! think, other), which argument names the file it acts on and whether it writes it,
//! which argument holds a command line it runs or a URL it reaches, and how its change
//! reads as a diff. The permission engine (its read-only list, its path, command and URL
//! rules), checkpoints (which calls may change files) and the front ends' diffs ask this.
//! A tool that is not built in (external, MCP) declares nothing: every question about it
//! gets the cautious answer (it may do anything). Data only.

/// What kind of tool it is, as an editor's agent protocol names kinds (ACP `ToolKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// Reads a file or a folder's listing.
    Read,
    /// Changes a file.
    Edit,
    /// Runs a command.
    Execute,
    /// Reaches the network.
    Fetch,
    /// Searches files by name or content.
    Search,
    /// Changes nothing outside the conversation (a plan).
    Think,
    /// Anything else (external and MCP tools).
    Other,
}

impl ToolKind {
    /// The kind as ACP writes it (`read`, `edit`, `execute`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Execute => "execute",
            ToolKind::Fetch => "fetch",
            ToolKind::Search => "search",
            ToolKind::Think => "think",
            ToolKind::Other => "other",
        }
    }
}

/// How a call's change to its file reads as a diff, by the arguments that carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// `old` replaced by `new` in the file (`file_edit`).
    Replace { old: &'static str, new: &'static str },
    /// The whole file written as `content` (`file_write`).
    Whole { content: &'static str },
}

/// What one built-in tool is and does, as the layers around it need to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolMeta {
    pub name: &'static str,
    pub kind: ToolKind,
    /// The argument naming the file or folder the tool acts on (the permission engine
    /// judges and pins that place; path rules match it); `None`: it acts on no path.
    pub path: Option<&'static str>,
    /// Whether it changes the file `path` names.
    pub writes: bool,
    /// The argument holding a shell command line it runs (command rules match it).
    pub command: Option<&'static str>,
    /// The argument holding the URL it reaches over the network (URL rules match it).
    pub url: Option<&'static str>,
    /// How its change reads as a diff, when it changes a file.
    pub change: Option<Change>,
    /// Whether several calls of it in one response may run at the same time (bounded by
    /// the tool). Only for a tool that changes nothing itself and asks nothing before it
    /// runs: a round of such calls is judged call by call, run together, and answered in
    /// call order.
    pub concurrent: bool,
}

impl ToolMeta {
    const fn new(name: &'static str, kind: ToolKind) -> ToolMeta {
        ToolMeta {
            name,
            kind,
            path: None,
            writes: false,
            command: None,
            url: None,
            change: None,
            concurrent: false,
        }
    }

    /// Whether it only reads: it writes no file, runs no command and reaches no network,
    /// so the `ask` and `read-only` modes run it without asking (the built-in read-only
    /// list).
    pub fn reads_only(&self) -> bool {
        !self.writes && self.command.is_none() && self.url.is_none()
    }

    /// Whether a call may change files: it writes one, or runs commands.
    pub fn changes_files(&self) -> bool {
        self.writes || self.command.is_some()
    }

    /// Whether the `ask` mode asks before it runs (anything that does more than read;
    /// rules aside).
    pub fn may_ask(&self) -> bool {
        !self.reads_only()
    }
}

pub const BASH: ToolMeta = ToolMeta {
    command: Some("command"),
    ..ToolMeta::new("bash", ToolKind::Execute)
};
pub const FILE_READ: ToolMeta = ToolMeta {
    path: Some("path"),
    ..ToolMeta::new("file_read", ToolKind::Read)
};
pub const FILE_WRITE: ToolMeta = ToolMeta {
    path: Some("path"),
    writes: true,
    change: Some(Change::Whole { content: "content" }),
    ..ToolMeta::new("file_write", ToolKind::Edit)
};
pub const FILE_EDIT: ToolMeta = ToolMeta {
    path: Some("path"),
    writes: true,
    change: Some(Change::Replace {
        old: "old_string",
        new: "new_string",
    }),
    ..ToolMeta::new("file_edit", ToolKind::Edit)
};
pub const LIST_DIR: ToolMeta = ToolMeta {
    path: Some("path"),
    ..ToolMeta::new("list_dir", ToolKind::Read)
};
pub const GLOB: ToolMeta = ToolMeta {
    path: Some("path"),
    ..ToolMeta::new("glob", ToolKind::Search)
};
pub const GREP: ToolMeta = ToolMeta {
    path: Some("path"),
    ..ToolMeta::new("grep", ToolKind::Search)
};
pub const UPDATE_PLAN: ToolMeta = ToolMeta::new("update_plan", ToolKind::Think);
pub const WEB_FETCH: ToolMeta = ToolMeta {
    url: Some("url"),
    ..ToolMeta::new("web_fetch", ToolKind::Fetch)
};
/// Offered only when skills are loaded: returns one skill's instructions, which ikigai
/// read at start (a name, never a path).
pub const SKILL: ToolMeta = ToolMeta::new("skill", ToolKind::Read);
/// Offered only when agent types are configured: runs a sub-agent whose own calls are
/// each judged in the parent's mode (none may ask), so the call itself changes nothing.
pub const TASK: ToolMeta = ToolMeta {
    concurrent: true,
    ..ToolMeta::new("task", ToolKind::Other)
};

/// Every built-in tool's declaration (the registry checks that its built-ins are exactly
/// these).
pub const BUILTINS: [ToolMeta; 11] = [
    BASH,
    FILE_READ,
    FILE_WRITE,
    FILE_EDIT,
    LIST_DIR,
    GLOB,
    GREP,
    UPDATE_PLAN,
    WEB_FETCH,
    SKILL,
    TASK,
];

/// What the tool called `name` declares, when it is a built-in one. A user's external
/// tool may stand in for a built-in of the same name; it is then judged by the built-in's
/// declaration, as it always was.
pub fn of(name: &str) -> Option<&'static ToolMeta> {
    BUILTINS.iter().find(|m| m.name == name)
}

/// Whether `name` acts on a path its `path` argument names (a file tool).
pub fn has_path(name: &str) -> bool {
    of(name).is_some_and(|m| m.path.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_only_list_and_the_file_changing_list_are_two_questions() {
        let names = |f: fn(&ToolMeta) -> bool| -> Vec<&str> {
            BUILTINS.iter().filter(|m| f(m)).map(|m| m.name).collect()
        };
        // The permission engine's read-only list: no write, no command, no network.
        assert_eq!(
            names(ToolMeta::reads_only),
            [
                "file_read",
                "list_dir",
                "glob",
                "grep",
                "update_plan",
                "skill",
                "task"
            ]
        );
        // What checkpoints watch: a write or a command; `web_fetch` changes no file but
        // is not read-only (it reaches the network).
        assert_eq!(
            names(ToolMeta::changes_files),
            ["bash", "file_write", "file_edit"]
        );
        assert!(WEB_FETCH.may_ask() && !WEB_FETCH.changes_files());
        assert_eq!(
            BUILTINS.iter().filter(|m| m.path.is_some()).count(),
            6,
            "the file tools"
        );
        assert_eq!(of("nope"), None);
        assert!(has_path("grep") && !has_path("bash") && !has_path("mcp__x"));
    }

    #[test]
    fn names_are_unique_and_kinds_read_as_acp_writes_them() {
        for (i, m) in BUILTINS.iter().enumerate() {
            assert!(BUILTINS[i + 1..].iter().all(|o| o.name != m.name), "{}", m.name);
            assert_eq!(m.writes, m.kind == ToolKind::Edit, "{}", m.name);
            assert_eq!(m.writes, m.change.is_some(), "{}", m.name);
        }
        assert_eq!(BASH.kind.as_str(), "execute");
        assert_eq!(WEB_FETCH.kind.as_str(), "fetch");
    }
}
