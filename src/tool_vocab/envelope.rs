//! The result envelope the model gets for every tool call, as one serde type:
//! `{"tool_success": true, "result": …}` for a tool that ran (its own result inside), or
//! `{"tool_success": false, "error": …, "error_code": …}` when it did not, plus the
//! tool-call limit marker. Every writer of an envelope builds this type; readers parse it
//! back with `Envelope::parse`. Knows no tool, no wire format and no front end.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{ToolError, ToolOutput};
use crate::message::Message;

/// Why a call has no result of its own (`error_code` of a failed envelope).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Ran past its time limit.
    ToolTimeout,
    /// Crashed, could not start, or was interrupted before it finished.
    ToolCrashed,
    /// Printed something that is not its result JSON.
    InvalidOutput,
    /// Arguments missing, wrongly typed, unparsable, or cut off by the output limit.
    InvalidParams,
    /// No tool of that name.
    ToolNotFound,
    /// The same call again, past `max_identical_calls` in one turn: not run.
    RepeatedCall,
    /// Past `max_tool_turns` in one turn: not run.
    LimitReached,
    /// The permission gate refused it (a rule, the mode, the user): not run.
    NotApproved,
}

impl ErrorCode {
    /// The code as the model and the front ends read it (`INVALID_PARAMS`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ToolTimeout => "TOOL_TIMEOUT",
            ErrorCode::ToolCrashed => "TOOL_CRASHED",
            ErrorCode::InvalidOutput => "INVALID_OUTPUT",
            ErrorCode::InvalidParams => "INVALID_PARAMS",
            ErrorCode::ToolNotFound => "TOOL_NOT_FOUND",
            ErrorCode::RepeatedCall => "REPEATED_CALL",
            ErrorCode::LimitReached => "LIMIT_REACHED",
            ErrorCode::NotApproved => "NOT_APPROVED",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text given to the model when a tool call never got its result.
pub const INTERRUPTED_TOOL_ERROR: &str = "interrupted before the tool finished";

/// What the model gets for one tool call. Fields are declared in the order they are
/// written (alphabetical, as the envelope was always serialised).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Why the call has no result (set when `tool_success` is false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_code"
    )]
    pub error_code: Option<ErrorCode>,
    /// Set on the last result allowed by `max_tool_turns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_message: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub limit_reached: bool,
    /// What ikigai changed in the arguments before the tool saw them (an alias read as
    /// the real name, unknown parameters ignored), one sentence each, `; `-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What a call that timed out or was interrupted printed before it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_output: Option<String>,
    /// The tool's own result object (`{"output": …}`, `{"error": …}` for an operation
    /// that failed), when the tool ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    pub tool_success: bool,
}

/// An `error_code` this binary does not know (a newer ikigai wrote it) reads as none.
fn known_code<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ErrorCode>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(v.and_then(|v| serde_json::from_value(v).ok()))
}

impl Envelope {
    /// A tool that ran: its own result inside, its objects' keys sorted (the text the
    /// model gets does not follow the order a tool built them in: serde_json keeps that
    /// order since the ACP SDK turned on its `preserve_order`).
    pub fn success(mut result: Value) -> Self {
        result.sort_all_objects();
        Envelope {
            tool_success: true,
            result: Some(result),
            ..Default::default()
        }
    }

    /// A call with no result of its own.
    pub fn failure(code: ErrorCode, error: impl Into<String>) -> Self {
        Envelope {
            tool_success: false,
            error: Some(error.into()),
            error_code: Some(code),
            ..Default::default()
        }
    }

    /// Wraps a tool's own result.
    pub fn of_output(output: &ToolOutput) -> Self {
        Envelope::success(output.result.clone())
    }

    /// Wraps a failure of the tool itself (a timeout keeps what it printed).
    pub fn of_error(err: &ToolError) -> Self {
        let e = Envelope::failure(err.code(), err.to_string());
        match err {
            ToolError::Timeout { partial_output, .. } => e.with_partial(partial_output),
            _ => e,
        }
    }

