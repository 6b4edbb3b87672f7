//! The one table of built-in providers: for each name, the wire kind, base URL, key
//! variable, default model, context window and what kind of server it is. Data only;
//! everything that knows about vendors (resolution, the key variables kept from tools,
//! the setup hint, the default provider) reads it from here.

pub use crate::config::WireKind;

/// One built-in provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub kind: WireKind,
    pub base_url: &'static str,
    /// The variable holding the key; empty for local servers that need none.
    pub api_key_env: &'static str,
    /// Other variables that commonly hold this vendor's key: never passed to a tool and
    /// scrubbed like the key (ikigai itself reads only `api_key_env`).
    pub other_key_vars: &'static [&'static str],
    pub model: &'static str,
    /// Tokens; 0 when it depends on how the local server was started.
    pub context_window: u64,
    /// A server on this machine: no key, and small models that often write tool calls as
    /// text (recovery of such calls is on by default).
    pub local: bool,
    /// The server continues a final assistant message, so the text protocol gives a
    /// command's output back by prefill.
    pub prefill: bool,
}

const fn vendor(
    name: &'static str,
    kind: WireKind,
    base_url: &'static str,
    api_key_env: &'static str,
    model: &'static str,
    context_window: u64,
) -> Preset {
    Preset {
        name,
        kind,
        base_url,
        api_key_env,
        other_key_vars: &[],
        model,
        context_window,
        local: false,
        prefill: false,
    }
}

const fn server(name: &'static str, base_url: &'static str, model: &'static str, prefill: bool) -> Preset {
    Preset {
        name,
        kind: WireKind::OpenAiChat,
        base_url,
        api_key_env: "",
        other_key_vars: &[],
        model,
        context_window: 0,
        local: true,
        prefill,
    }
}

use WireKind::{Anthropic, Google, OpenAiChat, OpenAiResponses};

/// Every built-in preset; `DEFAULT` is the default provider.
pub const PRESETS: &[Preset] = &[
    vendor(
        "openai",
        OpenAiChat,
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "gpt-5-mini",
        400_000,
    ),
    vendor(
        "openai-responses",
        OpenAiResponses,
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "gpt-5-mini",
        400_000,
    ),
    Preset {
        prefill: true,
        ..vendor(
            "anthropic",
            Anthropic,
            "https://api.anthropic.com/v1",
            "ANTHROPIC_API_KEY",
            "claude-sonnet-4-5",
            200_000,
        )
    },
    Preset {
        other_key_vars: &["GOOGLE_API_KEY"],
        ..vendor(
            "google",
            Google,
            "https://generativelanguage.googleapis.com/v1beta",
            "GEMINI_API_KEY",
            "gemini-2.5-flash",
            1_048_576,
        )
    },
    vendor(
        "xai",
        OpenAiChat,
        "https://api.x.ai/v1",
        "XAI_API_KEY",
        "grok-4",
        256_000,
    ),
    vendor(
        "deepseek",
        OpenAiChat,
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
        "deepseek-chat",
        128_000,
    ),
    vendor(
        "openrouter",
        OpenAiChat,
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        "openai/gpt-5-mini",
        400_000,
    ),
    vendor(
        "groq",
        OpenAiChat,
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
        "openai/gpt-oss-120b",
        131_072,
    ),
    vendor(
        "mistral",
        OpenAiChat,
        "https://api.mistral.ai/v1",
        "MISTRAL_API_KEY",
        "mistral-medium-latest",
        128_000,
    ),
    server("ollama", "http://127.0.0.1:11434/v1", "qwen2.5-coder", true),
    server("llamacpp", "http://127.0.0.1:8080/v1", "local", true),
    server("vllm", "http://127.0.0.1:8000/v1", "local", false),
    server("lmstudio", "http://127.0.0.1:1234/v1", "local", false),
];

/// The default provider's name.
pub const DEFAULT: &str = "openai";

/// The preset called `name`.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Whether `base_url` is a vendor's own endpoint (a non-local preset's URL), whose models'
/// windows the family table knows; any other server is asked.
pub fn is_vendor_endpoint(base_url: &str) -> bool {
    let url = base_url.trim_end_matches('/');
    PRESETS
        .iter()
        .any(|p| !p.local && !p.base_url.is_empty() && p.base_url.trim_end_matches('/') == url)
}

/// Every variable that holds a preset's key, in table order, without duplicates.
pub fn key_vars() -> impl Iterator<Item = &'static str> {
    let mut seen: Vec<&'static str> = Vec::new();
    PRESETS
        .iter()
        .flat_map(|p| std::iter::once(p.api_key_env).chain(p.other_key_vars.iter().copied()))
        .filter(move |v| {
            let new = !v.is_empty() && !seen.contains(v);
            if new {
                seen.push(v);
            }
            new
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_endpoints_are_the_non_local_presets_urls() {
        assert!(is_vendor_endpoint("https://api.openai.com/v1"));
        assert!(is_vendor_endpoint("https://api.anthropic.com/v1/"));
        for other in [
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:11434/v1",
            "https://llm.example.com/v1",
        ] {
            assert!(!is_vendor_endpoint(other), "{other}");
        }
    }

    #[test]
    fn every_preset_is_well_formed_and_unique() {
        let mut names = std::collections::HashSet::new();
        for p in PRESETS {
            assert!(names.insert(p.name), "duplicate {}", p.name);
            assert!(reqwest::Url::parse(p.base_url).is_ok(), "{}", p.name);
            assert!(!p.model.is_empty(), "{}", p.name);
            let local = p.base_url.starts_with("http://127.0.0.1");
            assert_eq!(
                local,
                p.api_key_env.is_empty(),
                "{}: local servers need no key",
                p.name
            );
            assert_eq!(local, p.local, "{}", p.name);
        }
        assert_eq!(find(DEFAULT).unwrap().kind, WireKind::OpenAiChat);
        assert_eq!(PRESETS[0].name, DEFAULT);
        assert_eq!(
            WireKind::parse("openai-responses"),
            Some(WireKind::OpenAiResponses)
        );
        assert_eq!(WireKind::parse("nope"), None);
    }

    #[test]
    fn the_key_variables_are_every_vendors_once() {
        let vars: Vec<&str> = key_vars().collect();
        assert_eq!(
            vars,
            [
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "GEMINI_API_KEY",
                "GOOGLE_API_KEY",
                "XAI_API_KEY",
                "DEEPSEEK_API_KEY",
                "OPENROUTER_API_KEY",
                "GROQ_API_KEY",
                "MISTRAL_API_KEY",
            ]
        );
    }
}
