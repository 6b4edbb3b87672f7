"""The harness's own checks, without a model (`python3 scripts/eval.py --self-test`, run by
`make test` through tests/it/evals_harness.rs): the suite loads and every coding task is
sound (its tests fail on the stub and pass with the reference), grading survives what an
agent may leave behind, replies are parsed into files as small models write them, a run
that hangs or crashes becomes a row, and the tables add up."""

import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

from . import agent, alone, grade, report, runner, tasks, workspace

REPO = None  # set by main()

STUB = b'def double(x):\n    """Twice x."""\n    raise NotImplementedError\n'
GOOD = b"def double(x):\n    return 2 * x\n"
TEST = b"import unittest\nfrom calc import double\n\n\nclass T(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(21), 42)\n"


def tiny_task(**kw):
    t = {
        "kind": "coding",
        "name": "tiny",
        "description": "double",
        "prompt": "Implement double in calc.py.",
        "tests": ["test_calc.py"],
        "edit": ["calc.py"],
        "files": {"calc.py": STUB, "test_calc.py": TEST},
        "reference": {"calc.py": GOOD},
        "executable": [],
    }
    t.update(kw)
    return t


class Folder(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="eval-selftest-")
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def project(self, task):
        p = self.tmp / "project"
        workspace.write_tree(p, task["files"])
        return p

    def graded(self, task, project, timeout=30):
        return grade.grade_coding(task, project, self.tmp / "graded", timeout)


class Suite(Folder):
    """The tasks in the repository."""

    def test_questions_load(self):
        qs = tasks.load_questions(REPO / "evals/questions")
        self.assertGreaterEqual(len(qs), 14)
        for q in qs:
            self.assertTrue(q["check"], q["name"])

    def test_every_coding_task_fails_on_its_stub_and_passes_with_its_reference(self):
        cs = tasks.load_coding(REPO / "evals/coding")
        self.assertGreaterEqual(len(cs), 8)
        for t in cs:
            with self.subTest(t["name"]):
                self.assertEqual(sorted(t["reference"]), sorted(t["edit"]), "a reference for each edit file")
                p = self.project(t)
                self.assertFalse(self.graded(t, p)["passed"], "the stub must fail the tests")
                workspace.write_tree(p, t["reference"])
                g = self.graded(t, p)
                self.assertTrue(g["passed"], g["tests_output"])
                workspace.remove(p)

    def test_a_task_cannot_name_a_path_outside_itself(self):
        d = self.tmp / "coding/01-bad"
        (d / "files").mkdir(parents=True)
        (d / "files/test_x.py").write_text("")
        (d / "task.toml").write_text('description="d"\nprompt="p"\ntests=["test_x.py"]\nedit=["../x.py"]\n')
        with self.assertRaises(tasks.TaskError):
            tasks.load_coding(self.tmp / "coding")


