//! A price setting (`price = { input = …, cached = …, output = … }` in a provider's
//! section): USD per million tokens, and the cost of one response at that price. The
//! table of the vendors' prices is `provider::prices`; this file holds no vendor data.

use serde::{Deserialize, Serialize};

/// USD per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    /// Input read from the vendor's prompt cache (the input price when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<f64>,
    pub output: f64,
}

impl Price {
    pub(crate) const fn of(input: f64, cached: f64, output: f64) -> Price {
        Price {
            input,
            cached: Some(cached),
            output,
        }
    }

    /// The cost in USD of one response: `input` counts the whole request, `cached` the
    /// part of it read from the cache.
    pub fn cost(&self, input: u64, cached: u64, output: u64) -> f64 {
        let cached = cached.min(input);
        let per = |n: u64, p: f64| n as f64 * p / 1_000_000.0;
        per(input - cached, self.input)
            + per(cached, self.cached.unwrap_or(self.input))
            + per(output, self.output)
    }

    /// A price that is not a number of dollars (negative, NaN, infinite) is a mistake.
    pub fn is_valid(&self) -> bool {
        [self.input, self.cached.unwrap_or(0.0), self.output]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0)
    }
}
