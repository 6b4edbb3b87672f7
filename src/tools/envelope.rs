//! The result envelope the model sees: `{"tool_success": true, "result": …}` or
//! `{"tool_success": false, "error": …, "error_code": …}`, plus the tool-turn limit marker.

use serde_json::{Value, json};

use super::{ToolError, ToolOutput};

/// Wraps a tool's own result.
pub fn success(output: &ToolOutput) -> Value {
    json!({"tool_success": true, "result": output.result})
}

/// Wraps a failure of the tool itself.
pub fn failure(err: &ToolError) -> Value {
    let mut v = json!({"tool_success": false, "error": err.to_string(), "error_code": err.code()});
    if let ToolError::Timeout { partial_output, .. } = err {
        v["partial_output"] = Value::String(partial_output.clone());
    }
    v
}

/// The message put on the last result when `max_tool_turns` is reached.
pub fn limit_message(limit: u32) -> String {
    format!("Tool call limit reached ({limit}). Stopping tool loop.")
}

/// Marks an envelope as the last one allowed this turn.
pub fn mark_limit(envelope: &mut Value, limit: u32) {
    envelope["limit_reached"] = Value::Bool(true);
    envelope["limit_message"] = Value::String(limit_message(limit));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_design() {
        let ok = success(&ToolOutput::new(json!({"output": "a", "count": 1}), "1 file"));
        assert_eq!(
            ok,
            json!({"tool_success": true, "result": {"output": "a", "count": 1}})
        );
        let bad = failure(&ToolError::NotFound("Unknown tool: nope".into()));
        assert_eq!(
            bad,
            json!({"tool_success": false, "error": "Unknown tool: nope", "error_code": "TOOL_NOT_FOUND"})
        );
        let mut e = ok.clone();
        mark_limit(&mut e, 3);
        assert_eq!(e["limit_reached"], true);
        assert_eq!(
            e["limit_message"],
            "Tool call limit reached (3). Stopping tool loop."
        );
    }
}
