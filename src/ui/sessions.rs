//! The session subcommands, each its own small front end that prints: `ikigai sessions`
//! (a table, or `--json`), `ikigai sessions rm ID` and `ikigai export ID`. The tables
//! and transcripts are built purely; the store is only asked, never bypassed. What a
//! person reads shows control characters visibly (`text::visible`); `--json` and `jsonl`
//! are exact.

use std::io::{IsTerminal, Write};

use chrono::TimeZone;
use serde_json::Value;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::config::Config;
use crate::protocol::{Event, NoticeLevel};
use crate::store::{EventInfo, SessionInfo, Sessions, StoreError};

/// Why a session subcommand failed (the caller picks the exit code).
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// How `ikigai export` writes a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// A readable Markdown transcript with every tool call and result.
    Markdown,
    /// The raw stored events, one JSON object per line.
    Jsonl,
}

/// Opens the store for a subcommand. Its notices (a spool replayed at start) are shown
/// on stderr when the command ends; failures are the command's error instead.
fn open(
    config: &Config,
) -> (
    std::sync::Arc<dyn Sessions>,
    tokio::sync::mpsc::UnboundedReceiver<Event>,
) {
    let (notices, rx) = tokio::sync::mpsc::unbounded_channel();
    (crate::store::open(config, notices), rx)
}

fn show_notices(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) {
    while let Ok(ev) = rx.try_recv() {
        if let Event::Notice {
            level: NoticeLevel::Info,
            text,
        } = ev
        {
            eprintln!("ikigai: {}", crate::text::visible(&text));
        }
    }
}

/// Which sessions `ikigai sessions` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// This folder's, then a line saying how many the other folders have.
    HereThenCount,
    /// This folder's only (`--here`).
    Here,
    /// Every folder's (`--all`).
    All,
}

/// What `ikigai sessions` shows: the sessions listed (newest first), how many more of
/// those there were past the limit, and how many other folders hold (counted only).
#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    pub shown: Vec<SessionInfo>,
    pub more: usize,
    pub elsewhere: usize,
}

/// Picks the sessions of `scope` among `sessions` (newest first), at most `limit` (0: all).
/// A sub-agent's session is not one of them but follows its parent's, in the order they
/// ran; one whose parent is gone stands on its own.
pub fn select(sessions: Vec<SessionInfo>, cwd: &str, scope: Scope, limit: usize) -> Selection {
    let ids: std::collections::HashSet<String> = sessions.iter().map(|s| s.id.clone()).collect();
    let (children, sessions): (Vec<_>, Vec<_>) = sessions
        .into_iter()
        .partition(|s| s.parent.as_ref().is_some_and(|p| ids.contains(p) && *p != s.id));
    let (mut shown, others): (Vec<_>, Vec<_>) = match scope {
        Scope::All => (sessions, Vec::new()),
        Scope::Here | Scope::HereThenCount => sessions.into_iter().partition(|s| s.cwd == cwd),
    };
    let more = if limit > 0 && shown.len() > limit {
        shown.split_off(limit).len()
    } else {
        0
    };
    let shown = shown
        .into_iter()
        .flat_map(|s| {
            let mut mine: Vec<SessionInfo> = children
                .iter()
                .filter(|c| c.parent.as_deref() == Some(s.id.as_str()))
                .cloned()
                .collect();
            mine.reverse();
            std::iter::once(s).chain(mine)
        })
        .collect();
    let elsewhere = if scope == Scope::HereThenCount {
        others.len()
    } else {
        0
    };
    Selection {
        shown,
        more,
        elsewhere,
    }
}

/// The lines under the table: what was left out and how to see it.
pub fn footer(sel: &Selection, limit: usize) -> String {
    let mut out = String::new();
    if sel.more > 0 {
        out.push_str(&format!(
            "… {} more (--limit {} shows more, --limit 0 all)\n",
            sel.more,
            limit * 2
        ));
    }
    if sel.elsewhere > 0 {
        let s = if sel.elsewhere == 1 { "" } else { "s" };
        out.push_str(&format!(
            "{} session{s} in other folders (--all lists them)\n",
            sel.elsewhere
        ));
    }
    out
}

