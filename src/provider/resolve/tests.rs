//! Resolution against the preset table, sections and explicit settings.

use super::*;
use crate::config::ProviderSection;
use crate::provider::help::setup_hint;

fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
}

fn given(s: &str) -> Option<String> {
    Some(s.to_string())
}

#[test]
fn default_is_openai_chat_and_needs_its_key() {
    let c = Config::default();
    let r = resolve(&c, &env_of(&[])).unwrap();
    let s = &r.spec;
    assert_eq!(
        (s.name.as_str(), s.kind.as_str(), s.base_url.as_str()),
        ("openai", "openai-chat", "https://api.openai.com/v1")
    );
    assert_eq!(
        (s.model.as_str(), s.api_key_env.as_str()),
        ("gpt-5-mini", "OPENAI_API_KEY")
    );
    assert_eq!(s.context_window, 400_000);
    let spec = spec_for(&c, "openai", None, &env_of(&[])).unwrap();
    assert!(spec.missing_key());
    let hint = setup_hint(&spec).join("\n");
    assert!(
        hint.contains("$OPENAI_API_KEY") && hint.contains("--provider"),
        "{hint}"
    );
    assert!(setup_hint(&spec).iter().all(|l| l.chars().count() < 80), "{hint}");
    let spec = spec_for(&c, "openai", None, &env_of(&[("OPENAI_API_KEY", "sk-x")])).unwrap();
    assert!(!spec.missing_key() && setup_hint(&spec).is_empty());
}

#[test]
fn config_default_is_the_resolved_default_provider() {
    // The defaults hold no provider data: resolving them gives the table's default row.
    let r = resolve(&Config::default(), &env_of(&[])).unwrap();
    let d = presets::find(presets::DEFAULT).unwrap();
    assert_eq!(
        (
            r.spec.name.as_str(),
            r.spec.kind,
            r.spec.base_url.as_str(),
            r.spec.model.as_str(),
            r.spec.api_key_env.as_str(),
            r.spec.context_window
        ),
        (
            d.name,
            d.kind,
            d.base_url,
            d.model,
            d.api_key_env,
            d.context_window
        )
    );
    assert!(r.spec.missing_key());
}

#[test]
fn resolving_never_changes_the_config() {
    let c = Config {
        model: given("xai/grok-4-fast"),
        ..Config::default()
    };
    let before = format!("{c:?}");
    let r = resolve(&c, &env_of(&[("XAI_API_KEY", "xk")])).unwrap();
    assert_eq!(r.spec.name, "xai");
    assert_eq!(format!("{c:?}"), before);
    assert_eq!(c.provider, None);
}

#[test]
fn presets_are_selected_by_name_or_model_prefix_and_read_their_own_key() {
    let c = Config {
        model: given("xai/grok-4-fast"),
        ..Config::default()
    };
    let s = resolve(&c, &env_of(&[("XAI_API_KEY", "xk")])).unwrap().spec;
    assert_eq!((s.name.as_str(), s.model.as_str()), ("xai", "grok-4-fast"));
    assert_eq!(s.base_url, "https://api.x.ai/v1");
    assert_eq!(s.api_key.as_ref().unwrap().expose(), "xk");
    // An explicit provider takes the model verbatim (OpenRouter names contain '/').
    let c = Config {
        provider: given("openrouter"),
        model: given("anthropic/claude-sonnet-4"),
        ..Config::default()
    };
    let s = resolve(&c, &env_of(&[])).unwrap().spec;
    assert_eq!(
        (s.name.as_str(), s.model.as_str()),
        ("openrouter", "anthropic/claude-sonnet-4")
    );
    // Local servers need no key.
    let c = Config {
        provider: given("ollama"),
        ..Config::default()
    };
    resolve(&c, &env_of(&[])).unwrap();
    let spec = spec_for(&c, "ollama", None, &env_of(&[])).unwrap();
    assert!(!spec.missing_key());
    assert_eq!(spec.base_url, "http://127.0.0.1:11434/v1");
}