class Grading(Folder):
    """What an agent leaves behind does not decide the grade; only the edit files do."""

    def test_correct_edit_passes(self):
        t = tiny_task()
        p = self.project(t)
        (p / "calc.py").write_bytes(GOOD)
        self.assertTrue(self.graded(t, p)["passed"])

    def test_tests_edited_or_deleted_are_restored(self):
        t = tiny_task()
        cases = {
            "emptied": lambda p: (p / "test_calc.py").write_text(""),
            "made trivial": lambda p: (p / "test_calc.py").write_text(
                "import unittest\nclass T(unittest.TestCase):\n    def test(self): pass\n"),
            "deleted": lambda p: (p / "test_calc.py").unlink(),
            "replaced by a folder": lambda p: ((p / "test_calc.py").unlink(), (p / "test_calc.py").mkdir()),
        }
        for name, vandalize in cases.items():
            with self.subTest(name):
                p = self.project(t)
                vandalize(p)
                g = self.graded(t, p)
                self.assertFalse(g["passed"], "the stub is still a stub")
                self.assertEqual(g["tests_changed"], ["test_calc.py"])
                (p / "calc.py").write_bytes(GOOD)
                self.assertTrue(self.graded(t, p)["passed"], "the original tests ran")
                workspace.remove(p)

    def test_junk_in_the_folder_changes_nothing(self):
        t = tiny_task()
        junk = {
            "unittest.py": "import sys\ndef main(*a, **k): sys.exit(0)\n",
            "sitecustomize.py": "import os\nos._exit(0)\n",
            "test_mine.py": "import unittest\nclass T(unittest.TestCase):\n    def test(self): pass\n",
            "__pycache__/calc.cpython-311.pyc": "junk",
            "notes/scratch.txt": "x" * 1000,
        }
        p = self.project(t)
        workspace.write_tree(p, {k: v.encode() for k, v in junk.items()})
        g = self.graded(t, p)
        self.assertFalse(g["passed"], g["tests_output"])
        self.assertEqual(g["added"], ["notes/scratch.txt", "sitecustomize.py", "test_mine.py", "unittest.py"])

    def test_an_edit_file_that_is_a_link_is_not_followed(self):
        t = tiny_task()
        p = self.project(t)
        outside = self.tmp / "elsewhere.py"
        outside.write_bytes(GOOD)
        (p / "calc.py").unlink()
        (p / "calc.py").symlink_to(outside)
        g = self.graded(t, p)
        self.assertFalse(g["passed"])
        self.assertIn("calc.py not a regular file", g["failed_checks"])

    def test_a_missing_edit_file_fails(self):
        t = tiny_task(files={"test_calc.py": TEST})
        p = self.project(t)
        g = self.graded(t, p)
        self.assertFalse(g["passed"])
        self.assertIn("calc.py missing", g["failed_checks"])
        (p / "calc.py").write_bytes(GOOD)
        self.assertTrue(self.graded(t, p)["passed"], "a new file the agent writes is taken")

    def test_code_that_never_ends_is_cut_off(self):
        t = tiny_task()
        p = self.project(t)
        (p / "calc.py").write_text("def double(x):\n    while True:\n        pass\n")
        start = time.monotonic()
        g = self.graded(t, p, timeout=2)
        self.assertFalse(g["passed"])
        self.assertIn("timed out", g["tests_output"])
        self.assertLess(time.monotonic() - start, 30)

    def test_question_checks(self):
        q = {"check": [{"answer": "PLUM-4417"}, {"file": "a.txt", "contains": "^x$"}, {"absent": "b.txt"}]}
        p = self.tmp / "q"
        p.mkdir()
        (p / "a.txt").write_text("x\n")
        self.assertEqual(grade.check_question(q, "the code is plum-4417", p), [])
        (p / "b.txt").write_text("")
        self.assertEqual(grade.check_question(q, "no idea", p), ["answer !~ /PLUM-4417/", "b.txt still exists"])


class Replies(unittest.TestCase):
    """Replies of the model alone, as small models write them, into files."""

    CODE = "def double(x):\n    return 2 * x\n"

    def parse(self, text, **kw):
        return alone.parse_reply(text, tiny_task(**kw))[0]

    def test_forms_that_write_calc_py(self):
        c = self.CODE
        forms = {
            "name line, fenced": f"calc.py\n```python\n{c}```\n",
            "name line and a command block after": f"calc.py\n```python\n{c}```\n\n```\npython3 -m unittest test_calc\n```\n",
            "bold name": f"**calc.py**\n```python\n{c}```",
            "heading with backticks": f"### `calc.py`\n```py\n{c}```",
            "File: prefix": f"File: calc.py\n```python\n{c}```",
            "a sentence naming it and the test": f"Here is calc.py, which makes test_calc.py pass:\n```python\n{c}```",
            "name in the info string": f"```python calc.py\n{c}```",
            "placeholder path as the first line": f"```python\npath/to/calc.py\n{c}```",
            "a comment naming it": f"```python\n# calc.py\n{c}```",
            "no name, one edit file": f"Sure!\n```python\n{c}```",
            "no name, a usage example after": f"```python\n{c}```\nUse it:\n```python\nprint(double(2))\n```",
            "a shell block before": f"```bash\npython3 -m unittest\n```\n```python\n{c}```",
            "a shell block after": f"```python\n{c}```\nThen:\n```sh\ncd project && ls\n```",
            "a session block after": f"calc.py\n```python\n{c}```\n```\n$ ls\ncalc.py\n```",
            "tilde fence": f"calc.py\n~~~python\n{c}~~~\n",
            "unclosed (cut by the length limit)": f"calc.py\n```python\n{c}",
            "no fence at all": c,
            "./ prefix": f"./calc.py\n```python\n{c}```",
            "the test file echoed first": f"test_calc.py\n```python\nimport unittest\n```\ncalc.py\n```python\n{c}```",
        }
        for name, text in forms.items():
            with self.subTest(name):
                files = self.parse(text)
                self.assertEqual(list(files), ["calc.py"])
                self.assertIn("return 2 * x", files["calc.py"])
                self.assertNotIn("path/to", files["calc.py"])
                self.assertNotIn("unittest", files["calc.py"])

    def test_comment_naming_the_file_stays_in_the_code(self):
        files = self.parse(f"```python\n# calc.py\n{self.CODE}```")
        self.assertTrue(files["calc.py"].startswith("# calc.py\n"))

    def test_forms_that_write_nothing(self):
        forms = {
            "prose only": "You should multiply x by two.",
            "a test file only": "test_calc.py\n```python\nimport unittest\n```",
            "a file the task does not have": "other.py\n```python\nx = 1\n```",
            "a command only": "```sh\npython3 -m unittest test_calc\n```",
            "prose that is not Python": "def double(x) returns twice x",
        }
        for name, text in forms.items():
            with self.subTest(name):
                self.assertEqual(self.parse(text), {})

    def test_two_files(self):
        kw = {"edit": ["orders.py", "invoice.py"],
              "files": {"orders.py": b"", "invoice.py": b"", "test_calc.py": TEST}}
        text = "orders.py\n```python\nA = 1\n```\n\ninvoice.py\n```python\nB = 2\n```\n"
        self.assertEqual(self.parse(text, **kw), {"orders.py": "A = 1\n", "invoice.py": "B = 2\n"})
        # One named, one not: the unnamed block is the other file.
        text = "orders.py\n```python\nA = 1\n```\n\n```python\nB = 2\n```\n"
        self.assertEqual(self.parse(text, **kw), {"orders.py": "A = 1\n", "invoice.py": "B = 2\n"})
        # Both unnamed: which is which is not known; nothing is guessed.
        self.assertEqual(self.parse("```python\nA = 1\n```\n```python\nB = 2\n```\n", **kw), {})

    def test_the_request_holds_the_task_and_every_file(self):
        msgs = alone.build_messages(tiny_task())
        self.assertEqual([m["role"] for m in msgs], ["system", "user"])
        user = msgs[1]["content"]
        self.assertTrue(user.startswith("Implement double in calc.py."))
        self.assertIn("calc.py\n```python\n" + STUB.decode() + "```", user)
        self.assertIn("test_calc.py\n```python\n", user)


