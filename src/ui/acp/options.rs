//! The session's configuration options as the editor shows them (`configOptions`): the
//! model (`provider/model`, from the providers ikigai can use without asking anything:
//! those with a key set, the configured sections, and the current one) and the approval
//! mode (the same choice as `session/set_mode`, for editors that show options instead of
//! modes). What choosing one does is `Op::SetModel` / `Op::SetApprovalMode` (mod.rs).
//! Data only.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
};

use crate::policy::Mode;

pub(crate) const MODEL: &str = "model";
pub(crate) const MODE: &str = "mode";

/// The options with their current values. `models` are `provider/model` ids; the
/// current one is offered even when it is not among them (a resumed session's).
pub(crate) fn all(models: &[String], model: &str, mode: Mode) -> Vec<SessionConfigOption> {
    let mut ids: Vec<String> = models.to_vec();
    if !ids.iter().any(|m| m == model) {
        ids.insert(0, model.to_string());
    }
    let choices: Vec<SessionConfigSelectOption> = ids
        .iter()
        .map(|id| SessionConfigSelectOption::new(id.clone(), id.clone()))
        .collect();
    let modes: Vec<SessionConfigSelectOption> = Mode::ALL
        .iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.as_str(), mode_name(*m).0)
                .description(mode_name(*m).1.to_string())
        })
        .collect();
    vec![
        SessionConfigOption::select(MODEL, "Model", model.to_string(), choices)
            .description("The provider and model the next requests go to".to_string())
            .category(SessionConfigOptionCategory::Model),
        SessionConfigOption::select(MODE, "Approvals", mode.as_str(), modes)
            .description("What runs without asking".to_string())
            .category(SessionConfigOptionCategory::Mode),
    ]
}

/// A mode's name and what it does, as the editor shows them.
pub(super) fn mode_name(m: Mode) -> (&'static str, &'static str) {
    match m {
        Mode::Auto => ("Auto", "runs every call the rules allow without asking"),
        Mode::Ask => (
            "Ask",
            "asks before a call that writes, runs or reaches the network",
        ),
        Mode::ReadOnly => ("Read-only", "reads only; refuses everything else"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{SessionConfigKind, SessionConfigSelectOptions};

    #[test]
    fn the_current_model_is_always_a_choice_and_modes_are_the_approval_modes() {
        let values = |o: &SessionConfigOption| match &o.kind {
            SessionConfigKind::Select(s) => match &s.options {
                SessionConfigSelectOptions::Ungrouped(v) => (
                    s.current_value.0.to_string(),
                    v.iter().map(|c| c.value.0.to_string()).collect::<Vec<_>>(),
                ),
                _ => panic!("grouped"),
            },
            _ => panic!("not a select"),
        };
        let models = vec!["openai/a".to_string(), "other/b".to_string()];
        let o = all(&models, "openai/a", Mode::Ask);
        assert_eq!(values(&o[0]), ("openai/a".into(), models.clone()));
        assert_eq!(values(&o[1]).0, "ask");
        assert_eq!(values(&o[1]).1, ["ask", "auto", "read-only"]);
        // A resumed session's model that is not offered otherwise is still the current one.
        let o = all(&models, "gone/c", Mode::ReadOnly);
        assert_eq!(values(&o[0]).1[0], "gone/c");
        assert_eq!(values(&o[1]).0, "read-only");
    }
}
