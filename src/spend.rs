//! What a session spent: tokens per model (input, the cached part of it, output) and their
//! cost in USD where the model has a price. Summed from responses as they come and from
//! the stored `usage` markers on resume. Data and sums only; prices are `provider::prices`.

use serde::Serialize;

/// One model's share of a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub struct ModelSpend {
    pub model: String,
    pub input: u64,
    /// The part of `input` read from the vendor's prompt cache.
    pub cached: u64,
    pub output: u64,
    /// USD of the responses that had a price; absent when none had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Responses without a price (a local model, a model the table does not know): their
    /// tokens are counted, their cost is not guessed.
    #[serde(skip_serializing_if = "is_zero")]
    pub unpriced: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Every model's share, in the order the models were first used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spend {
    pub models: Vec<ModelSpend>,
}

impl Spend {
    /// Adds one response of `model`; `cost` is `None` when it has no price.
    pub fn add(&mut self, model: &str, input: u64, cached: u64, output: u64, cost: Option<f64>) {
        let i = match self.models.iter().position(|m| m.model == model) {
            Some(i) => i,
            None => {
                self.models.push(ModelSpend {
                    model: model.to_string(),
                    ..Default::default()
                });
                self.models.len() - 1
            }
        };
        let m = &mut self.models[i];
        m.input = m.input.saturating_add(input);
        m.cached = m.cached.saturating_add(cached);
        m.output = m.output.saturating_add(output);
        match cost {
            Some(c) => m.cost = Some(m.cost.unwrap_or(0.0) + c),
            None => m.unpriced += 1,
        }
    }

    /// The session's cost in USD: the sum over the models with a price; `None` when no
    /// response had one.
    pub fn cost(&self) -> Option<f64> {
        self.models
            .iter()
            .filter_map(|m| m.cost)
            .fold(None, |sum, c| Some(sum.unwrap_or(0.0) + c))
    }
}

/// A cost as people read it: `$0.0042`, `$1.23`.
pub fn dollars(usd: f64) -> String {
    if usd < 0.01 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_per_model_and_never_guesses_an_unknown_price() {
        let mut s = Spend::default();
        assert_eq!(s.cost(), None);
        s.add("local", 100, 0, 10, None);
        assert_eq!(s.cost(), None, "a local model has no cost to show");
        s.add("gpt-5-mini", 1000, 200, 50, Some(0.01));
        s.add("gpt-5-mini", 500, 0, 5, Some(0.02));
        assert_eq!(s.models.len(), 2);
        let m = &s.models[1];
        assert_eq!((m.input, m.cached, m.output, m.unpriced), (1500, 200, 55, 0));
        assert!((s.cost().unwrap() - 0.03).abs() < 1e-12);
        assert_eq!(s.models[0].unpriced, 1);
        assert_eq!(dollars(0.0042), "$0.0042");
        assert_eq!(dollars(1.234), "$1.23");
    }
}
