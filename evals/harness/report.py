"""The tables: per mode, questions and coding tasks passed, seconds, tokens in and out,
tool calls and runs that did not end cleanly; then each coding task per mode beside the
floor (the model alone), with the tasks where a mode did worse than the floor named.
Formats results; runs nothing."""

FLOOR = "alone"


def summarize(results):
    """{mode: [rows]} -> [per-mode summary dict], in the order the modes ran."""
    out = []
    for mode, rows in results.items():
        q = [r for r in rows if r["kind"] == "question"]
        c = [r for r in rows if r["kind"] == "coding"]
        out.append(
            {
                "mode": mode,
                "questions": (sum(r["passed"] for r in q), len(q)),
                "coding": (sum(r["passed"] for r in c), len(c)),
                "seconds": round(sum(r["seconds"] for r in rows)),
                "tokens_in": sum(r["tokens_in"] for r in rows),
                "tokens_out": sum(r["tokens_out"] for r in rows),
                "tool_calls": sum(r["tool_calls"] for r in rows),
                "unclean": sum(r["outcome"] != "ok" for r in rows),
            }
        )
    return out


def _frac(pair):
    passed, total = pair
    return f"{passed}/{total}" if total else "—"


def table(summaries):
    """A markdown table, one row per mode."""
    head = "| mode | questions | coding | seconds | tokens in | tokens out | tool calls | not ended cleanly |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        calls = "—" if s["mode"] == FLOOR else str(s["tool_calls"])
        lines.append(
            f"| {s['mode']} | {_frac(s['questions'])} | {_frac(s['coding'])} | {s['seconds']} "
            f"| {s['tokens_in']} | {s['tokens_out']} | {calls} | {s['unclean']} |"
        )
    return "\n".join(lines)


def below_floor(results):
    """{mode: [coding tasks the floor passed and this mode did not]}."""
    floor = {r["task"]: r["passed"] for r in results.get(FLOOR, []) if r["kind"] == "coding"}
    out = {}
    for mode, rows in results.items():
        if mode == FLOOR:
            continue
        lost = [r["task"] for r in rows if r["kind"] == "coding" and floor.get(r["task"]) and not r["passed"]]
        if lost:
            out[mode] = lost
    return out


def coding_matrix(results):
    """A markdown table: each coding task, PASS or fail per mode (the floor last)."""
    modes = [m for m in results if m != FLOOR] + ([FLOOR] if FLOOR in results else [])
    names = []
    for m in modes:
        for r in results[m]:
            if r["kind"] == "coding" and r["task"] not in names:
                names.append(r["task"])
    if not names:
        return ""
    cell = {(m, r["task"]): r for m in modes for r in results[m] if r["kind"] == "coding"}
    lines = ["| coding task | " + " | ".join(modes) + " |", "|---" * (len(modes) + 1) + "|"]
    for n in names:
        marks = []
        for m in modes:
            r = cell.get((m, n))
            if r is None:
                marks.append("")
            else:
                mark = "PASS" if r["passed"] else "fail"
                if r["outcome"] != "ok":
                    mark += f" ({r['outcome']})"
                marks.append(mark)
        lines.append(f"| {n} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def render(results, header=""):
    """The whole report as text."""
    parts = []
    if header:
        parts.append(header)
    parts.append(table(summarize(results)))
    matrix = coding_matrix(results)
    if matrix:
        parts.append(matrix)
    lost = below_floor(results)
    if FLOOR in results:
        if lost:
            for mode, tasks in lost.items():
                parts.append(f"below the floor: {mode} failed {len(tasks)} task(s) the model alone passed: {', '.join(tasks)}")
        else:
            parts.append("no mode failed a coding task that the model alone passed")
    return "\n\n".join(parts)


def line(mode, r):
    """One progress line for a finished run."""
    note = "" if r["passed"] else "  " + "; ".join(r["failed_checks"])
    if r["outcome"] != "ok":
        note += f"  [{r['outcome']}]"
    extra = []
    if r.get("tests_changed"):
        extra.append("tests changed (restored): " + ", ".join(r["tests_changed"]))
    if r.get("written") is not None:
        extra.append("wrote " + (", ".join(r["written"]) or "nothing"))
    if extra:
        note += "  {" + "; ".join(extra) + "}"
    return (
        f"{mode:<7} {r['task']:<22} {'PASS' if r['passed'] else 'fail'}"
        f"  calls={r['tool_calls']:<2} in={r['tokens_in']:<6} out={r['tokens_out']:<5}"
        f" {r['seconds']:>6.1f}s{note}"
    )
