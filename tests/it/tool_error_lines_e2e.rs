//! A failed tool call names its error once, under the call, in every front end (the real
//! binary in tmux, and `-p`): the summary `INVALID_PARAMS: glob: missing required …` and
//! the error inside the envelope say the same thing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

const MISSING: &str = "missing required parameter";

fn fake() -> FakeProvider {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", "glob", "{}")]));
    fake.push(Reply::text("Noted the error."));
    fake
}

#[test]
fn the_tui_shows_an_invalid_params_error_once() {
    let home = tempfile::tempdir().unwrap();
    let fake = fake();
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("glob nothing");
    t.keys(&["Enter"]);
    let pane = t.wait_text("Noted the error.");
    assert!(pane.contains("INVALID_PARAMS"), "{pane}");
    assert_eq!(pane.matches(MISSING).count(), 1, "{pane}");
}

#[test]
fn plain_mode_shows_an_invalid_params_error_once() {
    let home = tempfile::tempdir().unwrap();
    let fake = fake();
    let out = common::ikigai(home.path())
        .args(["--base-url", &fake.base_url, "-p", "glob nothing"])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.contains("INVALID_PARAMS"), "{stdout}");
    assert_eq!(stdout.matches(MISSING).count(), 1, "{stdout}");
}
