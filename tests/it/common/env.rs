//! The isolated environment every test run of the real binary gets: HOME, config and data
//! under one folder, and none of the developer's provider or database settings.

use std::path::Path;
use std::process::Command;

/// Variables a developer may have set that must not reach a test run.
const INHERITED: [&str; 14] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "OPENAI_BASE_URL",
    "IKIGAI_CONFIG",
    "IKIGAI_MODEL",
    "IKIGAI_PROVIDER",
    "IKIGAI_DATABASE_URL",
    "NO_COLOR",
];

/// Points HOME and the XDG folders at `home` and clears inherited settings.
pub fn isolate(cmd: &mut Command, home: &Path) {
    for var in INHERITED {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"));
}
