//! The `update_plan` tool: the model keeps a plan the user can see, sending the whole list
//! of steps each time. It checks the steps and changes nothing; the agent's turn shows
//! them (`Event::PlanUpdated`). Owns no rendering; its schema stays small (it is sent with
//! every request).

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::UPDATE_PLAN;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use crate::protocol::{PlanStep, StepStatus};

pub(crate) const NAME: &str = UPDATE_PLAN.name;
/// The most steps a plan may have.
const MAX_STEPS: usize = 50;
/// The longest step, in characters.
const MAX_STEP_CHARS: usize = 300;

pub(crate) struct UpdatePlan;

#[derive(Deserialize)]
struct Args {
    steps: Vec<PlanStep>,
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| {
    let schema = json!({
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "step": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
            },
            "required": ["step", "status"]
        }}},
        "required": ["steps"]
    });
    ToolSchema {
        name: NAME.into(),
        description: "Show the user your plan.\n\
            Use it for tasks of three or more steps: send the whole list each time a step \
            starts or is done, with one step in_progress."
            .into(),
        parameters: vec![super::ParamSpec::new("steps", "array", "", true)],
        json_schema: Some(schema),
    }
});

#[async_trait]
impl Tool for UpdatePlan {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&UPDATE_PLAN)
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let steps = parse(args)?;
        let done = steps.iter().filter(|s| s.status == StepStatus::Done).count();
        let summary = format!("{done}/{} done", steps.len());
        Ok(ToolOutput::new(json!({"output": "Plan updated."}), summary))
    }
}

/// The steps of a call's arguments, checked.
fn parse(args: Value) -> Result<Vec<PlanStep>, ToolError> {
    let Args { steps } = serde_json::from_value(args).map_err(|e| {
        ToolError::InvalidParams(format!(
            "update_plan takes {{\"steps\": [{{\"step\": \"…\", \"status\": \"pending\" | \"in_progress\" | \"done\"}}]}}: {e}"
        ))
    })?;
    if steps.len() > MAX_STEPS {
        return Err(ToolError::InvalidParams(format!(
            "A plan has at most {MAX_STEPS} steps ({} were sent); group them.",
            steps.len()
        )));
    }
    if let Some(i) = steps.iter().position(|s| s.step.trim().is_empty()) {
        return Err(ToolError::InvalidParams(format!("Step {} is empty.", i + 1)));
    }
    if let Some(i) = steps.iter().position(|s| s.step.chars().count() > MAX_STEP_CHARS) {
        return Err(ToolError::InvalidParams(format!(
            "Step {} is longer than {MAX_STEP_CHARS} characters; say it in one line.",
            i + 1
        )));
    }
    Ok(steps)
}

/// The plan a successful call's raw arguments hold (for the front ends).
pub(crate) fn steps(arguments: &str) -> Option<Vec<PlanStep>> {
    parse(serde_json::from_str(arguments).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::wire_chars;

    /// The tokens the schema costs every request, estimated as the budget does (bytes/4
    /// of the parameters as sent, the description, and the per-tool overhead).
    fn schema_tokens() -> u64 {
        let s = UpdatePlan.schema();
        (wire_chars(&s.to_json_schema().to_string()) + wire_chars(&s.description) + wire_chars(&s.name) + 40)
            / 4
    }

    #[test]
    fn the_schema_costs_at_most_150_tokens() {
        let t = schema_tokens();
        assert!(t <= 150, "{t} tokens");
        let s = UpdatePlan.schema();
        assert!(s.description.contains("three or more steps"), "{}", s.description);
    }

    #[tokio::test]
    async fn a_plan_is_checked_and_summarised() {
        let ctx = ToolContext::new(".".into(), 1000, std::time::Duration::from_secs(1));
        let args = json!({"steps": [
            {"step": "read", "status": "done"},
            {"step": "fix", "status": "in_progress"},
            {"step": "test", "status": "pending"}
        ]});
        let out = UpdatePlan.call(args.clone(), &ctx).await.unwrap();
        assert_eq!(out.summary, "1/3 done");
        assert_eq!(
            steps(&args.to_string()).unwrap()[1].status,
            StepStatus::InProgress
        );
        for (bad, says) in [
            (
                json!({"steps": [{"step": "x", "status": "started"}]}),
                "unknown variant",
            ),
            (
                json!({"steps": [{"step": " ", "status": "done"}]}),
                "Step 1 is empty",
            ),
            (json!({}), "missing field `steps`"),
            (
                json!({"steps": vec![json!({"step": "s", "status": "done"}); 51]}),
                "at most 50",
            ),
        ] {
            let err = UpdatePlan.call(bad, &ctx).await.unwrap_err();
            assert_eq!(err.code(), super::super::ErrorCode::InvalidParams);
            assert!(err.to_string().contains(says), "{err}");
        }
    }
}