/// `ikigai sessions [--all | --here] [--limit N] [--json]`: prints the session list;
/// returns the exit code.
pub async fn list(config: &Config, json: bool, scope: Scope, limit: usize) -> Result<u8, SessionsError> {
    let (store, mut notices) = open(config);
    let cwd = std::env::current_dir()?.display().to_string();
    let sel = select(store.list().await?, &cwd, scope, limit);
    show_notices(&mut notices);
    let mut out = std::io::stdout().lock();
    let sessions = &sel.shown;
    if json {
        let text = serde_json::to_string_pretty(&sessions).map_err(std::io::Error::other)?;
        writeln!(out, "{}", crate::text::json_visible(&text))?;
    } else {
        let home = crate::environ::var("HOME");
        let width = if out.is_terminal() {
            crossterm::terminal::size().ok().map(|(w, _)| usize::from(w))
        } else {
            None
        };
        let table = if sessions.is_empty() && sel.elsewhere > 0 {
            "No sessions in this folder.\n".to_string()
        } else {
            format_sessions(sessions, home.as_deref(), &chrono::Local)
        };
        let table = match width {
            Some(w) => fit_width(&table, w),
            None => table,
        };
        out.write_all(table.as_bytes())?;
        out.write_all(footer(&sel, limit).as_bytes())?;
    }
    out.flush()?;
    Ok(0)
}

/// `ikigai sessions rm ID`: deletes a session nobody is using; returns the exit code.
pub async fn remove(config: &Config, id: &str) -> Result<u8, SessionsError> {
    let (store, mut notices) = open(config);
    let info = store.delete(id).await?;
    show_notices(&mut notices);
    let title = info.title.as_deref().unwrap_or("(no message yet)");
    let shown = crate::text::visible(&format!("deleted session {} ({title})", info.id)).into_owned();
    writeln!(std::io::stdout(), "{shown}")?;
    Ok(0)
}

