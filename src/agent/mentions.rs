//! `@file` mentions in a user message: finds them, reads each file (or a line range of it,
//! or a directory's listing) with the `file_read` / `list_dir` tools' own capped reading,
//! and builds the blocks the model gets after the text. Refuses paths that leave the
//! working directory (unless given absolute), system files (`/proc`, `/sys`, `/dev`) and
//! symlinks leading out. A file whose content is an image is attached as one (`images`).
//! Reads only; never writes, never talks to the provider.
//!
//! The rule: `@` starts a mention only at the start of a word and outside code (so
//! `user@example.com`, `` `@x` `` and a decorator in a fenced block are text). A mention whose path exists is attached; one that does not exist
//! is an error when it looks like a path (only path characters, and a `/` at its end, a
//! line range, a leading `./`, `../`, `/` or `~/`, or a file extension such as `.py`),
//! else it stays text (`@alice`, `@types/node`, `@app.route("/")`). Trailing punctuation (`.,;:!?)` and quotes) is not part of it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::message::Image;
use crate::tools::file_read::FileRead;
use crate::tools::list_dir::ListDir;
use crate::tools::{Tool, ToolContext};

/// The attachments of one message.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Attached {
    /// What the model gets after the text (empty when nothing is attached).
    pub blocks: String,
    /// One line each: `src/main.rs, 120 lines`.
    pub lines: Vec<String>,
    /// Attached images (a file whose content is a PNG, JPEG, GIF or WebP image).
    pub images: Vec<Image>,
}

/// Why a message cannot be sent: the one-line reason, naming the mention.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct MentionError(pub String);

/// One `@path[:N-M]` found in a message.
#[derive(Debug, PartialEq, Eq)]
struct Mention {
    /// As written, without the `@` (and with its range).
    written: String,
    path: String,
    range: Option<(u64, Option<u64>)>,
    /// Whether a missing path is an error (it looks like a path) or text.
    pathlike: bool,
}

/// Reads every mention in `text`; an error for a missing or refused one (nothing is sent).
pub(crate) async fn attach(text: &str, ctx: &ToolContext) -> Result<Attached, MentionError> {
    let mut out = Attached::default();
    let mut seen: Vec<String> = Vec::new();
    for token in words(text) {
        let Some(m) = mention(token, &ctx.cwd) else {
            continue;
        };
        if seen.contains(&m.written) {
            continue;
        }
        seen.push(m.written.clone());
        let Some(resolved) = check(&m, ctx)? else {
            continue;
        };
        if let Some((image, line)) = image(&m, &resolved)? {
            out.images.push(image);
            out.lines.push(line);
            continue;
        }
        let (block, line) = read(&m, &resolved, ctx).await?;
        out.blocks.push_str(&block);
        out.lines.push(line);
    }
    Ok(out)
}

/// The words of `text` that start with `@` (after whitespace or at the start), outside
/// code and data: fenced blocks (```` ``` ```` / `~~~`), inline `` `code` `` and the piped
/// `<stdin>` block of `-p` are skipped.
fn words(text: &str) -> impl Iterator<Item = &str> {
    // The start of the line that ends the block being skipped.
    let mut until: Option<&'static str> = None;
    text.lines()
        .filter(move |line| {
            let t = line.trim();
            if let Some(end) = until {
                if t.starts_with(end) {
                    until = None;
                }
                return false;
            }
            until = ["```", "~~~"]
                .into_iter()
                .find(|f| t.starts_with(f))
                .or((t == "<stdin>").then_some("</stdin>"));
            until.is_none()
        })
        .flat_map(|line| line.split('`').step_by(2))
        .flat_map(|part| part.split(char::is_whitespace))
        .filter_map(|w| w.strip_prefix('@'))
        .filter(|w| !w.is_empty())
}