#[test]
fn sections_override_presets_and_add_providers() {
    let mut c = Config {
        provider: given("azure"),
        ..Config::default()
    };
    c.providers.insert(
        "azure".into(),
        ProviderSection {
            kind: Some(WireKind::OpenAiChat),
            base_url: given("https://r.openai.azure.com/openai/v1/"),
            api_key_env: given("AZURE_OPENAI_API_KEY"),
            model: given("gpt-5"),
            query: [("api-version".to_string(), "preview".to_string())].into(),
            context_window: Some(1000),
            ..Default::default()
        },
    );
    c.providers.insert(
        "groq".into(),
        ProviderSection {
            model: given("llama-3.3-70b-versatile"),
            ..Default::default()
        },
    );
    let r = resolve(&c, &env_of(&[])).unwrap();
    let spec = spec_for(&c, "azure", None, &env_of(&[])).unwrap();
    assert_eq!(
        spec.url("/chat/completions"),
        "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview"
    );
    assert!(spec.missing_key(), "a section that names a key variable needs it");
    assert_eq!(r.spec.context_window, 1000);
    let groq = spec_for(&c, "groq", None, &env_of(&[])).unwrap();
    assert_eq!(
        (groq.model.as_str(), groq.base_url.as_str()),
        ("llama-3.3-70b-versatile", "https://api.groq.com/openai/v1")
    );
    let vars = r.key_vars.clone();
    for v in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "XAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
    ] {
        assert!(vars.contains(&v.to_string()), "{v} in {vars:?}");
    }
    assert!(!vars.contains(&String::new()));
}

#[test]
fn every_preset_key_and_the_explicit_one_are_kept_from_tools() {
    let c = Config {
        api_key_env: given("MY_VENDOR_CRED"),
        ..Config::default()
    };
    let vars = key_vars(&c);
    assert_eq!(vars[0], "MY_VENDOR_CRED");
    for v in presets::key_vars() {
        assert!(vars.iter().any(|x| x == v), "{v} in {vars:?}");
    }
}

#[test]
fn a_given_base_url_makes_the_key_optional_and_env_url_is_openai_only() {
    let c = Config {
        base_url: given("http://127.0.0.1:9/v1"),
        ..Config::default()
    };
    resolve(&c, &env_of(&[])).unwrap();
    let spec = spec_for(&c, "openai", None, &env_of(&[])).unwrap();
    assert!(!spec.missing_key());
    let c = Config {
        provider: given("anthropic"),
        base_url: given("http://proxy/v1"),
        base_url_from_env: true,
        ..Config::default()
    };
    let spec = spec_for(&c, "anthropic", None, &env_of(&[])).unwrap();
    assert_eq!(
        spec.base_url, "https://api.anthropic.com/v1",
        "OPENAI_BASE_URL is for OpenAI kinds"
    );
}

#[test]
fn unknown_names_are_setup_errors_and_a_prefix_must_name_a_provider() {
    let c = Config {
        provider: given("nope"),
        ..Config::default()
    };
    let e = resolve(&c, &env_of(&[])).unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("ollama"), "{e}");
    let mut c = Config {
        provider: given("x"),
        ..Config::default()
    };
    c.providers.insert(
        "x".into(),
        ProviderSection {
            base_url: given("http://h/v1"),
            model: given("m"),
            ..Default::default()
        },
    );
    let e = resolve(&c, &env_of(&[])).unwrap_err().to_string();
    assert!(e.contains("no kind") && e.contains("[providers.x]"), "{e}");
    assert_eq!(split_model(&c, "x/m"), Some(("x", "m")));
    assert_eq!(split_model(&c, "meta-llama/llama-3"), None);
}

#[test]
fn tool_modes_come_from_the_table_and_the_settings() {
    let c = Config {
        provider: given("llamacpp"),
        tool_protocol: Some(Protocol::Text),
        ..Config::default()
    };
    let s = resolve(&c, &env_of(&[])).unwrap().spec;
    assert_eq!(
        s.tool_mode,
        ToolMode {
            text: true,
            continuation: Continuation::Prefill,
            recover: true,
            primer: true,
            native_primer: true
        }
    );
    // The top-level setting is the selected provider's only.
    let other = spec_for(&c, "vllm", None, &env_of(&[])).unwrap();
    assert_eq!(
        other.tool_mode,
        ToolMode {
            text: false,
            continuation: Continuation::Prefill,
            recover: true,
            primer: true,
            native_primer: true
        },
        "a loopback Chat Completions server continues by prefill"
    );
    let openai = spec_for(&c, "openai", None, &env_of(&[])).unwrap();
    assert_eq!(openai.tool_mode, ToolMode::default());
    assert_eq!(
        spec_for(&c, "anthropic", None, &env_of(&[]))
            .unwrap()
            .tool_mode
            .continuation,
        Continuation::Prefill
    );
}