    /// A call interrupted before it finished, with what it printed until then.
    pub fn interrupted(partial_output: Option<&str>) -> Self {
        let e = Envelope::failure(ErrorCode::ToolCrashed, INTERRUPTED_TOOL_ERROR);
        match partial_output {
            Some(p) => e.with_partial(p),
            None => e,
        }
    }

    /// Adds what the call printed before it stopped (nothing when empty).
    pub fn with_partial(mut self, partial: &str) -> Self {
        self.partial_output = Some(partial.to_string()).filter(|p| !p.is_empty());
        self
    }

    /// Adds what was changed in the arguments (nothing when there were no changes).
    pub fn with_notes(mut self, notes: &[String]) -> Self {
        if !notes.is_empty() {
            self.note = Some(notes.join("; "));
        }
        self
    }

    /// Marks the last envelope allowed this turn.
    pub fn mark_limit(&mut self, limit: u32) {
        self.limit_reached = true;
        self.limit_message = Some(limit_message(limit));
    }

    /// The envelope as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads an envelope back from its JSON text; `None` for anything else (an output
    /// stored by something that did not write envelopes).
    pub fn parse(text: &str) -> Option<Envelope> {
        let v: Value = serde_json::from_str(text).ok()?;
        v.get("tool_success")?.as_bool()?;
        serde_json::from_value(v).ok()
    }

    /// The text a person wants from it: the tool's output or its error, else the error
    /// of the call; a result of another shape as indented JSON.
    pub fn text(&self) -> String {
        let pick = |v: &Value| {
            ["output", "error"].iter().find_map(|k| match v.get(*k)? {
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            })
        };
        match &self.result {
            Some(r) => pick(r).unwrap_or_else(|| serde_json::to_string_pretty(r).unwrap_or_default()),
            None => self.error.clone().unwrap_or_default(),
        }
    }

    /// What the sandbox denied, when the call failed because of it: the `sandbox` field of
    /// a command's result, or the `(sandbox: …)` an external tool's crash names
    /// (`permissions::sandbox_denials` writes both).
    pub fn sandbox_denial(&self) -> Option<String> {
        if let Some(why) = self.result.as_ref().and_then(|r| r.get("sandbox")?.as_str()) {
            return Some(why.to_string());
        }
        let error = self.error.as_deref()?;
        let start = error.find("(sandbox: ")? + 1;
        let tail = &error[start..];
        let advice = tail.find("run it outside the sandbox to ")?;
        let end = advice + tail[advice..].find(')')?;
        Some(tail[..end].to_string())
    }

    /// The result of a call that never ran because the limit was reached (the agent's
    /// notice names the limit once; front ends need not repeat it).
    pub fn only_limit(&self) -> bool {
        !self.tool_success && self.limit_reached && self.result.is_none()
    }
}

/// The JSON text sent to the model and stored.
impl std::fmt::Display for Envelope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

/// The message put on the last result when `max_tool_turns` is reached.
pub fn limit_message(limit: u32) -> String {
    format!("Tool call limit reached ({limit}). Stopping tool loop.")
}

