"""The small-model eval harness behind `make eval` (entry point: scripts/eval.py).

Modules: tasks (loading the suite), workspace (a task's folders), agent (one scripted ikigai
run and what its events say), alone (the model alone: one prompt, files from its reply),
grade (checks and tests, run on a clean copy), server (llama-server for a model size),
report (the tables), selftest (the checks `make test` runs, no model needed).
"""
