//! The settings that name a choice, as serde enums: a typo in the config file is an error
//! that names the file, the line and the valid values. Pure data; no IO.

use serde::Deserialize;

/// The wire protocols ikigai speaks (`kind = "…"` of a `[providers.NAME]` section). Each
/// has its own folder under `src/provider/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
pub enum WireKind {
    /// Chat Completions (`/chat/completions`): OpenAI and every compatible server.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// The Responses API (`/responses`).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages (`/messages`).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Gemini `streamGenerateContent`.
    #[serde(rename = "google")]
    Google,
    /// The in-process llama.cpp engine (`provider/local/`, cargo feature `local`).
    #[serde(rename = "local")]
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

    /// The name used in `kind = "…"`.
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

    /// Chat Completions or Responses: the kinds `OPENAI_BASE_URL` applies to.
    pub fn is_openai(self) -> bool {
        matches!(self, WireKind::OpenAiChat | WireKind::OpenAiResponses)
    }
}

/// How tool calls travel (`tool_protocol`): the vendor's native tool calls, or the
/// SYSTEM.EXEC text protocol for models that have none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Native,
    Text,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Native => "native",
            Protocol::Text => "text",
        }
    }

    /// `native` or `text` (the `--tool-protocol` flag).
    pub fn parse(s: &str) -> Option<Protocol> {
        [Protocol::Native, Protocol::Text]
            .into_iter()
            .find(|p| p.as_str() == s)
    }
}

/// How the text protocol gives a command's output back (`text_protocol_continue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Continuation {
    /// The request ends with the assistant message so far (exec and output blocks
    /// appended); the server continues it (llama.cpp server, Ollama).
    #[default]
    Prefill,
    /// The output block is the next user message (vendors that do not continue a final
    /// assistant message).
    User,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct One {
        kind: Option<WireKind>,
        tool_protocol: Option<Protocol>,
        text_protocol_continue: Option<Continuation>,
    }

    #[test]
    fn names_read_back_and_a_typo_lists_the_valid_values() {
        for k in WireKind::ALL {
            let one: One = toml::from_str(&format!("kind = \"{}\"", k.as_str())).unwrap();
            assert_eq!(one.kind, Some(k));
            assert_eq!(WireKind::parse(k.as_str()), Some(k));
        }
        let e = toml::from_str::<One>("kind = \"soap\"").unwrap_err().to_string();
        assert!(
            e.contains("soap") && e.contains("openai-responses") && e.contains("google"),
            "{e}"
        );
        let e = toml::from_str::<One>("tool_protocol = \"txt\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`native`") && e.contains("`text`"), "{e}");
        let e = toml::from_str::<One>("text_protocol_continue = \"pre\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`prefill`") && e.contains("`user`"), "{e}");
        assert_eq!(Protocol::parse("text"), Some(Protocol::Text));
        assert_eq!(Protocol::parse("TEXT"), None);
    }
}
