"""bench/run.py keeps working: a smoke run end to end (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_quick_prints_and_writes_the_tables_and_the_adapters_agree(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- bench:throughput:begin -->\nOLD-NUMBERS\n<!-- bench:throughput:end -->\n\nkept\n")
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--doc", str(doc),
                          "--work", str(tmp_path / "work")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    # the hand-written and JMESPath adapters print the generated adapter's records
    assert "same mapping: ok" in run.stdout
    for adapter in ("generated", "hand-written", "jmespath", "floor"):
        assert f"| agent events (JSONL) | 300 | 0.1 | {adapter} |" in run.stdout
        assert f"| eval log (nested JSON) | 300 | 0.1 | {adapter} |" in run.stdout
    assert "| rlviz | `examples/verifiers-math/spec.yaml` |" in run.stdout
    text = doc.read_text()
    assert "OLD-NUMBERS" not in text and "<!-- bench:throughput:end -->\n\nkept\n" in text  # block replaced, rest kept
    assert text.count("| agent events (JSONL) | 300 |") == 4 and "<!-- bench:build:begin -->" in text


def test_stream_bounds_quick_runs_every_shape_and_the_adapter_stops_at_its_bounds():
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "stream_bounds.py"), "--quick", "--no-mapc-run"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("| ") and "adapter (RLViz)" in line]
    assert [row.split(" | ")[0][2:] for row in rows] == ["big-element", "unread-string", "unread-nested",
                                                        "small-samples", "bomb"]
    bomb = rows[-1].split(" | ")
    assert bomb[3] == "1" and "the output would pass RLViz's limit of 33554432 bytes" in bomb[-1]


def test_session_merge_quick_maps_the_log_both_ways():
    """bench/session_merge.py --quick: a 5 MB session log, merged and line by line; the record
    counts say each copy's 34 responses became 34 generations (and 129 events line by line)."""
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "session_merge.py"), "--quick"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    copies = int(run.stdout.split(" lines")[0].split(", ")[-1].replace(",", "")) // 136
    counts = {label: int(line.rsplit(", ", 1)[1].split()[0].replace(",", ""))
              for line in run.stdout.splitlines() for label in ("merge", "line by line")
              if line.strip().startswith(label + ":")}
    # run, case, group, trajectory, the events, four totals, complete
    assert counts == {"merge": 4 + 74 * copies + 4 + 1, "line by line": 4 + 129 * copies + 4 + 1}
    assert "merge / line by line, CPU:" in run.stdout


def test_scale_quick_converts_a_generated_corpus_with_mapc_run():
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--quick"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Corpus: 20 JSONL files" in run.stdout
    row = next(line for line in run.stdout.splitlines() if line.startswith("| mapc-run | 1 |"))
    assert row.count("|") == 12 and "1.00x" in row
