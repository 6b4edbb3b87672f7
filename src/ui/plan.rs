//! The model's plan as text, for every front end: one line per step with a mark for its
//! status (`✓` done, `▸` in progress, `○` pending) under a `Plan` heading. Pure; colour and
//! layout are the front ends' own.

use crate::protocol::{PlanStep, StepStatus};

/// The mark shown before a step.
pub(crate) fn mark(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Done => "✓",
        StepStatus::InProgress => "▸",
        StepStatus::Pending => "○",
    }
}

/// `Plan (1/3 done)`, or `Plan cleared` for an empty list.
pub(crate) fn heading(steps: &[PlanStep]) -> String {
    if steps.is_empty() {
        return "Plan cleared".to_string();
    }
    let done = steps.iter().filter(|s| s.status == StepStatus::Done).count();
    format!("Plan ({done}/{} done)", steps.len())
}

/// The heading, then `MARK step` per step.
pub(crate) fn lines(steps: &[PlanStep]) -> Vec<String> {
    let mut out = vec![heading(steps)];
    out.extend(steps.iter().map(|s| format!("  {} {}", mark(s.status), s.step)));
    out
}

/// The call line of an `update_plan` call, `update_plan(3 steps)`: the plan itself is shown
/// after it. `None` for any other call (or arguments that are not a plan).
pub(crate) fn call_line(name: &str, arguments: &str) -> Option<String> {
    if name != crate::tools::update_plan::NAME {
        return None;
    }
    let steps = crate::tools::update_plan::steps(arguments)?;
    let s = if steps.len() == 1 { "" } else { "s" };
    Some(format!("{name}({} step{s})", steps.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_reads_as_marked_lines() {
        let step = |s: &str, status| PlanStep {
            step: s.into(),
            status,
        };
        let steps = [
            step("read", StepStatus::Done),
            step("fix", StepStatus::InProgress),
            step("test", StepStatus::Pending),
        ];
        assert_eq!(
            lines(&steps),
            ["Plan (1/3 done)", "  ✓ read", "  ▸ fix", "  ○ test"]
        );
        assert_eq!(lines(&[]), ["Plan cleared"]);
        let args = r#"{"steps":[{"step":"a","status":"done"},{"step":"b","status":"pending"}]}"#;
        assert_eq!(
            call_line("update_plan", args).as_deref(),
            Some("update_plan(2 steps)")
        );
        assert_eq!(call_line("update_plan", "{}"), None);
        assert_eq!(call_line("bash", args), None);
    }
}
