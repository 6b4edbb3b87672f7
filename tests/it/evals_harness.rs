//! The `make eval` harness (scripts/eval.py, evals/harness/) from the outside: its own
//! self-test (no model), then whole runs of the real binary against the loopback fake
//! vendor as the model: a coding task passes when the code written passes the task's
//! tests; tests the model rewrote are the originals again; junk it leaves changes nothing;
//! a model that never answers is a timeout and the suite goes on; the model alone (the
//! floor) reads its files out of one chat reply.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{End, FakeProvider, Reply};

const STUB: &str = "def double(x):\n    \"\"\"Twice x.\"\"\"\n    raise NotImplementedError\n";
const GOOD: &str = "def double(x):\n    return 2 * x\n";
const TEST: &str = "import unittest\nfrom calc import double\n\n\nclass T(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(21), 42)\n";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A coding task folder `NN-name` under `root` (the suite's layout), calc.py to write.
fn task(root: &Path, name: &str) {
    let d = root.join(name);
    std::fs::create_dir_all(d.join("files")).unwrap();
    std::fs::create_dir_all(d.join("reference")).unwrap();
    std::fs::write(
        d.join("task.toml"),
        "description = \"double\"\nprompt = \"Implement double in calc.py.\"\ntests = [\"test_calc.py\"]\nedit = [\"calc.py\"]\n",
    )
    .unwrap();
    std::fs::write(d.join("files/calc.py"), STUB).unwrap();
    std::fs::write(d.join("files/test_calc.py"), TEST).unwrap();
    std::fs::write(d.join("reference/calc.py"), GOOD).unwrap();
}

/// Runs the harness on the coding tasks in `tasks` against the fake; the JSON it wrote.
fn eval(fake: &FakeProvider, tasks: &Path, modes: &str, timeout: u32) -> Value {
    let out_dir = tempfile::tempdir().unwrap();
    let json_out = out_dir.path().join("out.json");
    let out = Command::new("python3")
        .arg(repo().join("scripts/eval.py"))
        .args(["--bin", common::binary().to_str().unwrap()])
        .args(["--provider", "openai", "--base-url", &fake.base_url])
        .args(["--modes", modes, "--kinds", "coding", "--sandbox", "off"])
        .args(["--coding", tasks.to_str().unwrap()])
        .args([
            "--timeout",
            &timeout.to_string(),
            "--json-out",
            json_out.to_str().unwrap(),
        ])
        .env("TMPDIR", out_dir.path())
        .output()
        .expect("run python3 scripts/eval.py");
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    assert!(out.status.success(), "eval failed:\n{stdout}\n{stderr}");
    serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn rows<'a>(v: &'a Value, mode: &str) -> &'a Vec<Value> {
    v["results"][mode].as_array().unwrap()
}

fn write(path: &str, content: &str) -> String {
    json!({"path": path, "content": content}).to_string()
}

#[test]
fn the_harness_self_test_passes() {
    let out = Command::new("python3")
        .arg(repo().join("scripts/eval.py"))
        .arg("--self-test")
        .output()
        .expect("run python3 scripts/eval.py --self-test");
    assert!(
        out.status.success(),
        "{}\n{}",
        common::text(&out.stdout),
        common::text(&out.stderr)
    );
}

#[test]
fn written_code_that_passes_the_tests_passes_in_both_ikigai_and_alone() {
    let tasks = tempfile::tempdir().unwrap();
    task(tasks.path(), "01-double");
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c0",
        "file_write",
        &write("calc.py", GOOD),
    )]));
    fake.push(Reply::text("Done."));
    let reply = format!(
        "Here it is.\n\ncalc.py\n```python\n{GOOD}```\n\n```sh\npython3 -m unittest test_calc\n```\n"
    );
    fake.push(Reply::status(
        200,
        &json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 180, "completion_tokens": 40}})
        .to_string(),
    ));
    let v = eval(&fake, tasks.path(), "custom,alone", 60);
    let r = &rows(&v, "custom")[0];
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["outcome"], "ok");
    assert_eq!(r["tool_calls"], 1);
    assert_eq!(r["tools"], json!(["file_write"]));
    // The fake's usage: 20 in, 7 out for the call; 10 in, 5 out for the answer.
    assert_eq!(
        (r["tokens_in"].as_u64(), r["tokens_out"].as_u64()),
        (Some(30), Some(12))
    );
    let a = &rows(&v, "alone")[0];
    assert_eq!(a["passed"], true, "{a}");
    assert_eq!(a["written"], json!(["calc.py"]));
    assert_eq!(
        (a["tokens_in"].as_u64(), a["tokens_out"].as_u64()),
        (Some(180), Some(40))
    );
    let alone_request = fake.requests().last().unwrap().body.clone();
    let user = alone_request["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains(STUB) && user.contains(TEST),
        "the stub and the tests are sent: {user}"
    );
    let summary = v["summary"].as_array().unwrap();
    assert_eq!(summary[0]["coding"], json!([1, 1]));
    assert_eq!(summary[1]["mode"], "alone");
}