/// The result recorded for a tool call that was interrupted or never ran, with what it
/// printed before the cancel when there is any.
pub fn interrupted_result(id: &str, name: &str, partial_output: Option<&str>) -> Message {
    let output = Envelope::interrupted(partial_output).to_string();
    Message::tool_result(id, name, INTERRUPTED_TOOL_ERROR, output, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_sandbox_denial_is_read_from_a_command_or_an_external_tool() {
        let why = "sandbox: write outside the workspace denied: /etc/x (sandbox = \"workspace-write\" allows writes only in /w, /tmp); run it outside the sandbox to write there";
        let cmd = Envelope::success(json!({"output": "denied", "exit_code": 1, "sandbox": why}));
        assert_eq!(cmd.sandbox_denial().as_deref(), Some(why));
        let crash = Envelope::of_error(&ToolError::Crashed(format!(
            "Tool `t` crashed with exit code 1 ({why}); stderr:\nPermission denied (os error 13)"
        )));
        assert_eq!(crash.sandbox_denial().as_deref(), Some(why));
        let plain = Envelope::of_error(&ToolError::Crashed(
            "Tool `t` crashed with exit code 1 (oops)".into(),
        ));
        assert_eq!(plain.sandbox_denial(), None);
        assert_eq!(Envelope::success(json!({"output": "ok"})).sandbox_denial(), None);
    }

    #[test]
    fn shapes_match_the_design() {
        let ok = Envelope::of_output(&ToolOutput::new(json!({"output": "a", "count": 1}), "1 file"));
        assert_eq!(
            ok.to_value(),
            json!({"tool_success": true, "result": {"output": "a", "count": 1}})
        );
        let bad = Envelope::of_error(&ToolError::NotFound("Unknown tool: nope".into()));
        assert_eq!(
            bad.to_value(),
            json!({"tool_success": false, "error": "Unknown tool: nope", "error_code": "TOOL_NOT_FOUND"})
        );
        let mut e = ok.clone();
        e.mark_limit(3);
        assert_eq!(e.to_value()["limit_reached"], true);
        assert_eq!(
            e.to_value()["limit_message"],
            "Tool call limit reached (3). Stopping tool loop."
        );
    }

    #[test]
    fn the_text_is_what_json_macros_wrote_before() {
        // Keys in alphabetical order, as `json!` (without preserve_order) wrote them.
        let e = Envelope::of_error(&ToolError::Timeout {
            message: "timed out".into(),
            partial_output: "half".into(),
        });
        assert_eq!(
            e.to_string(),
            r#"{"error":"timed out","error_code":"TOOL_TIMEOUT","partial_output":"half","tool_success":false}"#
        );
        assert_eq!(
            Envelope::success(json!({"output": "x"})).to_string(),
            r#"{"result":{"output":"x"},"tool_success":true}"#
        );
    }

    #[test]
    fn parses_back_and_reads_unknown_codes_as_none() {
        let e = Envelope::interrupted(Some("step 1\n"));
        assert_eq!(Envelope::parse(&e.to_string()), Some(e.clone()));
        assert_eq!(e.text(), INTERRUPTED_TOOL_ERROR);
        let newer =
            Envelope::parse(r#"{"tool_success":false,"error":"x","error_code":"SOMETHING_NEW"}"#).unwrap();
        assert_eq!((newer.error_code, newer.text().as_str()), (None, "x"));
        assert_eq!(Envelope::parse("plain text"), None);
        assert_eq!(Envelope::parse(r#"{"output":"not an envelope"}"#), None);
        // Every code reads back as itself.
        for code in [
            ErrorCode::ToolTimeout,
            ErrorCode::ToolCrashed,
            ErrorCode::InvalidOutput,
            ErrorCode::InvalidParams,
            ErrorCode::ToolNotFound,
            ErrorCode::RepeatedCall,
            ErrorCode::LimitReached,
        ] {
            let e = Envelope::failure(code, "x");
            assert_eq!(e.to_value()["error_code"], code.as_str());
            assert_eq!(Envelope::parse(&e.to_string()).unwrap().error_code, Some(code));
        }
    }

    #[test]
    fn text_prefers_the_output_then_the_error() {
        let t = |v: Value| Envelope::success(v).text();
        assert_eq!(t(json!({"output": "a\nb", "count": 2})), "a\nb");
        assert_eq!(t(json!({"error": "File not found: x"})), "File not found: x");
        assert_eq!(t(json!({"ok": true})), "{\n  \"ok\": true\n}");
        assert_eq!(Envelope::failure(ErrorCode::InvalidParams, "bad").text(), "bad");
    }
}
