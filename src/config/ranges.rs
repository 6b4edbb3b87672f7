//! The range of every numeric setting of the config file, checked while the file is read
//! (each is a serde `deserialize_with` function), so an error points at the file and line
//! of the value. Knows nothing of what the settings do; cross-setting checks live in
//! `validate`.

use std::fmt::Display;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// `Some(value)` when `min <= value <= max`; else an error naming the range.
fn within<'de, D, T>(d: D, min: T, max: T) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + PartialOrd + Display + Copy,
{
    let v = T::deserialize(d)?;
    if v < min || v > max {
        return Err(D::Error::custom(format!(
            "{v} is out of range: must be {min} to {max}"
        )));
    }
    Ok(Some(v))
}

/// A share of the context window: above 0, at most 1.
pub(super) fn share<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = f64::deserialize(d)?;
    if !(v > 0.0 && v <= 1.0) {
        return Err(D::Error::custom(format!(
            "{v} is out of range: must be a share of the window above 0 and at most 1 (0.8 is 80%)"
        )));
    }
    Ok(Some(v))
}

macro_rules! ranges {
    ($($(#[$doc:meta])* $name:ident: $t:ty = $min:expr, $max:expr;)*) => {$(
        $(#[$doc])*
        pub(super) fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<$t>, D::Error> {
            within(d, $min, $max)
        }
    )*};
}

ranges! {
    /// `max_tool_turns`.
    count: u32 = 1, 100_000;
    /// `max_identical_calls` (0: no limit).
    identical: u32 = 0, 100_000;
    /// `max_retries`.
    retries: u32 = 0, 100;
    /// `tool_timeout_secs`, `connect_timeout_secs`, `idle_timeout_secs`,
    /// `response_timeout_secs`: a second to a day.
    secs: u64 = 1, 86_400;
    /// `max_retry_wait_secs` (0: no wait, so no retry).
    wait_secs: u64 = 0, 86_400;
    /// `retry_base_delay_ms`: none to ten minutes.
    delay_ms: u64 = 0, 600_000;
    /// `tool_schema_timeout_ms`: a millisecond to ten minutes.
    timeout_ms: u64 = 1, 600_000;
    /// `max_output_size`, `max_response_bytes`: 1 KiB to 64 GiB.
    bytes: usize = 1024, 1 << 36;
    /// `tool_result_lines` (0: no limit).
    lines: usize = 0, 100_000_000;
    /// `[providers.*] context_window`: tokens.
    window: u64 = 1024, 1_000_000_000;
    /// `[providers.*] max_output_tokens`.
    output_tokens: u64 = 1, 100_000_000;
    /// `[providers.*] temperature`.
    temperature: f64 = 0.0, 2.0;
    /// `[providers.*] top_p`.
    top_p: f64 = 0.0, 1.0;
    /// `[providers.local] ctx`: the engine's window in tokens.
    ctx: u32 = 256, 4_194_304;
    /// `[providers.local] threads`.
    threads: u32 = 1, 1024;
    /// `[providers.local] gpu_layers`.
    gpu_layers: u32 = 0, 100_000;
    /// `checkpoint_limit_mb` (0: no snapshots before `bash`): up to 1 TiB.
    checkpoint_mb: u64 = 0, 1_048_576;
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct F {
        #[serde(default, deserialize_with = "super::share")]
        share: Option<f64>,
        #[serde(default, deserialize_with = "super::threads")]
        threads: Option<u32>,
    }

    #[test]
    fn a_value_out_of_range_is_an_error_at_its_line() {
        let e = toml::from_str::<F>("\nshare = 1.5\n").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("line 2") && text.contains("1.5 is out of range"),
            "{text}"
        );
        let e = toml::from_str::<F>("threads = 0").unwrap_err().to_string();
        assert!(e.contains("0 is out of range: must be 1 to 1024"), "{e}");
        let f: F = toml::from_str("share = 0.5\nthreads = 2").unwrap();
        assert_eq!((f.share, f.threads), (Some(0.5), Some(2)));
        assert_eq!(toml::from_str::<F>("").unwrap().share, None);
    }
}
