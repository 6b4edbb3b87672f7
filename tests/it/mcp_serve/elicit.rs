//! `ikigai mcp serve --mode ask` with the TypeScript reference client declaring
//! elicitation (or not): what the permission engine asks about, in a turn or a built-in
//! tool's call (`--tools`), goes to the client's user, and the answer decides; without the
//! capability, or in another mode, nobody is asked.

use serde_json::{Value, json};

use super::{client_with_plan, project, text_of};
use crate::common::fake_provider::{FakeProvider, Reply};

/// What the client was asked, in order.
fn asked(out: &Value) -> Vec<String> {
    out["elicitations"]
        .as_array()
        .map(|a| a.iter().map(|m| m.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn in_ask_mode_a_client_that_can_elicit_is_asked_and_its_answers_decide() {
    // (mode, the client's answers or `None` when it cannot elicit, what is written)
    let cases: [(&str, Option<Value>, [bool; 2]); 4] = [
        ("ask", Some(json!(["accept", "decline"])), [true, false]),
        ("ask", Some(json!(["cancel", "accept"])), [false, true]),
        // Without the capability, the configured mode applies as before: nobody answers.
        ("ask", None, [false, false]),
        // read-only refuses before anybody is asked.
        ("read-only", Some(json!(["accept", "accept"])), [false, false]),
    ];
    for (mode, elicit, written) in cases {
        let home = tempfile::tempdir().unwrap();
        let p = project(home.path());
        let fake = FakeProvider::start();
        let bash = |c: &str| json!({ "command": c }).to_string();
        fake.push(Reply::tool_calls(&[("c1", "bash", &bash("touch one"))]));
        fake.push(Reply::tool_calls(&[("c2", "bash", &bash("touch two"))]));
        fake.push(Reply::text("Tried."));
        let args: Vec<String> = ["--base-url", &fake.base_url, "mcp", "serve", "--mode", mode]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let more = match &elicit {
            Some(answers) => json!({ "elicit": answers }),
            None => json!({}),
        };
        let calls = json!([{"name": "ikigai", "arguments": {"prompt": "make files", "cwd": p}}]);
        let out = client_with_plan(home.path(), args, calls, more);
        let what = format!("{mode} {elicit:?}: {out}");
        assert_eq!(
            [p.join("one").exists(), p.join("two").exists()],
            written,
            "{what}"
        );
        assert!(text_of(&out["results"][0]).starts_with("Tried."), "{what}");
        let asked = asked(&out);
        if mode == "ask" && elicit.is_some() {
            assert_eq!(asked.len(), 2, "{what}");
            assert!(
                asked[0].contains("touch one") && asked[1].contains("touch two"),
                "{what}"
            );
        } else {
            assert!(asked.is_empty(), "{what}");
        }
        // A refused call reaches the model as not approved.
        let results = fake.requests().last().unwrap().body.to_string();
        assert_eq!(
            results.matches("NOT_APPROVED").count(),
            2 - written.iter().filter(|w| **w).count(),
            "{what}"
        );
    }
}

#[test]
fn a_built_in_tools_call_that_asks_is_elicited_and_the_answer_decides() {
    // (the client's answers or `None` when it cannot elicit, what is written)
    let cases: [(Option<Value>, [bool; 2]); 2] = [
        (Some(json!(["accept", "decline"])), [true, false]),
        (None, [false, false]),
    ];
    for (elicit, written) in cases {
        let home = tempfile::tempdir().unwrap();
        let p = project(home.path());
        let args: Vec<String> = ["mcp", "serve", "--tools", "--mode", "ask"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let more = match &elicit {
            Some(answers) => json!({ "elicit": answers }),
            None => json!({}),
        };
        let calls = json!([
            {"name": "bash", "arguments": {"command": format!("touch {}", p.join("one").display())}},
            {"name": "bash", "arguments": {"command": format!("touch {}", p.join("two").display())}},
        ]);
        let out = client_with_plan(&p, args, calls, more);
        let what = format!("{elicit:?}: {out}");
        assert_eq!(
            [p.join("one").exists(), p.join("two").exists()],
            written,
            "{what}"
        );
        for (i, ran) in written.iter().enumerate() {
            let r = &out["results"][i]["result"];
            assert_eq!(r["isError"], json!(!ran), "{what}");
            if !ran {
                assert!(text_of(&out["results"][i]).contains("NOT_APPROVED"), "{what}");
            }
        }
        let asked = asked(&out);
        if elicit.is_some() {
            assert_eq!(asked.len(), 2, "{what}");
            assert!(asked[0].contains("touch") && asked[0].contains("one"), "{what}");
        } else {
            assert!(asked.is_empty(), "{what}");
        }
    }
}
