//! A standalone fake model vendor for the whole-process benchmarks
//! (scripts/bench-process.sh, bench-long-session.sh): prints its base URL, then answers
//! N turns of "one glob tool call, then a text answer" until stdin closes. An optional
//! argument `NAME=ARGS_JSON` picks the tool call instead (e.g. `bash={"command":"echo hi"}`);
//! `--kind openai-chat|openai-responses|anthropic|google` picks the wire format (default
//! openai-chat). Anthropic and Gemini are the strict fakes of the test suite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/it/common/fake_provider.rs"]
mod fake_provider;
#[path = "../tests/it/common/fake_vendor.rs"]
mod fake_vendor;
#[path = "../tests/it/common/strict.rs"]
mod strict;
#[path = "../tests/it/common/strict_history.rs"]
mod strict_history;

use std::io::{BufRead, Write};

use fake_provider::{FakeProvider, Reply};
use fake_vendor::{FakeVendor, Wire};

const ANSWER: &str = "There are two Rust files here: lib.rs and main.rs.";

/// The running server, kept alive while it serves.
enum Server {
    Compatible(FakeProvider),
    Strict(FakeVendor),
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let turns: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(200);
    let mut kind = "openai-chat".to_string();
    let mut call = None;
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        if a == "--kind" {
            kind = rest.next().cloned().unwrap_or_default();
        } else if let Some(k) = a.strip_prefix("--kind=") {
            kind = k.to_string();
        } else {
            call = Some(a.clone());
        }
    }
    let (name, args) = call
        .as_deref()
        .and_then(|c| c.split_once('='))
        .unwrap_or(("glob", r#"{"pattern":"*.rs"}"#));
    let server = match kind.as_str() {
        "openai-chat" | "openai" => {
            let fake = FakeProvider::start();
            for _ in 0..turns {
                fake.push(Reply::tool_calls(&[("call_1", name, args)]));
                fake.push(Reply::text(ANSWER));
            }
            Server::Compatible(fake)
        }
        "openai-responses" => {
            let fake = FakeProvider::start();
            for _ in 0..turns {
                fake.push(fake_vendor::responses_reply("", &[("call_1", name, args)]));
                fake.push(fake_vendor::responses_reply(ANSWER, &[]));
            }
            Server::Compatible(fake)
        }
        "anthropic" => {
            let fake = FakeVendor::start(Wire::Anthropic);
            for _ in 0..turns {
                fake.push(fake_vendor::anthropic_reply(None, "", &[("toolu_1", name, args)]));
                fake.push(fake_vendor::anthropic_reply(None, ANSWER, &[]));
            }
            Server::Strict(fake)
        }
        "google" => {
            let fake = FakeVendor::start(Wire::Gemini);
            let value: serde_json::Value = serde_json::from_str(args).expect("arguments are JSON");
            for _ in 0..turns {
                fake.push(fake_vendor::gemini_reply("", "", "", &[(name, value.clone())]));
                fake.push(fake_vendor::gemini_reply("", "", ANSWER, &[]));
            }
            Server::Strict(fake)
        }
        other => {
            eprintln!(
                "fake_vendor: unknown --kind {other} (openai-chat, openai-responses, anthropic, google)"
            );
            std::process::exit(2);
        }
    };
    let base_url = match &server {
        Server::Compatible(f) => f.base_url.clone(),
        Server::Strict(f) => f.base_url.clone(),
    };
    println!("{base_url}");
    let _ = std::io::stdout().flush();
    // Serve until the caller closes our stdin.
    for _ in std::io::stdin().lock().lines() {}
    drop(server);
}