def _gone(pid):
    """Whether pid has ended (waited for up to 5 s; a zombie counts as ended)."""
    for _ in range(100):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _silent_server():
    """A server that accepts connections and never answers; (url, stop)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    held, done = [], threading.Event()

    def loop():
        s.settimeout(0.2)
        while not done.is_set():
            try:
                held.append(s.accept()[0])
            except OSError:
                continue

    th = threading.Thread(target=loop, daemon=True)
    th.start()

    def stop():
        done.set()
        th.join()
        for c in held:
            c.close()
        s.close()

    return f"http://127.0.0.1:{s.getsockname()[1]}/v1", stop


class Runs(Folder):
    """A run that hangs, crashes or talks to nobody becomes a row; the suite goes on."""

    def stand_in(self, body):
        """An executable in ikigai's place (ikigai itself cannot be made to crash)."""
        p = self.tmp / "stand-in"
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
        return p

    def opts(self, timeout):
        return {"timeout": timeout, "keep": False, "grade_timeout": 30}

    def test_a_crash_is_reported(self):
        binary = self.stand_in('echo \'{"type":"turn_started"}\'\nkill -SEGV $$\n')
        row = runner.run_one(tiny_task(), "native", {"kind": "ikigai", "binary": binary, "extra": []}, self.opts(30))
        self.assertEqual(row["outcome"], "crash (SIGSEGV)")
        self.assertFalse(row["passed"])
        self.assertIsNone(row["folder"])

    def test_an_exit_without_a_turn_is_reported(self):
        binary = self.stand_in("echo 'error: no such model' >&2\nexit 2\n")
        row = runner.run_one(tiny_task(), "text", {"kind": "ikigai", "binary": binary, "extra": []}, self.opts(30))
        self.assertEqual(row["outcome"], "crash (exit 2)")

    def test_a_hang_is_killed_with_its_children(self):
        pidfile = self.tmp / "child.pid"
        binary = self.stand_in(f"sleep 300 &\necho $! > {pidfile}\nwait\n")
        start = time.monotonic()
        row = runner.run_one(tiny_task(), "engine", {"kind": "ikigai", "binary": binary, "extra": []}, self.opts(2))
        self.assertLess(time.monotonic() - start, 60)
        self.assertEqual(row["outcome"], "timeout")
        self.assertTrue(_gone(int(pidfile.read_text())), "the stand-in's child outlived the timeout")

    def test_an_interrupted_suite_leaves_nothing_running(self):
        pidfile = self.tmp / "child.pid"
        binary = self.stand_in(f"sleep 300 &\necho $! > {pidfile}\nwait\n")
        gguf = self.tmp / "model.gguf"
        gguf.write_text("")
        tasks_dir = self.tmp / "coding/01-tiny"
        workspace.write_tree(tasks_dir / "files", tiny_task()["files"])
        (tasks_dir / "task.toml").write_text(
            'description="d"\nprompt="p"\ntests=["test_calc.py"]\nedit=["calc.py"]\n')
        cmd = [sys.executable, str(REPO / "scripts/eval.py"), "--bin", str(binary), "--modes", "engine",
               "--gguf", str(gguf), "--kinds", "coding", "--coding", str(self.tmp / "coding"), "--timeout", "600"]
        env = dict(os.environ, TMPDIR=str(self.tmp))
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            for _ in range(600):
                if pidfile.exists() and pidfile.read_text().strip():
                    break
                time.sleep(0.05)
            else:
                self.fail("the stand-in never started")
            proc.send_signal(signal.SIGTERM)
            out = proc.communicate(timeout=60)[0].decode()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertIn("interrupted", out)
        child = int(pidfile.read_text())
        self.assertTrue(_gone(child), "the interrupted run's child is still running")
        self.assertEqual(list(self.tmp.glob("ikigai-eval-*")), [], "its folder is removed")

    def test_a_server_that_never_answers_is_a_timeout(self):
        url, stop = _silent_server()
        try:
            start = time.monotonic()
            row = runner.run_one(tiny_task(), "alone", {"kind": "alone", "base_url": url}, self.opts(1))
            self.assertLess(time.monotonic() - start, 30)
        finally:
            stop()
        self.assertEqual(row["outcome"], "timeout")
        self.assertFalse(row["passed"])

    def test_no_server_at_all_is_an_error_row(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        row = runner.run_one(tiny_task(), "alone", {"kind": "alone", "base_url": f"http://127.0.0.1:{port}/v1"},
                             self.opts(5))
        self.assertTrue(row["outcome"].startswith("error (no answer"), row["outcome"])

    def test_events_are_read(self):
        out = "\n".join([
            '{"type":"session_started"}',
            "not json",
            '{"type":"text_delta","text":"Two "}',
            '{"type":"tool_call_started","id":"c0","name":"bash","arguments":{}}',
            '{"type":"usage","input":300,"output":20}',
            '{"type":"tool_call_started","id":"c1","name":"file_write","arguments":{}}',
            '{"type":"usage","input":350,"output":"many"}',
            '{"type":"text_delta","text":"files."}',
            "[1, 2]",
            '{"type":"turn_ended","reason":"limit"}',
        ])
        ev = agent.read_events(out)
        self.assertEqual(ev["answer"], "Two files.")
        self.assertEqual((ev["tool_calls"], ev["tools"]), (2, ["bash", "file_write"]))
        self.assertEqual((ev["tokens_in"], ev["tokens_out"]), (650, 20))
        self.assertEqual(ev["turn_ended"], "limit")
        self.assertIsNone(agent.read_events('{"type":"usage","input":1}')["turn_ended"])


def row(task, kind, passed, mode, **kw):
    r = {"task": task, "kind": kind, "passed": passed, "mode": mode, "seconds": 1.0, "tokens_in": 100,
         "tokens_out": 10, "tool_calls": 2, "outcome": "ok", "failed_checks": []}
    r.update(kw)
    return r


class Tables(unittest.TestCase):
    def test_summary_and_floor(self):
        results = {
            "text": [row("q1", "question", True, "text"), row("c1", "coding", False, "text"),
                     row("c2", "coding", True, "text", outcome="timeout", seconds=150.0)],
            "alone": [row("c1", "coding", True, "alone", tool_calls=0), row("c2", "coding", False, "alone", tool_calls=0)],
        }
        s = {x["mode"]: x for x in report.summarize(results)}
        self.assertEqual(s["text"]["questions"], (1, 1))
        self.assertEqual(s["text"]["coding"], (1, 2))
        self.assertEqual((s["text"]["seconds"], s["text"]["tokens_in"], s["text"]["tool_calls"]), (152, 300, 6))
        self.assertEqual(s["text"]["unclean"], 1)
        self.assertEqual(s["alone"]["questions"], (0, 0))
        self.assertEqual(report.below_floor(results), {"text": ["c1"]})
        out = report.render(results)
        self.assertIn("| text | 1/1 | 1/2 | 152 | 300 | 30 | 6 | 1 |", out)
        self.assertIn("| alone | — | 1/2 | 2 | 200 | 20 | — | 0 |", out)
        self.assertIn("| c2 | PASS (timeout) | fail |", out)
        self.assertIn("below the floor: text failed 1 task(s) the model alone passed: c1", out)


def main(repo):
    global REPO
    REPO = Path(repo)
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if result.wasSuccessful() else 1
