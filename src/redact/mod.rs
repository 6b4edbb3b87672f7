//! Keeps secrets out of everything ikigai emits or keeps: the value of every configured
//! key becomes `[redacted]` (also without a vendor prefix such as `sk-`) everywhere, and in
//! ikigai's own messages passwords in URLs (`user:pw@`, `?password=`, `?token=`, any
//! parameter naming a pass/secret/key) are hidden. Built once from the config (`Config::redactor`); pure string work, no IO.

use std::borrow::Cow;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};

pub(crate) mod urls;

use urls::scrub_urls;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";
/// Shortest value scrubbed: shorter ones would mangle ordinary text.
pub const MIN_SECRET_LEN: usize = 8;

/// Replaces known secret values and URL passwords. Its `Debug` never shows a secret.
#[derive(Clone, Default)]
pub struct Redactor {
    /// The values to hide, longest first; empty when no key is configured.
    values: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} values)", self.values.len())
    }
}

impl Redactor {
    /// A redactor for these secret values (too short ones are ignored).
    pub fn new<I: IntoIterator<Item = String>>(secrets: I) -> Self {
        let mut values: Vec<String> = Vec::new();
        for s in secrets {
            for v in variants(&s) {
                if v.chars().count() >= MIN_SECRET_LEN && !values.contains(&v) {
                    values.push(v);
                }
            }
        }
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        let matcher = if values.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&values)
                .ok()
        };
        Redactor { values, matcher }
    }

    /// `text` with every secret value replaced. Tool output and model text get only this:
    /// rewriting URLs in a file the model reads would corrupt its edits.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.matcher {
            Some(m) if m.is_match(text) => {
                Cow::Owned(m.replace_all(text, &vec![REDACTED; self.values.len()]))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// ikigai's own messages (notices, retries, errors): secret values and URL passwords.
    pub fn scrub_notice<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.scrub(text) {
            Cow::Borrowed(t) => scrub_urls(t),
            Cow::Owned(t) => Cow::Owned(scrub_urls(&t).into_owned()),
        }
    }

    /// Scrubs `text` in place.
    pub fn scrub_in_place(&self, text: &mut String) {
        if let Cow::Owned(s) = self.scrub(text) {
            *text = s;
        }
    }

    /// Scrubs one of ikigai's own messages in place (see `scrub_notice`).
    pub fn scrub_notice_in_place(&self, text: &mut String) {
        if let Cow::Owned(s) = self.scrub_notice(text) {
            *text = s;
        }
    }

    /// Scrubs every string in a JSON value.
    pub fn scrub_json(&self, v: &mut serde_json::Value) {
        use serde_json::Value;
        match v {
            Value::String(s) => self.scrub_in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.scrub_json(i)),
            Value::Object(map) => map.values_mut().for_each(|i| self.scrub_json(i)),
            _ => {}
        }
    }

    /// How many bytes at the end of `text` could be the start of a secret and must wait
    /// for more text before being shown (streaming).
    pub fn hold_back(&self, text: &str) -> usize {
        let mut hold = 0;
        for v in &self.values {
            let longest = (1..v.len().min(text.len() + 1))
                .rev()
                .find(|&n| v.is_char_boundary(n) && text.ends_with(&v[..n]))
                .unwrap_or(0);
            hold = hold.max(longest);
        }
        hold
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The value itself and the value after each short vendor prefix (`sk-`, `sk-proj-`,
/// `gsk_`, `xai-`…).
fn variants(secret: &str) -> Vec<String> {
    let secret = secret.trim();
    let mut out = vec![secret.to_string()];
    for (i, c) in secret.char_indices().take(16) {
        if c == '-' || c == '_' {
            out.push(secret[i + 1..].to_string());
        }
    }
    out
}

/// Scrubs every text a message carries (content, tool arguments, tool output).
pub fn scrub_message(r: &Redactor, m: &mut crate::message::Message) {
    use crate::message::Data;
    r.scrub_in_place(&mut m.content);
    match m.data.as_deref_mut() {
        Some(Data::ToolCall(c)) => r.scrub_in_place(&mut c.function.arguments),
        Some(Data::ToolResult(t)) => r.scrub_in_place(&mut t.output),
        // Opaque reasoning payloads are signed by the vendor; the visible text is `content`.
        Some(Data::Reasoning(_) | Data::Compaction(_) | Data::Attachments(_)) | None => {}
    }
}

/// Whether `scrub_message` would change `m`.
fn has_secret(r: &Redactor, m: &crate::message::Message) -> bool {
    use crate::message::Data;
    let hit = |t: &str| matches!(r.scrub(t), Cow::Owned(_));
    hit(&m.content)
        || match m.data.as_deref() {
            Some(Data::ToolCall(c)) => hit(&c.function.arguments),
            Some(Data::ToolResult(t)) => hit(&t.output),
            Some(Data::Reasoning(_) | Data::Compaction(_) | Data::Attachments(_)) | None => false,
        }
}

/// Scrubs every text an event carries.
pub fn scrub_event(r: &Redactor, ev: &mut crate::protocol::Event) {
    use crate::protocol::Event;
    match ev {
        Event::SessionStarted { history, .. } => {
            // Shared with the agent's conversation: copied only when there is a secret.
            if history.iter().any(|m| has_secret(r, m)) {
                history.make_mut().iter_mut().for_each(|m| scrub_message(r, m));
            }
        }
        Event::UserMessage { text, .. } | Event::TextDelta { text } | Event::ReasoningDelta { text } => {
            r.scrub_in_place(text)
        }
        Event::Notice { text, .. } => r.scrub_notice_in_place(text),
        Event::ToolCallStarted { arguments, .. } => r.scrub_in_place(arguments),
        Event::ToolCallFinished { summary, output, .. } => {
            r.scrub_in_place(summary);
            r.scrub_in_place(output);
        }
        Event::Retrying { reason, .. } => r.scrub_notice_in_place(reason),
        Event::ApprovalRequested {
            arguments,
            reason,
            always,
            ..
        } => {
            r.scrub_in_place(arguments);
            r.scrub_in_place(reason);
            always.iter_mut().for_each(|a| r.scrub_in_place(a));
        }
        Event::Permission(rec) => r.scrub_in_place(&mut rec.reason),
        Event::Permissions {
            rules,
            remembered,
            session,
            ..
        } => rules
            .iter_mut()
            .chain(remembered.iter_mut())
            .chain(session.iter_mut())
            .for_each(|t| r.scrub_in_place(t)),
        Event::ToolStderr { text, .. } | Event::ToolCallProgress { text, .. } => r.scrub_in_place(text),
        Event::UndoRefused { files, .. } => files.iter_mut().for_each(|f| r.scrub_in_place(f)),
        Event::ToolOutputDelta { text, .. } => r.scrub_in_place(text),
        Event::PlanUpdated { steps } => steps.iter_mut().for_each(|s| r.scrub_in_place(&mut s.step)),
        Event::Hook {
            command,
            outcome,
            line,
            source,
            ..
        } => {
            r.scrub_notice_in_place(command);
            r.scrub_notice_in_place(outcome);
            r.scrub_notice_in_place(line);
            r.scrub_notice_in_place(source);
        }
        // A server's error text may echo what it was sent.
        Event::Providers { providers } => providers
            .iter_mut()
            .filter_map(|p| p.error.as_mut())
            .for_each(|e| r.scrub_notice_in_place(e)),
        Event::SubAgent { event, .. } => scrub_event(r, event),
        Event::ModelChanged { .. }
        | Event::TurnStarted
        | Event::Usage { .. }
        | Event::Spend { .. }
        | Event::Compacted { .. }
        | Event::TurnEnded { .. }
        | Event::Sessions { .. }
        | Event::ApprovalMode { .. } => {}
    }
}

static GLOBAL: std::sync::RwLock<Option<Arc<Redactor>>> = std::sync::RwLock::new(None);

/// Sets the process-wide redactor for text printed outside an agent (errors in `main.rs`,
/// subcommands): at start, and again when a folder trusted at start adds secrets.
pub fn install(r: Arc<Redactor>) {
    *GLOBAL.write().unwrap_or_else(|e| e.into_inner()) = Some(r);
}

/// The process-wide redactor; one that only hides URL passwords before `install`.
pub fn global() -> Arc<Redactor> {
    GLOBAL
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_history_is_copied_only_to_hide_a_secret() {
        use crate::message::Message;
        use crate::protocol::{Event, History};
        let r = Redactor::new(["sk-SECRET123".to_string()]);
        let started = |history: &History| Event::SessionStarted {
            id: None,
            model: "m".into(),
            history: history.clone(),
            tokens: 0,
            cost: None,
            interrupted: vec![],
        };
        let shared = |ev: &Event, kept: &History| match ev {
            Event::SessionStarted { history, .. } => std::ptr::eq(history.as_ptr(), kept.as_ptr()),
            _ => unreachable!(),
        };
        let clean = History::from(vec![Message::user("hi"), Message::assistant("hello")]);
        let mut ev = started(&clean);
        scrub_event(&r, &mut ev);
        assert!(shared(&ev, &clean), "nothing to hide: no copy");
        let secret = History::from(vec![
            Message::user("hi"),
            Message::tool_result("c", "bash", "ok", "key sk-SECRET123", true),
        ]);
        let mut ev = started(&secret);
        scrub_event(&r, &mut ev);
        assert!(!shared(&ev, &secret), "a copy to scrub");
        let Event::SessionStarted { history, .. } = &ev else {
            unreachable!()
        };
        assert_eq!(history[1].as_tool_result().unwrap().output, "key [redacted]");
        assert_eq!(
            secret[1].as_tool_result().unwrap().output,
            "key sk-SECRET123",
            "the agent's own is untouched"
        );
    }

    #[test]
    fn exact_value_and_value_without_vendor_prefix() {
        let r = Redactor::new(["sk-SECRET123".to_string()]);
        assert_eq!(r.scrub("key sk-SECRET123 here"), "key [redacted] here");
        assert_eq!(r.scrub("400: raw:SECRET123"), "400: raw:[redacted]");
        assert_eq!(r.scrub("nothing"), "nothing");
        let r = Redactor::new(["sk-proj-abcdefghijkl".to_string()]);
        assert_eq!(
            r.scrub("abcdefghijkl / proj-abcdefghijkl"),
            "[redacted] / [redacted]"
        );
    }

    #[test]
    fn short_values_are_not_scrubbed() {
        let r = Redactor::new(["k".to_string(), "sk-abc".to_string()]);
        assert!(r.is_empty());
        assert_eq!(r.scrub("k sk-abc"), "k sk-abc");
    }

    #[test]
    fn url_passwords_are_hidden() {
        let r = Redactor::default();
        assert_eq!(
            r.scrub_notice("postgres://u:hunter2@h/db failed"),
            "postgres://u:redacted@h/db failed"
        );
        assert_eq!(
            r.scrub_notice("postgres://u@h/db?sslmode=require&password=supersecretpw&x=1"),
            "postgres://u@h/db?sslmode=require&password=redacted&x=1"
        );
        assert_eq!(
            r.scrub_notice("http://h/v1?api_key=abc&sslpassword=p&token=t"),
            "http://h/v1?api_key=redacted&sslpassword=redacted&token=redacted"
        );
        assert_eq!(
            r.scrub_notice("a=b and http://h/x?page=2"),
            "a=b and http://h/x?page=2"
        );
        // Tool output and model text keep their URLs (a file the model edits stays intact).
        assert_eq!(r.scrub("http://u:pw@h/?token=t"), "http://u:pw@h/?token=t");
    }

    #[test]
    fn json_strings_are_scrubbed_everywhere() {
        let r = Redactor::new(["SECRET123456".to_string()]);
        let mut v = serde_json::json!({"a": ["x SECRET123456"], "b": {"c": "SECRET123456"}, "n": 1});
        r.scrub_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["x [redacted]"], "b": {"c": "[redacted]"}, "n": 1})
        );
    }

    #[test]
    fn hold_back_keeps_a_possible_secret_start() {
        let r = Redactor::new(["SECRET123456".to_string()]);
        assert_eq!(r.hold_back("text SECR"), 4);
        assert_eq!(r.hold_back("text"), 0);
        assert_eq!(r.hold_back("S"), 1);
        assert_eq!(r.hold_back("é"), 0);
    }
}