/// `token` (after the `@`) as a mention: the longest of it, and it without trailing
/// punctuation, that names something; else the stripped form when it looks like a path.
fn mention(token: &str, cwd: &Path) -> Option<Mention> {
    let stripped = token.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
    let forms: Vec<&str> = if stripped == token {
        vec![token]
    } else {
        vec![token, stripped]
    };
    let parsed: Vec<Mention> = forms.iter().filter(|f| !f.is_empty()).map(|f| parse(f)).collect();
    if let Some(found) = parsed.iter().position(|m| exists(&resolve(&m.path, cwd))) {
        return parsed.into_iter().nth(found);
    }
    parsed.into_iter().last().filter(|m| m.pathlike)
}

/// Splits `path:N-M` / `path:N` off; decides whether it looks like a path.
fn parse(written: &str) -> Mention {
    let (path, range) = match written.rsplit_once(':') {
        Some((p, r)) if !p.is_empty() => match range_of(r) {
            Some(range) => (p, Some(range)),
            None => (written, None),
        },
        _ => (written, None),
    };
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let extension = last.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=10).contains(&ext.len())
            && ext.starts_with(|c: char| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    // Code such as `@app.route("/")` is no path: only these characters make one.
    let plain = path.chars().all(|c| c.is_alphanumeric() || "._-/~+@".contains(c));
    let pathlike = plain
        && (range.is_some()
            || extension
            || path.ends_with('/')
            || ["./", "../", "/", "~/"].iter().any(|p| path.starts_with(p)));
    Mention {
        written: written.to_string(),
        path: path.to_string(),
        range,
        pathlike,
    }
}

/// `10-40` → lines 10 to 40; `10` → line 10 alone; `10-` → from 10 to the end.
fn range_of(r: &str) -> Option<(u64, Option<u64>)> {
    let num = |s: &str| s.parse::<u64>().ok().filter(|&n| n >= 1);
    match r.split_once('-') {
        Some((a, "")) => Some((num(a)?, None)),
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b)?);
            (b >= a).then_some((a, Some(b)))
        }
        None => num(r).map(|a| (a, Some(a))),
    }
}

fn resolve(path: &str, cwd: &Path) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = crate::environ::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    cwd.join(path)
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// The resolved path to read, when the mention may be read; `None` for text; an error
/// for a missing path-like one or a refused one.
fn check(m: &Mention, ctx: &ToolContext) -> Result<Option<PathBuf>, MentionError> {
    let given = resolve(&m.path, &ctx.cwd);
    let fail = |why: String| Err(MentionError(format!("@{}: {why}", m.written)));
    if !exists(&given) {
        return if m.pathlike {
            fail(
                "no such file or directory (paths are relative to the working directory; \
                 to send an @word as text, put it in `backticks`)"
                    .into(),
            )
        } else {
            Ok(None)
        };
    }
    let real = match given.canonicalize() {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot resolve it ({e})")),
    };
    if ["/proc", "/sys", "/dev"].iter().any(|sys| real.starts_with(sys)) {
        return fail(format!(
            "{} is a system file; it is never attached",
            real.display()
        ));
    }
    let project = ctx.cwd.canonicalize().unwrap_or_else(|_| ctx.cwd.clone());
    if into_project(m, &given, &ctx.cwd, &project) && !real.starts_with(&project) {
        return fail(format!(
            "it leads outside the working directory, to {} (give an absolute path to attach a file from elsewhere)",
            real.display()
        ));
    }
    Ok(Some(real))
}

/// Whether mention `m` (resolved to `given`) is held inside the project, symlinks
/// resolved: a relative path, or an absolute one into the project. Anything else (an
/// absolute or `~/` path elsewhere) is the writer's explicit choice of a file outside.
fn into_project(m: &Mention, given: &Path, cwd: &Path, project: &Path) -> bool {
    (!Path::new(&m.path).is_absolute() && !m.path.starts_with("~/"))
        || given.starts_with(cwd)
        || given.starts_with(project)
}