#[test]
fn a_gguf_model_or_provider_local_selects_the_in_process_engine() {
    let c = Config {
        model: given("/m/qwen.GGUF"),
        ..Config::default()
    };
    let s = resolve(&c, &env_of(&[])).unwrap().spec;
    assert_eq!((s.name.as_str(), s.kind.as_str()), ("local", "local"));
    assert_eq!((s.model.as_str(), s.context_window), ("/m/qwen.GGUF", 8192));
    assert!(!spec_for(&c, "local", None, &env_of(&[])).unwrap().missing_key());

    let mut c = Config {
        provider: given("local"),
        ..Config::default()
    };
    c.providers.insert(
        "local".into(),
        ProviderSection {
            model_path: Some("/m/coder.gguf".into()),
            ctx: Some(4096),
            primer: Some(false),
            ..Default::default()
        },
    );
    let s = resolve(&c, &env_of(&[])).unwrap().spec;
    assert_eq!((s.model.as_str(), s.context_window), ("/m/coder.gguf", 4096));
    assert_eq!(s.engine.ctx, Some(4096));
    assert!(!s.tool_mode.primer);
    let err = crate::provider::build(s)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    if cfg!(feature = "local") {
        assert!(
            err.contains("/m/coder.gguf") && err.contains("does not exist"),
            "{err}"
        );
    } else {
        assert!(err.contains("not available in this build"), "{err}");
    }
}

#[test]
fn images_default_to_yes_for_vendors_and_no_for_local_servers() {
    let none = env_of(&[]);
    let images = |c: &Config, name: &str| spec_for(c, name, None, &none).unwrap().images;
    let c = Config::default();
    for vendor in [
        "openai",
        "openai-responses",
        "anthropic",
        "google",
        "xai",
        "openrouter",
    ] {
        assert!(images(&c, vendor), "{vendor}");
    }
    for local in ["ollama", "llamacpp", "vllm", "lmstudio"] {
        assert!(!images(&c, local), "{local}");
    }
    // A Chat Completions server on loopback is a local one; another format there is not.
    let section = |kind, images| ProviderSection {
        kind: Some(kind),
        base_url: given("http://127.0.0.1:9/v1"),
        model: given("m"),
        images,
        ..Default::default()
    };
    let c = Config {
        providers: [
            ("here".to_string(), section(WireKind::OpenAiChat, None)),
            ("claude".to_string(), section(WireKind::Anthropic, None)),
            ("vision".to_string(), section(WireKind::OpenAiChat, Some(true))),
            ("blind".to_string(), section(WireKind::Anthropic, Some(false))),
        ]
        .into(),
        ..Config::default()
    };
    assert!(!images(&c, "here") && images(&c, "claude"));
    assert!(images(&c, "vision") && !images(&c, "blind"));
}

#[test]
fn local_servers_sample_at_a_low_temperature_unless_configured() {
    let none = env_of(&[]);
    let temp = |c: &Config, name: &str| spec_for(c, name, None, &none).unwrap().temperature;
    let c = Config::default();
    for vendor in ["openai", "anthropic", "google", "xai", "openrouter"] {
        assert_eq!(temp(&c, vendor), None, "{vendor}: the vendor's own default");
    }
    for local in ["ollama", "llamacpp", "vllm", "lmstudio"] {
        assert_eq!(temp(&c, local), Some(LOCAL_TEMPERATURE), "{local}");
    }
    let section = |base_url: &str, temperature| ProviderSection {
        kind: Some(WireKind::OpenAiChat),
        base_url: given(base_url),
        model: given("m"),
        temperature,
        ..Default::default()
    };
    let c = Config {
        providers: [
            ("here".to_string(), section("http://127.0.0.1:9/v1", None)),
            ("hot".to_string(), section("http://127.0.0.1:9/v1", Some(0.9))),
            ("far".to_string(), section("https://llm.example.com/v1", None)),
        ]
        .into(),
        ..Config::default()
    };
    assert_eq!(temp(&c, "here"), Some(0.2));
    assert_eq!(temp(&c, "hot"), Some(0.9));
    assert_eq!(temp(&c, "far"), None);
}
