//! The in-process engine end to end: the real binary, the real GGUF model, `-p --json`:
//! `--model FILE.gguf` selects the engine, the answer arrives as text deltas, and the
//! session resumes with its history (the resumed run prefills it once).
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::local as model;

use std::process::{Output, Stdio};

use serde_json::Value;

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

#[test]
fn a_gguf_model_answers_in_json_mode_and_the_session_resumes() {
    let _g = model::serial();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let cfg = h.join(".config/ikigai");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(
        cfg.join("config.toml"),
        "[providers.local]\nctx = 2048\nthreads = 2\ntemperature = 0\nmax_output_tokens = 12\n",
    )
    .unwrap();
    let model = model::model_path();
    let model = model.to_str().unwrap();

    let out = common::ikigai(h)
        .args(["-p", "Say hello.", "--json", "--model", model])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let events = json_lines(&out);
    assert!(
        out.status.success(),
        "{}\n{events:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        of_type(&events, "notice")
            .iter()
            .any(|n| n["text"] == "loading model…"),
        "{events:?}"
    );
    let deltas = of_type(&events, "text_delta");
    assert!(!deltas.is_empty(), "text deltas: {events:?}");
    let answer: String = deltas.iter().map(|d| d["text"].as_str().unwrap()).collect();
    assert!(!answer.trim().is_empty());
    let started = of_type(&events, "session_started");
    let id = started[0]["id"].as_str().expect("a stored session").to_string();

    let out = common::ikigai(h)
        .args(["-p", "Say it again.", "--json", "--model", model, "--resume", &id])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let events = json_lines(&out);
    assert!(
        out.status.success(),
        "{}\n{events:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started = of_type(&events, "session_started");
    assert_eq!(started[0]["id"], id.as_str());
    let history = started[0]["history"].as_array().unwrap();
    assert!(
        history.iter().any(|m| m["content"] == "Say hello."),
        "the first turn is in the resumed history: {history:?}"
    );
    assert!(
        history
            .iter()
            .any(|m| m["kind"] == "assistant" && m["content"] == answer.as_str()),
        "the stored answer is the streamed one: {history:?}"
    );
    assert!(!of_type(&events, "text_delta").is_empty(), "{events:?}");
    // The resumed run's usage covers the whole history: it was prefilled once.
    let usage = of_type(&events, "usage");
    assert!(
        usage.iter().any(|u| u["input"].as_u64().unwrap_or(0) > 50),
        "{usage:?}"
    );
}

#[test]
fn a_missing_gguf_file_is_a_clear_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let out = common::ikigai(home.path())
        .args(["-p", "hi", "--model", "/nonexistent/dir/model.gguf"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/dir/model.gguf") && err.contains("does not exist"),
        "{err}"
    );
}

/// A prompt of about 2,000 of the model's tokens (digits are one token each) in a
/// 1,024-token context, run from three working folders whose paths make the system
/// prompt shorter or longer: refused plainly every time, never summarised and answered.
#[test]
fn a_prompt_larger_than_the_context_is_refused_in_every_folder() {
    let _g = model::serial();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let cfg = h.join(".config/ikigai");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(
        cfg.join("config.toml"),
        "[providers.local]\nctx = 1024\nthreads = 2\ntemperature = 0\nmax_output_tokens = 12\n",
    )
    .unwrap();
    let model = model::model_path();
    let model = model.to_str().unwrap();
    let prompt: String = (0..400).map(|i| format!("{:04} ", (i * 7919) % 10_000)).collect();
    for folder in ["w", "a-middling-folder/name", &"deep/".repeat(30)] {
        let cwd = h.join(folder);
        std::fs::create_dir_all(&cwd).unwrap();
        let out = common::ikigai(h)
            .current_dir(&cwd)
            .args(["-p", &format!("Sum these: {prompt}"), "--model", model])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(1), "{folder}: {stdout}\n{stderr}");
        assert!(
            stderr.contains("too large for this model's context window") && stderr.contains("/new"),
            "{folder}: {stderr}"
        );
        assert!(!stderr.contains("Context compacted"), "{folder}: {stderr}");
        assert!(stdout.trim().is_empty(), "{folder}: no answer: {stdout}");
    }
}