/// The mentions of `text` (as written, without the `@`) that `attach` would take from
/// outside the project in `cwd` because they name it explicitly (`@~/.ssh/id_rsa`,
/// `@/etc/hosts`); relative ones never leave it. For text the user did not type (a
/// project's custom command).
pub(crate) fn from_outside(text: &str, cwd: &Path) -> Vec<String> {
    let project = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut out: Vec<String> = Vec::new();
    for token in words(text) {
        let Some(m) = mention(token, cwd) else {
            continue;
        };
        let given = resolve(&m.path, cwd);
        if !into_project(&m, &given, cwd, &project) && !out.contains(&m.written) {
            out.push(m.written);
        }
    }
    out
}

/// The mentioned file as an image when its content is one (whatever its name); an error
/// for one over the size limit, or a file named like an image that is none.
fn image(m: &Mention, real: &Path) -> Result<Option<(Image, String)>, MentionError> {
    let fail = |why: String| MentionError(format!("@{}: {why}", m.written));
    if m.range.is_some() || !std::fs::metadata(real).is_ok_and(|meta| meta.is_file()) {
        return Ok(None);
    }
    match crate::images::read(real).map_err(fail)? {
        Some((image, line)) => Ok(Some((image, format!("{}, {line}", m.written)))),
        None if crate::images::named_like_image(real) => Err(fail(format!(
            "not a {} image (by its content)",
            crate::images::FORMATS
        ))),
        None => Ok(None),
    }
}

