//! How a tool result reads for a person, the same in every front end (plain, TUI,
//! `ikigai export`): the text of its envelope, what a stopped call printed, and the result
//! line that does not say the error twice. Pure text; draws and prints nothing.

use crate::tool_vocab::Envelope;

/// The output or error an envelope carries; text that is not an envelope, as it is.
pub(crate) fn text(output: &str) -> String {
    match Envelope::parse(output) {
        Some(e) => e.text(),
        None => output.to_string(),
    }
}

/// What a call that timed out or was interrupted printed before it stopped, or "".
pub(crate) fn partial_output(output: &str) -> String {
    Envelope::parse(output)
        .and_then(|e| e.partial_output)
        .unwrap_or_default()
}

/// The message put on the last result allowed this turn, if it is that one.
pub(crate) fn limit_message(output: &str) -> Option<String> {
    Envelope::parse(output).and_then(|e| e.limit_message)
}

/// Whether the result only says the tool call limit stopped the call (the agent's notice
/// names the limit once).
pub(crate) fn only_limit(output: &str) -> bool {
    Envelope::parse(output).is_some_and(|e| e.only_limit())
}

/// The result line and the body under it. An error's summary ends with the error itself
/// (`CODE: message`): a one-line message is shown in the line only, a longer one under
/// the bare code.
pub(crate) fn head_and_body<'a>(summary: &'a str, body: &'a str) -> (&'a str, &'a str) {
    let body_trimmed = body.trim_end_matches('\n');
    let summary = summary.trim_end_matches('\n');
    if body_trimmed.trim().is_empty() {
        return (summary, "");
    }
    if summary.trim() == body_trimmed.trim() {
        return (summary, "");
    }
    match summary.strip_suffix(body_trimmed) {
        Some(_) if !body_trimmed.contains('\n') => (summary, ""),
        Some(code) if !code.trim().is_empty() => (code.trim_end_matches([':', ' ']), body),
        _ => (summary, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_said_once() {
        let one = "glob: missing required parameter `pattern` (string)";
        let summary = format!("INVALID_PARAMS: {one}");
        assert_eq!(head_and_body(&summary, one), (summary.as_str(), ""));
        let many = "not JSON:\n{\"a\":";
        let summary = format!("INVALID_PARAMS: {many}");
        assert_eq!(head_and_body(&summary, many), ("INVALID_PARAMS", many));
        // A body that is not the summary's end stays under it.
        assert_eq!(head_and_body("2 files", "a.rs\nb.rs"), ("2 files", "a.rs\nb.rs"));
        assert_eq!(head_and_body("exit 0", ""), ("exit 0", ""));
        assert_eq!(head_and_body("ok\n", "ok"), ("ok", ""));
    }

    #[test]
    fn envelopes_and_other_text() {
        let limit = r#"{"tool_success":false,"error":"Not executed","limit_reached":true}"#;
        assert!(only_limit(limit));
        assert_eq!(text(limit), "Not executed");
        let done =
            r#"{"tool_success":true,"result":{"output":"x"},"limit_reached":true,"limit_message":"stop"}"#;
        assert!(!only_limit(done));
        assert_eq!(limit_message(done).as_deref(), Some("stop"));
        assert_eq!(text("raw text"), "raw text");
        assert_eq!(
            partial_output(r#"{"tool_success":false,"error":"t","partial_output":"p"}"#),
            "p"
        );
        assert_eq!(partial_output("raw"), "");
    }
}
