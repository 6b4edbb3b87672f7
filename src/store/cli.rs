//! `ikigai sessions`: the stored sessions, newest first, one aligned line each.
//! This command is its own front end, so it prints; the table itself is built purely.

use chrono::TimeZone;
use unicode_width::UnicodeWidthStr;

use super::SessionInfo;
use crate::app::AppError;
use crate::config::Config;

/// Prints the session list; returns the exit code.
pub async fn list(config: &Config) -> Result<u8, AppError> {
    // Store notices are for chat sessions; here a failure is the command's error.
    let (notices, _ignored) = tokio::sync::mpsc::unbounded_channel();
    let store = super::open(config, notices);
    let sessions = store.list().await?;
    let home = std::env::var("HOME").ok();
    print!("{}", format_sessions(&sessions, home.as_deref(), &chrono::Local));
    Ok(0)
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
    let rows: Vec<[String; 6]> = sessions
        .iter()
        .map(|s| {
            [
                s.id.chars().take(id_len).collect(),
                when(&s.updated_at, tz),
                tilde(&s.cwd, home),
                s.model.clone(),
                s.messages.to_string(),
                s.title.clone().unwrap_or_else(|| "(no message yet)".into()),
            ]
        })
        .collect();
    let header = ["ID", "WHEN", "DIRECTORY", "MODEL", "MSGS", "TITLE"].map(String::from);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.width());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            match i {
                // Counts right-aligned; the title is last and not padded.
                4 => line.push_str(&format!("{}{cell}  ", " ".repeat(widths[4] - cell.width()))),
                5 => line.push_str(cell),
                _ => line.push_str(&format!("{cell}{}  ", " ".repeat(widths[i] - cell.width()))),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
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
        }
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
    fn prefix_and_home_edge_cases() {
        assert_eq!(unique_prefix_len(["abc"].into_iter()), 3);
        assert_eq!(unique_prefix_len(["abcdefghij", "abcdefghzz"].into_iter()), 9);
        assert_eq!(tilde("/home/meow", Some("/home/me")), "/home/meow");
        assert_eq!(tilde("/home/me", Some("/home/me")), "~");
        assert_eq!(when("garbage", &chrono::Utc), "garbage");
    }
}
