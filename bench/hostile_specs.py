#!/usr/bin/env python3
"""Worst-case specs within mapc's limits: time and peak memory of `mapc check` (and builds).

Usage::

    python bench/hostile_specs.py                # every case: `mapc check`, then rlviz builds
    python bench/hostile_specs.py --only alias   # cases whose name contains "alias"
    python bench/hostile_specs.py --no-build     # `mapc check` only
    python bench/hostile_specs.py --keep DIR     # leave the generated specs in DIR
    python bench/hostile_specs.py --only dotted --no-build --timeout 120
                                                 # long field paths (issue 28 item 5)

The goal (docs/security.md): `mapc check` takes under 2 s and 200 MB for any spec
within the limits. The cases below are built from the limits themselves
(``mapc.spec.loader``: bytes, nodes, expanded characters, depth;
``mapc.spec.semantic``: expression budget; ``mapc.core.diagnostics``: errors reported;
``mapc.spec.schema``: fixtures), each just inside them or just past them, in the
shapes that cost most per byte; plus every folder of ``tests/cases/hostile_specs/``.

Each command is a fresh process (``python -m mapc.cli``, as a user runs it);
the script takes wall time, CPU time (user + system, ``os.wait4``) and peak
RSS (``ru_maxrss``). CPU time is what the goal is read against: other jobs on a
shared machine disturb wall time far more. Valid specs are also built for
RLViz (with a one-line fixture), which reports the size of the largest
generated file. Nothing is asserted: the tests check the bounds structurally.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from mapc.core.diagnostics import MAX_REPORTED  # noqa: E402
from mapc.spec.loader import MAX_DEPTH, MAX_EXPANDED_CHARS, MAX_NODES, MAX_SPEC_BYTES  # noqa: E402
from mapc.spec.schema import MAX_FIXTURES  # noqa: E402
from mapc.spec.semantic import EXPRESSION_MIN_COST, MAX_EXPRESSION_CHARS, MAX_SPEC_EXPRESSION_CHARS  # noqa: E402

GOAL_SECONDS = 2.0
GOAL_MB = 200

HEAD = """mapc: 1
name: hostile
source:
  format: hostile-events
  container: jsonl
  probe: {require: [type]}