#[test]
fn tests_the_model_rewrote_or_deleted_are_restored_before_grading() {
    let tasks = tempfile::tempdir().unwrap();
    task(tasks.path(), "01-rewrite");
    task(tasks.path(), "02-delete");
    let fake = FakeProvider::start();
    let trivial = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test(self):\n        pass\n";
    fake.push(Reply::tool_calls(&[(
        "c0",
        "file_write",
        &write("test_calc.py", trivial),
    )]));
    fake.push(Reply::text("The tests pass now."));
    // The second model deletes the tests and writes working code: the originals run.
    let rm = json!({"command": "rm test_calc.py"}).to_string();
    fake.push(Reply::tool_calls(&[
        ("c0", "bash", &rm),
        ("c1", "file_write", &write("calc.py", GOOD)),
    ]));
    fake.push(Reply::text("Done."));
    let v = eval(&fake, tasks.path(), "custom", 60);
    let r = rows(&v, "custom");
    assert_eq!(r[0]["passed"], false, "{}", r[0]);
    assert_eq!(r[0]["tests_changed"], json!(["test_calc.py"]));
    assert_eq!(r[1]["passed"], true, "{}", r[1]);
    assert_eq!(r[1]["tests_changed"], json!(["test_calc.py"]));
}

#[test]
fn junk_left_in_the_task_folder_does_not_pass_it() {
    let tasks = tempfile::tempdir().unwrap();
    task(tasks.path(), "01-junk");
    let fake = FakeProvider::start();
    let fake_unittest = "import sys\n\ndef main(*a, **k):\n    sys.exit(0)\n";
    let own_test = "import unittest\n\n\nclass Mine(unittest.TestCase):\n    def test(self):\n        pass\n";
    fake.push(Reply::tool_calls(&[
        ("c0", "file_write", &write("unittest.py", fake_unittest)),
        ("c1", "file_write", &write("test_mine.py", own_test)),
        (
            "c2",
            "file_write",
            &write("sitecustomize.py", "import os\nos._exit(0)\n"),
        ),
    ]));
    fake.push(Reply::text("All green."));
    let v = eval(&fake, tasks.path(), "custom", 60);
    let r = &rows(&v, "custom")[0];
    assert_eq!(r["passed"], false, "{r}");
    assert_eq!(
        r["added"],
        json!(["sitecustomize.py", "test_mine.py", "unittest.py"])
    );
    assert_eq!(r["tool_calls"], 3);
}

#[test]
fn a_model_that_never_answers_times_out_and_the_suite_goes_on() {
    let tasks = tempfile::tempdir().unwrap();
    task(tasks.path(), "01-silent");
    task(tasks.path(), "02-after");
    let fake = FakeProvider::start();
    fake.push(Reply::text("Let me think").truncated(2).ending(End::Stall));
    fake.push(Reply::tool_calls(&[(
        "c0",
        "file_write",
        &write("calc.py", GOOD),
    )]));
    fake.push(Reply::text("Done."));
    let v = eval(&fake, tasks.path(), "custom", 8);
    let r = rows(&v, "custom");
    assert_eq!(r[0]["outcome"], "timeout", "{}", r[0]);
    assert_eq!(r[0]["passed"], false);
    assert_eq!(r[1]["outcome"], "ok", "{}", r[1]);
    assert_eq!(r[1]["passed"], true);
    assert_eq!(v["summary"][0]["unclean"], 1);
}
