//! `/cost`: the session's tokens and cost per model as text, for both front ends. A model
//! without a price shows its tokens and says so; no cost is ever guessed. Pure.

use crate::spend::{ModelSpend, dollars};

/// The answer to `/cost`, one line per model and a total.
pub(crate) fn format_spend(models: &[ModelSpend], cost: Option<f64>) -> String {
    if models.is_empty() {
        return "Nothing spent yet in this session.\n".to_string();
    }
    let mut out = String::from("Session cost by model:\n");
    for m in models {
        let cached = if m.cached > 0 {
            format!(" ({} cached)", m.cached)
        } else {
            String::new()
        };
        let price = match (m.cost, m.unpriced) {
            (Some(c), 0) => dollars(c),
            (Some(c), n) => format!("{} (+{n} responses without a price)", dollars(c)),
            (None, _) => "no price known (tokens only)".to_string(),
        };
        out.push_str(&format!(
            "  {}: {} in{cached}, {} out — {price}\n",
            m.model, m.input, m.output
        ));
    }
    match cost {
        Some(c) => out.push_str(&format!("Total: {}\n", dollars(c))),
        None => out.push_str("Total: no price known for these models\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_each_model_and_never_a_guessed_cost() {
        let priced = ModelSpend {
            model: "gpt-5-mini".into(),
            input: 1200,
            cached: 200,
            output: 30,
            cost: Some(0.00031),
            unpriced: 0,
        };
        let local = ModelSpend {
            model: "qwen".into(),
            input: 50,
            output: 5,
            unpriced: 1,
            ..Default::default()
        };
        let text = format_spend(&[priced, local], Some(0.00031));
        assert!(
            text.contains("gpt-5-mini: 1200 in (200 cached), 30 out — $0.0003"),
            "{text}"
        );
        assert!(
            text.contains("qwen: 50 in, 5 out — no price known (tokens only)"),
            "{text}"
        );
        assert!(text.contains("Total: $0.0003"), "{text}");
        assert!(format_spend(&[], None).contains("Nothing spent"));
    }
}
