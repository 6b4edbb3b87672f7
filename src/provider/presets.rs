//! The built-in provider presets: for each name, the wire kind, base URL, key variable,
//! default model and context window. Data only; `factory.rs` merges them with the config.

/// The wire protocols ikigai speaks. Each has its own folder under `src/provider/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireKind {
    /// Chat Completions (`/chat/completions`): OpenAI and every compatible server.
    OpenAiChat,
    /// The Responses API (`/responses`).
    OpenAiResponses,
    /// Anthropic Messages (`/messages`).
    Anthropic,
    /// Gemini `streamGenerateContent`.
    Google,
    /// The in-process llama.cpp engine (`provider/local/`, cargo feature `local`).
    Local,
}

impl WireKind {
    pub const ALL: [WireKind; 5] = [
        WireKind::OpenAiChat,
        WireKind::OpenAiResponses,
        WireKind::Anthropic,
        WireKind::Google,
        WireKind::Local,
    ];

    /// The name used in `kind = "…"` of a `[providers.NAME]` section.
    pub fn as_str(self) -> &'static str {
        match self {
            WireKind::OpenAiChat => "openai-chat",
            WireKind::OpenAiResponses => "openai-responses",
            WireKind::Anthropic => "anthropic",
            WireKind::Google => "google",
            WireKind::Local => "local",
        }
    }

    pub fn parse(s: &str) -> Option<WireKind> {
        WireKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One built-in provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub kind: WireKind,
    pub base_url: &'static str,
    /// The variable holding the key; empty for local servers that need none.
    pub api_key_env: &'static str,
    pub model: &'static str,
    /// Tokens; 0 when it depends on how the local server was started.
    pub context_window: u64,
}

const fn p(
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
        model,
        context_window,
    }
}

use WireKind::{Anthropic, Google, OpenAiChat, OpenAiResponses};

/// Every built-in preset; `openai` is the default provider.
pub const PRESETS: &[Preset] = &[
    p(
        "openai",
        OpenAiChat,
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "gpt-5-mini",
        400_000,
    ),
    p(
        "openai-responses",
        OpenAiResponses,
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "gpt-5-mini",
        400_000,
    ),
    p(
        "anthropic",
        Anthropic,
        "https://api.anthropic.com/v1",
        "ANTHROPIC_API_KEY",
        "claude-sonnet-4-5",
        200_000,
    ),
    p(
        "google",
        Google,
        "https://generativelanguage.googleapis.com/v1beta",
        "GEMINI_API_KEY",
        "gemini-2.5-flash",
        1_048_576,
    ),
    p(
        "xai",
        OpenAiChat,
        "https://api.x.ai/v1",
        "XAI_API_KEY",
        "grok-4",
        256_000,
    ),
    p(
        "deepseek",
        OpenAiChat,
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
        "deepseek-chat",
        128_000,
    ),
    p(
        "openrouter",
        OpenAiChat,
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        "openai/gpt-5-mini",
        400_000,
    ),
    p(
        "groq",
        OpenAiChat,
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
        "openai/gpt-oss-120b",
        131_072,
    ),
    p(
        "mistral",
        OpenAiChat,
        "https://api.mistral.ai/v1",
        "MISTRAL_API_KEY",
        "mistral-medium-latest",
        128_000,
    ),
    p(
        "ollama",
        OpenAiChat,
        "http://127.0.0.1:11434/v1",
        "",
        "qwen2.5-coder",
        0,
    ),
    p("llamacpp", OpenAiChat, "http://127.0.0.1:8080/v1", "", "local", 0),
    p("vllm", OpenAiChat, "http://127.0.0.1:8000/v1", "", "local", 0),
    p("lmstudio", OpenAiChat, "http://127.0.0.1:1234/v1", "", "local", 0),
];

/// The preset called `name`.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The default provider's name.
pub const DEFAULT: &str = "openai";

#[cfg(test)]
mod tests {
    use super::*;

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
        }
        assert_eq!(find(DEFAULT).unwrap().kind, WireKind::OpenAiChat);
        assert_eq!(
            WireKind::parse("openai-responses"),
            Some(WireKind::OpenAiResponses)
        );
        assert_eq!(WireKind::parse("nope"), None);
    }
}