/// The block for the model and the line for the user.
async fn read(m: &Mention, real: &Path, ctx: &ToolContext) -> Result<(String, String), MentionError> {
    let fail = |why: String| MentionError(format!("@{}: {why}", m.written));
    let is_dir = std::fs::metadata(real).is_ok_and(|meta| meta.is_dir());
    let path = real.to_string_lossy().into_owned();
    let (output, tag) = if is_dir {
        if m.range.is_some() {
            return Err(fail("a line range needs a file, not a directory".into()));
        }
        (ListDir.call(json!({ "path": path }), ctx).await, "directory")
    } else {
        let mut args = json!({ "path": path });
        if let Some((from, to)) = m.range {
            args["offset"] = json!(from);
            if let Some(to) = to {
                args["limit"] = json!(to - from + 1);
            }
        }
        (FileRead.call(args, ctx).await, "file")
    };
    let output = output.map_err(|e| fail(e.to_string()))?;
    let result = &output.result;
    if let Some(err) = result.get("error").and_then(Value::as_str) {
        return Err(fail(err.replace(&path, &m.path)));
    }
    let text = result.get("output").and_then(Value::as_str).unwrap_or("");
    let mut block = format!("\n\n<{tag} path=\"{}\"", m.path);
    if let Some((from, to)) = m.range {
        let to = to.map_or_else(String::new, |t| t.to_string());
        block.push_str(&format!(" lines=\"{from}-{to}\""));
    }
    block.push_str(">\n");
    block.push_str(text);
    if !text.ends_with('\n') && !text.is_empty() {
        block.push('\n');
    }
    if let Some(next) = result.get("next_offset").and_then(Value::as_u64) {
        block.push_str(&format!(
            "[cut at the size limit: read on with file_read, path \"{}\", offset {next}]\n",
            m.path
        ));
    } else if result.get("truncated").and_then(Value::as_bool) == Some(true) {
        block.push_str("[cut at the size limit]\n");
    }
    if let Some(note) = result.get("note").and_then(Value::as_str) {
        block.push_str(&format!("[{note}]\n"));
    }
    block.push_str(&format!("</{tag}>"));
    Ok((block, format!("{}, {}", m.written, output.summary)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), 4096, Duration::from_secs(5))
    }

    #[test]
    fn only_word_starts_are_mentions_and_missing_non_paths_stay_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        let found: Vec<&str> = words("mail user@example.com, see @a.py. `@b` @").collect();
        assert_eq!(found, ["a.py."]);
        let code = "fix @a.py:\n```python\n@pytest.fixture\ndef f(): pass\n```\nsee `x @y.rs z` and @c.md";
        assert_eq!(words(code).collect::<Vec<_>>(), ["a.py:", "c.md"]);
        let piped = "explain @a.py\n\n<stdin>\n@pytest.fixture\n@x.rs\n</stdin>";
        assert_eq!(words(piped).collect::<Vec<_>>(), ["a.py"]);
        assert!(mention("app.route(\"/\")", dir.path()).is_none());
        assert!(mention("user.name=\"x\"", dir.path()).is_none());
        let m = mention("a.py.", dir.path()).unwrap();
        assert_eq!(m.path, "a.py");
        assert!(mention("alice", dir.path()).is_none());
        assert!(mention("types/node", dir.path()).is_none());
        assert!(mention("missing.rs", dir.path()).unwrap().pathlike);
        assert!(mention("src/", dir.path()).unwrap().pathlike);
        assert!(mention("v1.2", dir.path()).is_none());
        let m = parse("src/main.rs:10-40");
        assert_eq!((m.path.as_str(), m.range), ("src/main.rs", Some((10, Some(40)))));
        assert_eq!(parse("x.rs:7").range, Some((7, Some(7))));
        assert_eq!(parse("x.rs:7-").range, Some((7, None)));
        assert_eq!(parse("x.rs:9-3").range, None);
    }

    #[tokio::test]
    async fn attaches_files_ranges_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let lines: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("f.txt"), &lines).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/x.rs"), "fn x() {}\n").unwrap();
        let a = attach("see @f.txt:10-12 and @sub/", &ctx(dir.path()))
            .await
            .unwrap();
        assert_eq!(a.lines, ["f.txt:10-12, 3 lines", "sub/, 1 entry"]);
        assert!(
            a.blocks
                .contains("<file path=\"f.txt\" lines=\"10-12\">\nline 10\nline 11\nline 12\n</file>"),
            "{}",
            a.blocks
        );
        assert!(a.blocks.contains("x.rs"), "{}", a.blocks);
        assert!(!a.blocks.contains("line 13"));
        let none = attach("no mentions here", &ctx(dir.path())).await.unwrap();
        assert_eq!(none, Attached::default());
    }

    #[tokio::test]
    async fn a_big_file_is_capped_with_the_read_on_note() {
        let dir = tempfile::tempdir().unwrap();
        let lines: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("big.txt"), &lines).unwrap();
        let a = attach("@big.txt", &ctx(dir.path())).await.unwrap();
        assert!(a.blocks.len() < 5000, "{}", a.blocks.len());
        assert!(
            a.blocks
                .contains("read on with file_read, path \"big.txt\", offset"),
            "{}",
            a.blocks
        );
        assert!(
            a.lines[0].starts_with("big.txt, ") && a.lines[0].contains("truncated"),
            "{:?}",
            a.lines
        );
    }

    #[tokio::test]
    async fn missing_outside_and_system_paths_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        let c = ctx(dir.path());
        let e = attach("look at @gone.py", &c).await.unwrap_err();
        assert!(e.0.starts_with("@gone.py: no such file"), "{e}");
        let e = attach("@link", &c).await.unwrap_err();
        assert!(e.0.contains("leads outside the working directory"), "{e}");
        let e = attach("@../x/y.txt", &c).await.unwrap_err();
        assert!(e.0.contains("no such file"), "{e}");
        let e = attach("@/proc/self/environ", &c).await.unwrap_err();
        assert!(e.0.contains("system file"), "{e}");
        // An absolute path elsewhere is the user's explicit choice.
        let abs = outside.path().join("secret");
        let a = attach(&format!("@{}", abs.display()), &c).await.unwrap();
        assert!(a.blocks.contains("s3cret"));
    }
}
