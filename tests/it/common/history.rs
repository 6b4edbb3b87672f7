//! Reads stored sessions straight from the database (SQLite file or PostgreSQL URL) and
//! checks that each one is a history a strict vendor accepts: every tool call answered
//! before the next user or assistant message, results matching a call, call ids unique,
//! `seq` contiguous, and no two assistant answers in a row (two writers interleaving).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;
use sqlx::{Connection, Row};

/// One stored event, as the tests look at it.
#[derive(Clone, Debug)]
pub struct Stored {
    pub seq: i64,
    pub kind: String,
    pub content: String,
    pub data: Value,
}

/// One stored session with its events in order.
#[derive(Clone, Debug)]
pub struct Session {
    pub id: String,
    pub forked_from: Option<String>,
    pub events: Vec<Stored>,
}

impl Session {
    /// The canonical messages only, as `kind:content`.
    pub fn messages(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind.as_str(),
                    "user" | "assistant" | "tool_call" | "tool_result" | "system"
                )
            })
            .map(|e| format!("{}:{}", e.kind, e.content))
            .collect()
    }
}

/// Every session in the database at `url` (`sqlite://…` or `postgres://…`).
pub fn sessions(url: &str) -> Vec<Session> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(read(url))
}

/// `sessions`, or `None` while the database or its tables do not exist yet.
pub fn try_sessions(url: &str) -> Option<Vec<Session>> {
    let url = url.to_string();
    std::thread::spawn(move || sessions(&url)).join().ok()
}

/// (session id, forked_from).
type Head = (String, Option<String>);
/// (session id, seq, kind, content, data).
type EventRow = (String, i64, String, String, Option<String>);

async fn read(url: &str) -> Vec<Session> {
    let (heads, rows): (Vec<Head>, Vec<EventRow>) = if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        let heads = sqlx::query("SELECT id, forked_from FROM sessions ORDER BY created_at")
            .fetch_all(&mut c)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let rows = sqlx::query(
            "SELECT session_id, seq, kind, content, data::text FROM events ORDER BY session_id, seq",
        )
        .fetch_all(&mut c)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
        (heads, rows)
    } else {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        let heads = sqlx::query("SELECT id, forked_from FROM sessions ORDER BY created_at")
            .fetch_all(&mut c)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let rows =
            sqlx::query("SELECT session_id, seq, kind, content, data FROM events ORDER BY session_id, seq")
                .fetch_all(&mut c)
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
                .collect();
        (heads, rows)
    };
    let mut events: BTreeMap<String, Vec<Stored>> = BTreeMap::new();
    for (sid, seq, kind, content, data) in rows {
        let data = data
            .map(|d| serde_json::from_str(&d).unwrap())
            .unwrap_or(Value::Null);
        events.entry(sid).or_default().push(Stored {
            seq,
            kind,
            content,
            data,
        });
    }
    heads
        .into_iter()
        .map(|(id, forked_from)| Session {
            events: events.remove(&id).unwrap_or_default(),
            id,
            forked_from,
        })
        .collect()
}

/// Every way `s` breaks a strict vendor's rules or shows interleaved writers.
pub fn violations(s: &Session) -> Vec<String> {
    let mut bad = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut seen_ids = HashSet::new();
    let mut last_message: Option<&str> = None;
    for (i, e) in s.events.iter().enumerate() {
        if e.seq != i as i64 + 1 {
            bad.push(format!("seq {} at position {}", e.seq, i + 1));
        }
        match e.kind.as_str() {
            "tool_call" => {
                let id = e.data["id"].as_str().unwrap_or_default().to_string();
                if !seen_ids.insert(id.clone()) {
                    bad.push(format!("seq {}: duplicate tool call id {id}", e.seq));
                }
                pending.push(id);
            }
            "tool_result" => {
                let id = e.data["tool_call_id"].as_str().unwrap_or_default();
                match pending.iter().position(|p| p == id) {
                    Some(at) => {
                        pending.remove(at);
                    }
                    None => bad.push(format!("seq {}: result {id} answers no open call", e.seq)),
                }
            }
            "user" | "assistant" => {
                if !pending.is_empty() {
                    bad.push(format!("seq {}: {} before results of {pending:?}", e.seq, e.kind));
                }
                if e.kind == "assistant" && last_message == Some("assistant") {
                    bad.push(format!("seq {}: two assistant answers in a row", e.seq));
                }
            }
            _ => continue,
        }
        last_message = Some(e.kind.as_str());
    }
    if !pending.is_empty() {
        bad.push(format!("ends with unanswered calls {pending:?}"));
    }
    bad
}