"""
EVENTS = """  events: {each: "@", kind: message, role: role, content: text}
"""
VALID = HEAD + "records:\n" + EVENTS
FIXTURE = '{"type": "message", "role": "user", "text": "hi"}\n'
#: Nodes of VALID plus the few a case adds around its bulk.
SLACK = 100


def _records(level_fields: str) -> str:
    """A valid spec whose `case` level (one per line) carries ``level_fields``."""
    return HEAD + 'records:\n  case:\n    each: "@"\n' + level_fields + \
        '  events: {each: "[@]", kind: message, role: role, content: text}\n'


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# -- the cases: name -> (spec text, {relative path: text} of files beside it) ------------------

def unknown_keys_at_node_limit():
    n = (MAX_NODES - SLACK) // 2
    return VALID + "".join(f"unknown_key_{i:06d}: 1\n" for i in range(n)), {}


def unknown_keys_issue_10k():
    return VALID + "".join(f"unknown_key_{i:06d}: {i}\n" for i in range(10_000)), {}


def long_unknown_keys():
    size = (MAX_SPEC_BYTES - 4096) // 4
    return VALID + "".join(f"{'k' * (size - 1)}{i}: 1\n" for i in range(4)), {}


def duplicate_keys_at_node_limit():
    n = (MAX_NODES - SLACK) // 2
    return VALID + "tables:\n  t:\n" + "".join(f"    k: {i}\n" for i in range(n)), {}


def wrong_types_at_node_limit():
    return VALID + "tables:\n" + "".join(f"  t{i}: {i}\n" for i in range((MAX_NODES - SLACK) // 2)), {}


def missing_fixtures_at_max_items():
    return VALID + "fixtures:\n" + "".join(f"- missing-{i}.jsonl\n" for i in range(MAX_FIXTURES)), {}


def missing_fixtures_issue_90k():
    return VALID + "fixtures:\n" + "".join(f"- missing-{i}.jsonl\n" for i in range(90_000)), {}


def fixture_named_max_items_times():
    return VALID + "fixtures:\n" + "- sample.jsonl\n" * MAX_FIXTURES, {"sample.jsonl": FIXTURE}


def table_at_node_limit():
    n = (MAX_NODES - SLACK) // 2
    return VALID + "tables:\n  t:\n" + "".join(f"    k{i}: v{i}\n" for i in range(n)), {}


def tasks_at_node_limit():
    n = (MAX_NODES - SLACK) // 3
    return VALID + "tasks:\n" + "".join(f"- {{id: t{i}}}\n" for i in range(n)), {}


def one_scalar_at_char_limit():
    return VALID + "description: " + "x" * (MAX_EXPANDED_CHARS - 4096) + "\n", {}


def aliases_at_char_limit():
    piece = MAX_EXPANDED_CHARS // 5
    return VALID + f"description: &d {'x' * piece}\ntables:\n  t:\n" + \
        "".join(f"    k{i}: *d\n" for i in range(3)), {}


def aliases_issue_1200_of_1mib():
    return VALID + f"description: &d {'x' * (1 << 20)}\ntables:\n  t:\n" + \
        "".join(f"    k{i}: *d\n" for i in range(1200)), {}


def aliases_issue_100_of_1mib_in_a_table():
    return VALID + f"description: &d {'x' * (1 << 20)}\ntables:\n  t:\n" + \
        "".join(f"    k{i}: *d\n" for i in range(100)), {}


def alias_bomb_of_nodes():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    return VALID + "tables:\n  t:\n" + "".join(f"    {line}\n" for line in lines), {}


def nesting_at_max_depth():
    depth = MAX_DEPTH - 3  # tables.t and the spec itself are three levels
    return VALID + "tables:\n  t: " + "{a: " * depth + "1" + "}" * depth + "\n", {}


def nesting_past_libyaml_limit():
    return VALID + "tables:\n  t: " + "[" * 100_000 + "]" * 100_000 + "\n", {}


def long_path_expressions_at_budget():
    n = MAX_SPEC_EXPRESSION_CHARS // MAX_EXPRESSION_CHARS - 1
    expr = ".".join(["a"] * (MAX_EXPRESSION_CHARS // 2 - 1))
    return _records("    metadata:\n" + "".join(f"      k{i}: {_quoted(expr + str(i))}\n" for i in range(n))), {}


def long_path_expressions_past_budget():
    expr = ".".join(["a"] * (MAX_EXPRESSION_CHARS // 2 - 1))
    n = (MAX_SPEC_BYTES - 4096) // MAX_EXPRESSION_CHARS
    return _records("    metadata:\n" + "".join(f"      k{i}: {_quoted(expr + str(i))}\n" for i in range(n))), {}


def short_expressions_at_budget():
    n = MAX_SPEC_EXPRESSION_CHARS // EXPRESSION_MIN_COST - 20  # the events' own expressions
    return _records("    metadata:\n" + "".join(f"      k{i}: \"a{i}.b[?c == 'x{i}'].d\"\n" for i in range(n))), {}


def metadata_expressions_issue_90k():
    return _records("    metadata:\n" + "".join(f"      k{i}: a{i}\n" for i in range(90_000))), {}


def expressions_past_budget_within_nodes():
    n = (MAX_NODES - SLACK) // 2
    return _records("    metadata:\n" + "".join(f"      k{i}: a{i}\n" for i in range(n))), {}


def feedback_template_at_budget():
    parts = "".join(f"{{score}} and {{{{literal}}}} {i} " for i in range(MAX_SPEC_EXPRESSION_CHARS // 40))
    return VALID + ("evaluators:\n- id: e\n  description: d\n  score: '`1`'\n  feedback: "
                    + _quoted(parts[: MAX_SPEC_EXPRESSION_CHARS - 200]) + "\n"), {}


def unclosed_placeholder_in_a_long_template():
    return VALID + ("evaluators:\n- id: e\n  description: d\n  score: '`1`'\n  feedback: "
                    + _quoted("x" * (MAX_SPEC_BYTES - 8192) + "{") + "\n"), {}


def long_agent_argument_with_a_bad_placeholder():
    return VALID + ("agent:\n  command: [" + _quoted("x" * (MAX_SPEC_BYTES - 8192) + "{nope}") +
                    "]\n  trace: t.jsonl\n"), {}


def invalid_enum_value_of_megabytes():
    return VALID.replace("container: jsonl", "container: " + "j" * (MAX_SPEC_BYTES - 4096)), {}


def syntax_error_at_the_end():
    n = (MAX_NODES - SLACK) // 2
    return VALID + "tables:\n  t:\n" + "".join(f"    k{i}: v{i}\n" for i in range(n)) + "  bad: [\n", {}


def control_character_at_the_end():
    return VALID + "description: " + "x" * (MAX_SPEC_BYTES - 4096) + "\x1b\n", {}


def one_long_line_of_errors():
    items = ", ".join(f"u{i}: {i}" for i in range((MAX_NODES - SLACK) // 2))
    return VALID.replace("records:", "tables: {t: 1, " + items + "}\nrecords:"), {}


def extends_chain_sharing_the_budget():
    files = {}
    n = (MAX_NODES - SLACK) // 2 // 8
    for depth in range(15):
        body = "tables:\n  t%d:\n" % depth + "".join(f"    k{i}: v{i}\n" for i in range(n))
        files[f"base{depth}.yaml"] = (f"extends: ./base{depth + 1}.yaml\n" if depth < 14 else VALID) + body
    return f"extends: ./base0.yaml\nname: hostile\n", files


def many_rules_at_budget():
    n = MAX_SPEC_EXPRESSION_CHARS // (2 * EXPRESSION_MIN_COST) - 10
    rules = "".join(f"      - {{when: \"type == 't{i}'\", kind: message, content: text}}\n" for i in range(n))
    return HEAD + 'records:\n  events:\n    each: "@"\n    rules:\n' + rules, {}


def many_evaluators_at_budget():
    n = MAX_SPEC_EXPRESSION_CHARS // EXPRESSION_MIN_COST - 10
    evs = "".join(f"- {{id: e{i}, description: d, score: \"`{i}`\", range: [0, {n + 1}]}}\n" for i in range(n))
    return VALID + "evaluators:\n" + evs, {}


#: A fixture line whose `a` holds a key with a dot: a long path `a.a.a...` misses at its second
#: name, and the check looks for a dotted key the path could have meant (issue 28 item 5).
DOTTED_FIXTURE = '{"type": "message", "role": "user", "text": "hi", "a": {"a.b": 1, "c": 2}}\n'


def _dotted_path(path: str):
    """A valid spec whose event content reads ``path``, with a fixture that has ``a``."""
    return (HEAD + "records:\n" + f"  events: {{each: \"@\", kind: message, role: role, content: {_quoted(path)}}}\n"
            + "fixtures: [fixture.jsonl]\n"), {"fixture.jsonl": DOTTED_FIXTURE}


def dotted_path_of_100_names():
    return _dotted_path(".".join(["a"] * 100))


def dotted_path_of_200_names():
    return _dotted_path(".".join(["a"] * 200))


def dotted_path_of_400_names():
    return _dotted_path(".".join(["a"] * 400))


def dotted_path_of_800_names():
    return _dotted_path(".".join(["a"] * 800))


def dotted_path_of_4_kib():
    """A few-KB path of the kind a fuzzer writes: short varied names, 4 KiB."""
    names = [("a", "b1", "_c", "dd")[i % 4] for i in range(1600)]
    return _dotted_path(".".join(names)[: 4096].rstrip("."))


def dotted_path_at_expression_limit():
    return _dotted_path(".".join(["a"] * (MAX_EXPRESSION_CHARS // 2)))


def dotted_path_past_expression_limit():
    return _dotted_path(".".join(["a"] * (MAX_EXPRESSION_CHARS // 2 + 1)))


CASES = {name: fn for name, fn in globals().items()
         if callable(fn) and not name.startswith("_") and fn.__module__ == __name__ and name not in ("main", "run")}


def hostile_case_folders(dest: Path) -> dict[str, Path]:
    """Every tests/cases/hostile_specs/ folder, written out as the test does."""
    out = {}
    for case in sorted((ROOT / "tests" / "cases" / "hostile_specs").iterdir()):
        if not (case / "expected.json").is_file():
            continue
        folder = dest / f"case-{case.name}"
        folder.mkdir()
        spec = folder / "spec.yaml"
        if (case / "make.py").is_file():
            module_spec = importlib.util.spec_from_file_location(f"hostile_{case.name.replace('-', '_')}",
                                                                 case / "make.py")
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            module.make(spec)
        else:
            shutil.copyfile(case / "spec.yaml", spec)
        out[f"case:{case.name}"] = spec
    return out


def run(argv: list[str], cwd: Path, timeout: float | None = None) -> tuple[int, float, float, float, bytes]:
    """(exit code, wall s, CPU s, peak RSS MB, stdout) of one fresh process, killed after
    ``timeout`` seconds (its stdout is then empty)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill) if timeout else None
    if timer:
        timer.start()
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if timer:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    parser.add_argument("--no-build", action="store_true", help="only `mapc check`")
    parser.add_argument("--keep", type=Path, help="write the specs here and keep them")
    parser.add_argument("--timeout", type=float, default=600, help="stop a command after this many seconds")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="mapc-hostile-"))
    scratch.mkdir(parents=True, exist_ok=True)
    python = [sys.executable, "-m", "mapc.cli"]
    env_root = str(ROOT)
    os.environ["PYTHONPATH"] = env_root + os.pathsep + os.environ.get("PYTHONPATH", "")
    specs: dict[str, Path] = {}
    try:
        for name, fn in CASES.items():
            if args.only not in name:
                continue
            folder = scratch / name
            folder.mkdir(exist_ok=True)
            text, files = fn()
            for rel, content in files.items():
                (folder / rel).write_text(content, encoding="utf-8")
            (folder / "spec.yaml").write_text(text, encoding="utf-8")
            specs[name] = folder / "spec.yaml"
        for name, path in hostile_case_folders(Path(tempfile.mkdtemp(dir=scratch))).items():
            if args.only in name:
                specs[name] = path
        print(f"`mapc check` of worst-case specs (goal: under {GOAL_SECONDS:g} s CPU and {GOAL_MB} MB; "
              f"limits: {MAX_SPEC_BYTES} bytes, {MAX_NODES} nodes, {MAX_EXPANDED_CHARS} expanded characters, "
              f"{MAX_SPEC_EXPRESSION_CHARS} expression characters, {MAX_REPORTED} errors reported)\n")
        print(f"{'case':48s} {'spec KB':>8s} {'wall s':>7s} {'CPU s':>6s} {'RSS MB':>7s}  outcome")
        worst_cpu = worst_rss = 0.0
        valid = []
        for name, path in specs.items():
            code, wall, cpu, rss, out = run(python + ["check", "--json", str(path)], path.parent, args.timeout)
            try:
                payload = json.loads(out)
                codes = sorted({d["code"] for d in payload.get("diagnostics", []) if d["severity"] == "error"})
                outcome = "valid" if payload.get("ok") else ", ".join(codes) or payload.get("code", "?")
            except ValueError:
                outcome = f"exit {code}, no JSON" if wall < args.timeout else f"stopped after {args.timeout:g} s"
            if outcome == "valid":
                valid.append(name)
            flag = "" if cpu < GOAL_SECONDS and rss < GOAL_MB else "  <-- over the goal"
            worst_cpu, worst_rss = max(worst_cpu, cpu), max(worst_rss, rss)
            print(f"{name:48s} {path.stat().st_size / 1024:8.0f} {wall:7.2f} {cpu:6.2f} {rss:7.0f}  "
                  f"{outcome[:60]}{flag}")
        print(f"\nworst: {worst_cpu:.2f} s CPU, {worst_rss:.0f} MB peak RSS over {len(specs)} specs")
        if args.no_build or not valid:
            return 0
        print(f"\n`mapc build --target rlviz` of the valid ones (with a one-line fixture)\n")
        print(f"{'case':48s} {'wall s':>7s} {'CPU s':>6s} {'RSS MB':>7s} {'largest file KB':>16s}  outcome")
        for name in valid:
            path = specs[name]
            (path.parent / "fixture.jsonl").write_text(FIXTURE, encoding="utf-8")
            text = path.read_text(encoding="utf-8")
            built = path.parent / "spec-built.yaml"
            if "\nfixtures:" not in text and not text.startswith("extends:"):
                text += "fixtures: [fixture.jsonl]\n"
            built.write_text(text, encoding="utf-8")
            out_dir = path.parent / "out"
            code, wall, cpu, rss, out = run(python + ["build", "--json", str(built), "--target", "rlviz",
                                                      "-o", str(out_dir)], path.parent, args.timeout)
            largest = max((f.stat().st_size for f in out_dir.rglob("*") if f.is_file()), default=0)
            try:
                payload = json.loads(out)
                outcome = "built" if payload.get("ok") else ", ".join(
                    sorted({d["code"] for d in payload.get("diagnostics", []) if d["severity"] == "error"})) or "?"
            except ValueError:
                outcome = f"exit {code}, no JSON"
            print(f"{name:48s} {wall:7.2f} {cpu:6.2f} {rss:7.0f} {largest / 1024:16.0f}  {outcome[:50]}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
