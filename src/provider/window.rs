//! How large a model's context window is: a preset table per model family, and the
//! servers that say so themselves (llama.cpp `/props`, Ollama `/api/show`, OpenRouter
//! `/models`), each answer read to `PROBE_MAX` bytes at most. Knows nothing about
//! conversations or budgets.

use std::time::Duration;

use serde_json::Value;

use super::ProviderError;

/// Used when neither the config, the table nor the server knows the window.
pub const FALLBACK_WINDOW: u64 = 32_768;

/// Known model families, most specific first: (name contains, window in tokens).
const PRESETS: &[(&str, u64)] = &[
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5", 16_385),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("claude", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini", 1_048_576),
    ("grok-4", 256_000),
    ("grok", 131_072),
    ("deepseek", 128_000),
    ("kimi", 128_000),
    ("mistral-large", 128_000),
    ("codestral", 256_000),
    ("qwen3-coder", 262_144),
    ("qwen2.5-coder", 32_768),
    ("llama-3", 128_000),
    ("llama3", 128_000),
];

/// The window of a known model family (`gpt-5-mini`, `anthropic/claude-sonnet-4`, …).
pub fn preset(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    PRESETS
        .iter()
        .find(|(family, _)| m.contains(family))
        .map(|(_, w)| *w)
}

/// The most bytes of one probe answer read (an OpenRouter model list is about 1 MB);
/// a server that sends more, or sends forever, is cut off there.
pub const PROBE_MAX: usize = 8 * 1024 * 1024;

/// Asks the server at `base_url` (an OpenAI-compatible `…/v1`) for `model`'s window:
/// llama.cpp `/props`, then OpenRouter-style `/models`, then Ollama `/api/show`. Each
/// try is bounded by `timeout` (the answer's headers and its whole body) and its body by
/// `PROBE_MAX` bytes; an answer past that says nothing, like one that is not JSON.
/// `Ok(None)` when no server says, an error when none says and an answer was too large.
pub async fn probe(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    timeout: Duration,
) -> Result<Option<u64>, ProviderError> {
    let base = base_url.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let mut too_large = None;
    let mut read = async |req: reqwest::RequestBuilder, url: String| {
        let answer = async {
            let resp = req.send().await.ok()?;
            if !resp.status().is_success() {
                return None;
            }
            Some(super::http::read_bytes(resp, PROBE_MAX, timeout).await)
        };
        match tokio::time::timeout(timeout, answer).await {
            Ok(Some(Ok(bytes))) => serde_json::from_slice::<Value>(&bytes).ok(),
            Ok(Some(Err(ProviderError::BodyTooLarge { cap, .. }))) => {
                too_large.get_or_insert(ProviderError::BodyTooLarge {
                    what: format!(
                        "the context window probe's answer from {}",
                        crate::config::redact_url(&url)
                    ),
                    cap,
                });
                None
            }
            _ => None,
        }
    };
    let props = format!("{root}/props");
    if let Some(n) = read(client.get(&props), props.clone())
        .await
        .as_ref()
        .and_then(llama_props)
    {
        return Ok(Some(n));
    }
    let models = format!("{base}/models");
    if let Some(n) = read(client.get(&models), models.clone())
        .await
        .as_ref()
        .and_then(|v| models_list(v, model))
    {
        return Ok(Some(n));
    }
    let show = format!("{root}/api/show");
    let req = client
        .post(&show)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::json!({"model": model}).to_string());
    if let Some(n) = read(req, show.clone()).await.as_ref().and_then(ollama_show) {
        return Ok(Some(n));
    }
    too_large.map_or(Ok(None), Err)
}

/// llama.cpp `/props`: `default_generation_settings.n_ctx` (or a top-level `n_ctx`).
pub fn llama_props(v: &Value) -> Option<u64> {
    v.pointer("/default_generation_settings/n_ctx")
        .or_else(|| v.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// OpenRouter `/models`: `data[].context_length` of the entry whose id is `model`.
pub fn models_list(v: &Value, model: &str) -> Option<u64> {
    v.get("data")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))?
        .get("context_length")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// Ollama `/api/show`: `num_ctx` in `parameters` when set, else `model_info.*.context_length`.
pub fn ollama_show(v: &Value) -> Option<u64> {
    if let Some(params) = v.get("parameters").and_then(Value::as_str) {
        let set = params.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some("num_ctx")).then(|| it.next()?.parse::<u64>().ok())?
        });
        if set.is_some() {
            return set;
        }
    }
    v.get("model_info")?
        .as_object()?
        .iter()
        .find(|(k, _)| k.ends_with(".context_length"))
        .and_then(|(_, n)| n.as_u64())
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn presets_match_families() {
        assert_eq!(preset("gpt-5-mini"), Some(400_000));
        assert_eq!(preset("anthropic/claude-sonnet-4"), Some(200_000));
        assert_eq!(preset("gpt-4o-mini"), Some(128_000));
        assert_eq!(preset("Qwen2.5-Coder-7B"), Some(32_768));
        assert_eq!(preset("my-finetune"), None);
    }

    #[test]
    fn server_answers_are_read() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1});
        assert_eq!(llama_props(&props), Some(8192));
        let models =
            json!({"data": [{"id": "a/b", "context_length": 1000}, {"id": "x/y", "context_length": 65536}]});
        assert_eq!(models_list(&models, "x/y"), Some(65536));
        assert_eq!(models_list(&models, "nope"), None);
        let show = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384", "model_info": {"qwen2.context_length": 32768}});
        assert_eq!(ollama_show(&show), Some(16384));
        let show = json!({"model_info": {"general.architecture": "llama", "llama.context_length": 131072}});
        assert_eq!(ollama_show(&show), Some(131072));
    }
}