/// `ikigai export ID [--format md|jsonl]`: writes the session to stdout.
pub async fn export(config: &Config, id: &str, format: ExportFormat) -> Result<u8, SessionsError> {
    let (store, mut notices) = open(config);
    let (info, events) = store.export(id).await?;
    show_notices(&mut notices);
    let text = match format {
        // Stored as sent; shown so that no escape sequence acts on the terminal.
        ExportFormat::Markdown => crate::text::visible(&markdown(&info, &events)).into_owned(),
        // The same values, with the characters a terminal could act on escaped.
        ExportFormat::Jsonl => crate::text::json_visible(&jsonl(&events)?).into_owned(),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(0)
}

/// Every line cut to `width` columns (the title is last, so it is what gets cut).
pub fn fit_width(table: &str, width: usize) -> String {
    let mut out = String::with_capacity(table.len());
    for line in table.lines() {
        if line.width() <= width {
            out.push_str(line);
        } else {
            let mut used = 0;
            for c in line.chars() {
                let w = c.width().unwrap_or(0);
                if used + w + 1 > width {
                    break;
                }
                out.push(c);
                used += w;
            }
            out.push('…');
        }
        out.push('\n');
    }
    out
}

/// The raw events, one JSON object per line.
pub fn jsonl(events: &[EventInfo]) -> Result<String, std::io::Error> {
    let mut out = String::new();
    for e in events {
        out.push_str(&serde_json::to_string(e).map_err(std::io::Error::other)?);
        out.push('\n');
    }
    Ok(out)
}

/// A readable transcript: every message, tool call (with its arguments) and result (with
/// its output), and the markers that change what follows (model, interruption, new
/// conversation, compaction).
pub fn markdown(info: &SessionInfo, events: &[EventInfo]) -> String {
    let mut out = format!(
        "# {}\n\n- session: `{}`\n- folder: `{}`\n- model: {} ({})\n- started: {}\n",
        info.title.as_deref().unwrap_or("(no message yet)"),
        info.id,
        info.cwd,
        info.model,
        info.provider,
        info.created_at
    );
    if let Some(from) = &info.forked_from {
        out.push_str(&format!("- forked from: `{from}`\n"));
    }
    if let Some(parent) = &info.parent {
        let call = info.parent_call.as_deref().unwrap_or("?");
        out.push_str(&format!("- sub-agent of: `{parent}` (its call `{call}`)\n"));
    }
    for e in events {
        let s = |k: &str| {
            e.data
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match e.kind.as_str() {
            "system" => out.push_str(&format!("\n## System\n\n{}\n", e.content)),
            "user" => out.push_str(&format!("\n## User\n\n{}\n", e.content)),
            "assistant" => out.push_str(&format!("\n## Assistant\n\n{}\n", e.content)),
            "reasoning" => out.push_str(&format!("\n## Reasoning\n\n{}\n", e.content)),
            "tool_call" => {
                let f = e.data.get("function").cloned().unwrap_or(Value::Null);
                let name = f.get("name").and_then(Value::as_str).unwrap_or("?");
                let args = f.get("arguments").and_then(Value::as_str).unwrap_or("");
                let args = serde_json::from_str::<Value>(args)
                    .and_then(|v| serde_json::to_string_pretty(&v))
                    .unwrap_or_else(|_| args.to_string());
                out.push_str(&format!(
                    "\n### Tool call: {name} (`{}`)\n\n{}\n",
                    s("id"),
                    fence("json", &args)
                ));
            }
            "tool_result" => {
                let ok = e.data.get("success").and_then(Value::as_bool).unwrap_or(false);
                let mut output = crate::ui::result::text(&s("output"));
                // An interrupted or timed-out call: what it printed before it stopped.
                let partial = crate::ui::result::partial_output(&s("output"));
                if !partial.is_empty() {
                    output.push('\n');
                    output.push_str(&partial);
                }
                out.push_str(&format!(
                    "\n### Tool result: {} (`{}`) {}\n\n{}\n",
                    s("name"),
                    s("tool_call_id"),
                    if ok { "ok" } else { "failed" },
                    fence("", &output)
                ));
            }
            "compaction" => out.push_str(&format!("\n## Summary of earlier messages\n\n{}\n", e.content)),
            "model" => out.push_str(&format!("\n_model: {}_\n", s("model"))),
            "interrupted" => out.push_str("\n_[interrupted]_\n"),
            "permission" => {
                if let Ok(r) = serde_json::from_value::<crate::policy::record::Record>(e.data.clone()) {
                    out.push_str(&format!(
                        "\n_permission for {} (`{}`): {}_\n",
                        r.tool,
                        r.tool_call_id,
                        r.describe()
                    ));
                }
            }
            "new" => out.push_str("\n---\n\n_new conversation_\n"),
            "checkpoint" | "undo" => out.push_str(&checkpoint_line(&e.kind, &e.data)),
            _ => {}
        }
    }
    out
}

/// A `checkpoint` or `undo` marker as one line: the files a turn changed, or put back.
fn checkpoint_line(kind: &str, data: &Value) -> String {
    let files: Vec<&str> = match kind {
        "checkpoint" => data
            .get("files")
            .and_then(Value::as_array)
            .map_or(Vec::new(), |f| {
                f.iter()
                    .filter_map(|f| f.get("path").and_then(Value::as_str))
                    .collect()
            }),
        _ => data
            .get("files")
            .and_then(Value::as_array)
            .map_or(Vec::new(), |f| f.iter().filter_map(Value::as_str).collect()),
    };
    let what = if kind == "checkpoint" {
        "checkpoint: changed"
    } else {
        "undo: put back"
    };
    format!("\n_{what} {}_\n", files.join(", "))
}

/// `text` in a code fence longer than any backtick run inside it.
fn fence(lang: &str, text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let ticks = "`".repeat(longest.max(2) + 1);
    format!("{ticks}{lang}\n{}\n{ticks}", text.trim_end_matches('\n'))
}

/// The table `ikigai sessions` prints: a header, then one line per session with the
/// shortest id prefix (at least 8) that tells them apart, the last activity in `tz`, the
/// folder (`~` for `home`), the model, the message count and the title.
pub fn format_sessions<Tz: TimeZone>(sessions: &[SessionInfo], home: Option<&str>, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    if sessions.is_empty() {
        return "No sessions yet. Run `ikigai` in a project folder to start one.\n".to_string();
    }
    let id_len = unique_prefix_len(sessions.iter().map(|s| s.id.as_str()));
    // A COST column only when some session had a priced response (never a guessed cost).
    let with_cost = sessions.iter().any(|s| s.cost.is_some());
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            let mut row = vec![
                s.id.chars().take(id_len).collect(),
                when(&s.updated_at, tz),
                tilde(&s.cwd, home),
                s.model.clone(),
                s.messages.to_string(),
            ];
            if with_cost {
                row.push(s.cost.map_or_else(|| "-".to_string(), crate::spend::dollars));
            }
            let title = s.title.clone().unwrap_or_else(|| "(no message yet)".into());
            // A sub-agent's session, under its parent's (`select`).
            row.push(match &s.parent {
                Some(_) => format!("↳ sub-agent: {title}"),
                None => title,
            });
            row.into_iter().map(|cell| cell_text(&cell)).collect()
        })
        .collect();
    let mut header: Vec<String> = ["ID", "WHEN", "DIRECTORY", "MODEL", "MSGS"]
        .map(String::from)
        .into();
    if with_cost {
        header.push("COST".into());
    }
    header.push("TITLE".into());
    let last = header.len() - 1;
    let mut widths = vec![0usize; header.len()];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.width());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let pad = " ".repeat(widths[i] - cell.width());
            match i {
                // The title is last and not padded; counts and costs right-aligned.
                _ if i == last => line.push_str(cell),
                4 | 5 => line.push_str(&format!("{pad}{cell}  ")),
                _ => line.push_str(&format!("{cell}{pad}  ")),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A table cell on one line, with control characters shown (`text::visible`).
fn cell_text(cell: &str) -> String {
    crate::text::visible(cell).replace(['\n', '\t'], " ")
}

/// The shortest length (at least 8) at which every id's prefix is unique.
fn unique_prefix_len<'a>(ids: impl Iterator<Item = &'a str>) -> usize {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    let longest = ids.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    let mut need = 8;
    for pair in ids.windows(2) {
        let common = pair[0]
            .chars()
            .zip(pair[1].chars())
            .take_while(|(a, b)| a == b)
            .count();
        need = need.max(common + 1);
    }
    need.min(longest.max(1))
}

