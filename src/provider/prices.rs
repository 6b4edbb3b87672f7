//! What tokens cost: the price table per model family (USD per million tokens: input,
//! cached input, output), how a provider's models are priced (`Pricing`: a configured
//! `price = {…}`, the table, or nothing for local models), and the cost of one response.
//! Data and arithmetic only; a model the table does not know has no price, never a guess.

pub use crate::config::Price;

/// The vendors' list prices, by model family: the longest prefix of the model's name
/// (after any `vendor/` of a router) wins. Standard tier, prompts under any long-context
/// surcharge; checked against the vendors' price pages in 2025. Cache writes are counted
/// as input.
pub const PRICES: &[(&str, Price)] = &[
    ("gpt-5-nano", Price::of(0.05, 0.005, 0.40)),
    ("gpt-5-mini", Price::of(0.25, 0.025, 2.00)),
    ("gpt-5", Price::of(1.25, 0.125, 10.00)),
    ("gpt-4.1-nano", Price::of(0.10, 0.025, 0.40)),
    ("gpt-4.1-mini", Price::of(0.40, 0.10, 1.60)),
    ("gpt-4.1", Price::of(2.00, 0.50, 8.00)),
    ("gpt-4o-mini", Price::of(0.15, 0.075, 0.60)),
    ("gpt-4o", Price::of(2.50, 1.25, 10.00)),
    ("o4-mini", Price::of(1.10, 0.275, 4.40)),
    ("o3", Price::of(2.00, 0.50, 8.00)),
    ("claude-opus-4-5", Price::of(5.00, 0.50, 25.00)),
    ("claude-opus-4", Price::of(15.00, 1.50, 75.00)),
    ("claude-sonnet-4", Price::of(3.00, 0.30, 15.00)),
    ("claude-haiku-4-5", Price::of(1.00, 0.10, 5.00)),
    ("claude-3-5-haiku", Price::of(0.80, 0.08, 4.00)),
    ("gemini-2.5-pro", Price::of(1.25, 0.125, 10.00)),
    ("gemini-2.5-flash-lite", Price::of(0.10, 0.01, 0.40)),
    ("gemini-2.5-flash", Price::of(0.30, 0.03, 2.50)),
    ("grok-4", Price::of(3.00, 0.75, 15.00)),
];

/// The table's price for `model`, if it knows the family.
pub fn for_model(model: &str) -> Option<Price> {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    PRICES
        .iter()
        .filter(|(family, _)| name.starts_with(family))
        .max_by_key(|(family, _)| family.len())
        .map(|(_, p)| *p)
}

/// How a provider's models are priced.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Pricing {
    /// `price = {…}` in the provider's section: every model of it.
    Configured(Price),
    /// The table, by the model's family.
    #[default]
    Table,
    /// A local model (a local preset, a server on this machine, the in-process engine).
    Local,
}

impl Pricing {
    /// The price of `model` under this pricing; `None`: unknown (tokens only).
    pub fn price(&self, model: &str) -> Option<Price> {
        match self {
            Pricing::Configured(p) => Some(*p),
            Pricing::Table => for_model(model),
            Pricing::Local => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_family_wins_and_routers_prefixes_are_skipped() {
        assert_eq!(for_model("gpt-5-mini").unwrap().input, 0.25);
        assert_eq!(for_model("gpt-5-mini-2025-08-07").unwrap().input, 0.25);
        assert_eq!(for_model("gpt-5").unwrap().input, 1.25);
        assert_eq!(for_model("openai/gpt-5-mini").unwrap().output, 2.0);
        assert_eq!(for_model("claude-sonnet-4-5").unwrap().output, 15.0);
        assert_eq!(for_model("claude-opus-4-5-20251101").unwrap().input, 5.0);
        assert_eq!(for_model("claude-opus-4-1").unwrap().input, 15.0);
        assert_eq!(for_model("gemini-2.5-flash-lite").unwrap().input, 0.10);
        assert_eq!(for_model("qwen2.5-coder"), None);
        assert_eq!(for_model("local"), None);
        assert_eq!(for_model("deepseek-chat"), None, "not in the table: no guess");
    }

    #[test]
    fn cost_counts_cached_input_at_its_own_price() {
        let p = Price::of(1.0, 0.1, 10.0);
        let c = p.cost(1_000_000, 400_000, 100_000);
        assert!((c - (0.6 + 0.04 + 1.0)).abs() < 1e-9, "{c}");
        let no_cache = Price { cached: None, ..p };
        assert!((no_cache.cost(1000, 500, 0) - 0.001).abs() < 1e-12);
        assert!(
            (p.cost(10, 50, 0) - 10.0 * 0.1 / 1e6).abs() < 1e-15,
            "cached > input is capped"
        );
        assert!(!Price::of(-1.0, 0.0, 1.0).is_valid());
        assert!(!Price::of(f64::NAN, 0.0, 1.0).is_valid());
        assert!(p.is_valid());
    }

    #[test]
    fn local_models_have_no_price_and_a_configured_one_wins() {
        assert_eq!(Pricing::Local.price("gpt-5"), None);
        let mine = Price::of(2.0, 1.0, 3.0);
        assert_eq!(Pricing::Configured(mine).price("anything"), Some(mine));
        assert_eq!(Pricing::Table.price("gpt-5").unwrap().input, 1.25);
    }
}
