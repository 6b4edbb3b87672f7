//! A standalone fake Chat Completions vendor for the whole-process benchmark
//! (scripts/bench-process.sh): prints its base URL, then answers N turns of
//! "one glob tool call, then a text answer" until stdin closes. An optional second
//! argument `NAME=ARGS_JSON` picks the tool call instead (e.g. `bash={"command":"echo hi"}`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/fake_provider.rs"]
mod fake_provider;
#[path = "../tests/common/strict_history.rs"]
mod strict_history;

use std::io::{BufRead, Write};

use fake_provider::{FakeProvider, Reply};

fn main() {
    let turns: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let call = std::env::args().nth(2);
    let (name, args) = call
        .as_deref()
        .and_then(|c| c.split_once('='))
        .unwrap_or(("glob", r#"{"pattern":"*.rs"}"#));
    let fake = FakeProvider::start();
    for _ in 0..turns {
        fake.push(Reply::tool_calls(&[("call_1", name, args)]));
        fake.push(Reply::text("There are two Rust files here: lib.rs and main.rs."));
    }
    println!("{}", fake.base_url);
    let _ = std::io::stdout().flush();
    // Serve until the caller closes our stdin.
    for _ in std::io::stdin().lock().lines() {}
}