fn when<Tz: TimeZone>(rfc3339: &str, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => t.with_timezone(tz).format("%Y-%m-%d %H:%M").to_string(),
        Err(_) => rfc3339.to_string(),
    }
}

fn tilde(cwd: &str, home: Option<&str>) -> String {
    match home.map(|h| h.trim_end_matches('/')).filter(|h| !h.is_empty()) {
        Some(h) if cwd == h => "~".to_string(),
        Some(h) if cwd.starts_with(h) && cwd[h.len()..].starts_with('/') => format!("~{}", &cwd[h.len()..]),
        _ => cwd.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, updated: &str, cwd: &str, model: &str, n: i64, title: Option<&str>) -> SessionInfo {
        SessionInfo {
            id: id.into(),
            created_at: updated.into(),
            updated_at: updated.into(),
            cwd: cwd.into(),
            provider: "openai".into(),
            model: model.into(),
            messages: n,
            title: title.map(str::to_string),
            forked_from: None,
            parent: None,
            parent_call: None,
            cost: None,
        }
    }

    #[test]
    fn sub_agent_sessions_follow_their_parent_in_the_order_they_ran() {
        let child = |id: &str, updated: &str, parent: &str| SessionInfo {
            parent: Some(parent.into()),
            parent_call: Some("call".into()),
            ..info(id, updated, "/w", "m", 2, Some(&format!("task {id}")))
        };
        // Newest first, as the store lists them; `o`'s parent was deleted.
        let listed = vec![
            child("c2", "2026-11-22T11:20:09Z", "p"),
            info("p", "2026-11-22T11:20:08Z", "/w", "m", 4, Some("parent")),
            child("c1", "2026-11-22T11:20:07Z", "p"),
            info("q", "2026-11-22T11:20:06Z", "/w", "m", 4, Some("older")),
            child("o", "2026-11-22T11:20:05Z", "gone"),
        ];
        let ids = |sel: &Selection| sel.shown.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        let all = select(listed.clone(), "/w", Scope::Here, 0);
        assert_eq!(ids(&all), ["p", "c1", "c2", "q", "o"]);
        // The limit counts sessions, not their sub-agents'.
        let one = select(listed, "/w", Scope::Here, 1);
        assert_eq!(
            (ids(&one), one.more),
            (vec!["p".into(), "c1".into(), "c2".into()], 2)
        );
        let table = format_sessions(&all.shown, None, &chrono::Utc);
        let titles: Vec<&str> = table
            .lines()
            .skip(1)
            .map(|l| l.split("  ").last().unwrap())
            .collect();
        assert_eq!(
            titles,
            [
                "parent",
                "↳ sub-agent: task c1",
                "↳ sub-agent: task c2",
                "older",
                "↳ sub-agent: task o"
            ]
        );
    }

    #[test]
    fn empty_list_says_so() {
        let out = format_sessions(&[], None, &chrono::Utc);
        assert!(out.starts_with("No sessions yet"), "{out}");
    }

    #[test]
    fn table_is_aligned_with_short_unique_ids() {
        let sessions = vec![
            info(
                "0193a1b2-0000-7000-8000-000000000001",
                "2026-11-22T11:20:05.123Z",
                "/home/me/src/ikigai",
                "gpt-5-mini",
                12,
                Some("fix the parser"),
            ),
            info(
                "0193a1b2-5555-7000-8000-000000000002",
                "2026-11-21T09:03:00.000Z",
                "/srv/другой",
                "m",
                3,
                None,
            ),
        ];
        let out = format_sessions(&sessions, Some("/home/me/"), &chrono::Utc);
        let expected = "\
ID          WHEN              DIRECTORY     MODEL       MSGS  TITLE
0193a1b2-0  2026-11-22 11:20  ~/src/ikigai  gpt-5-mini    12  fix the parser
0193a1b2-5  2026-11-21 09:03  /srv/другой   m              3  (no message yet)
";
        assert_eq!(out, expected);
    }

    #[test]
    fn a_cost_column_appears_only_with_a_priced_session() {
        let mut a = info(
            "aaaaaaaa-1",
            "2026-11-22T11:20:05.123Z",
            "/p",
            "gpt-5-mini",
            4,
            Some("t"),
        );
        a.cost = Some(0.0123);
        let b = info(
            "bbbbbbbb-2",
            "2026-11-21T09:03:00.000Z",
            "/p",
            "local",
            2,
            Some("u"),
        );
        let out = format_sessions(&[a, b], None, &chrono::Utc);
        let expected = "\
ID        WHEN              DIRECTORY  MODEL       MSGS   COST  TITLE
aaaaaaaa  2026-11-22 11:20  /p         gpt-5-mini     4  $0.01  t
bbbbbbbb  2026-11-21 09:03  /p         local          2      -  u
";
        assert_eq!(out, expected);
    }

    #[test]
    fn long_lines_are_cut_to_the_width() {
        let table = "ID  TITLE\nabc  a very long title indeed\nde  é\n";
        assert_eq!(fit_width(table, 12), "ID  TITLE\nabc  a very…\nde  é\n");
        assert!(fit_width(table, 12).lines().all(|l| l.width() <= 12));
    }

    #[test]
    fn markdown_shows_calls_and_results() {
        let ev = |kind: &str, content: &str, data: Value| EventInfo {
            id: "e".into(),
            seq: 1,
            kind: kind.into(),
            content: content.into(),
            data,
            created_at: "t".into(),
        };
        let events = vec![
            ev("user", "list files", Value::Null),
            ev(
                "tool_call",
                "glob(*)",
                serde_json::json!({"id": "c1", "type": "function",
                    "function": {"name": "glob", "arguments": "{\"pattern\":\"*\"}"}}),
            ),
            ev(
                "tool_result",
                "1 file",
                serde_json::json!({"tool_call_id": "c1", "name": "glob", "success": true,
                    "output": "{\"tool_success\":true,\"result\":{\"output\":\"a.rs\"}}"}),
            ),
            ev("interrupted", "", Value::Null),
        ];
        let md = markdown(
            &info("s1", "2026-01-01T00:00:00Z", "/w", "m", 2, Some("list files")),
            &events,
        );
        assert!(md.starts_with("# list files\n"), "{md}");
        assert!(md.contains("## User\n\nlist files"), "{md}");
        assert!(
            md.contains("### Tool call: glob (`c1`)\n\n```json\n{\n  \"pattern\": \"*\"\n}\n```"),
            "{md}"
        );
        assert!(
            md.contains("### Tool result: glob (`c1`) ok\n\n```\na.rs\n```"),
            "{md}"
        );
        assert!(md.contains("_[interrupted]_"), "{md}");
        assert_eq!(fence("", "a ``` b"), "````\na ``` b\n````");
    }

    #[test]
    fn prefix_and_home_edge_cases() {
        assert_eq!(unique_prefix_len(["abc"].into_iter()), 3);
        assert_eq!(unique_prefix_len(["abcdefghij", "abcdefghzz"].into_iter()), 9);
        assert_eq!(tilde("/home/meow", Some("/home/me")), "/home/meow");
        assert_eq!(tilde("/home/me", Some("/home/me")), "~");
        assert_eq!(when("garbage", &chrono::Utc), "garbage");
    }
}
