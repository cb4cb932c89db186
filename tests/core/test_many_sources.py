"""`mapc run` and `mapc validate` over many sources: parallel runs give exactly the sequential
results, in order; a progress bar and a summary table appear only when stderr is a terminal."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from shared_paths import CORPUS

import mapc
from mapc.api import expand_sources

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "verifiers-math" / "spec.yaml"
TRACE = ROOT / "examples" / "verifiers-math" / "results.jsonl"
ESC = "\x1b["


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    """A folder of sources: four good traces (one nested deeper), one malformed, one of
    another format, and a hidden file that folder expansion must skip."""
    folder = tmp_path_factory.mktemp("traces")
    lines = TRACE.read_text().splitlines(keepends=True)
    for n in range(3):
        (folder / f"part-{n}.jsonl").write_text("".join(lines[n * 5:(n + 1) * 5]))
    (folder / "deeper").mkdir()
    shutil.copy(TRACE, folder / "deeper" / "all.jsonl")
    (folder / "broken.jsonl").write_text(lines[0] + "{not json\n")
    shutil.copy(CORPUS / "verifiers-results" / "math-python--gpt-5-nano.metadata.json", folder / "meta.json")
    (folder / ".hidden.jsonl").write_text("ignored\n")
    return folder


def cli(*args, stderr=subprocess.PIPE):
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=stderr, timeout=300)


def on_a_terminal(*args) -> tuple[int, bytes, str]:
    """Run mapc with stderr on a pseudo-terminal (stdout a pipe): (exit code, stdout, terminal text)."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "160"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    stdout = proc.stdout.read()
    code = proc.wait(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return code, stdout, b"".join(chunks).decode("utf-8", "replace")


def test_folders_expand_to_their_files_sorted_without_hidden_ones(traces, tmp_path):
    names = [p.relative_to(traces).as_posix() for p in expand_sources([traces])]
    assert names == ["broken.jsonl", "deeper/all.jsonl", "meta.json", "part-0.jsonl", "part-1.jsonl",
                     "part-2.jsonl"]
    with pytest.raises(mapc.UsageError, match="no files"):
        expand_sources([tmp_path])


def test_parallel_runs_give_exactly_the_sequential_results(traces):
    seen: list[tuple[int, int]] = []
    sequential = mapc.run_many(SPEC, [traces, TRACE], jobs=1)
    parallel = mapc.run_many(SPEC, [traces, TRACE], jobs=3, progress=lambda done, total, _: seen.append((done, total)))
    assert [(r.source, r.ok, r.error, r.warnings, r.ndjson) for r in parallel] == \
        [(r.source, r.ok, r.error, r.warnings, r.ndjson) for r in sequential]
    assert [r.ok for r in sequential] == [False, True, False, True, True, True, True]
    assert sequential[-1].ndjson == mapc.run(SPEC, TRACE).ndjson
    assert seen == [(n, 7) for n in range(1, 8)]


def test_run_jobs_flag_changes_nothing_in_the_output(traces):
    one = cli("run", SPEC, traces, TRACE, "--jobs", "1")
    two = cli("run", SPEC, traces, TRACE, "--jobs", "2")
    assert (one.returncode, one.stdout, one.stderr) == (two.returncode, two.stdout, two.stderr)
    assert one.returncode == 1, "a source that fails makes the run fail"
    assert one.stdout == b"".join(r.ndjson for r in mapc.run_many(SPEC, [traces, TRACE], jobs=1))
    errors = one.stderr.decode().splitlines()
    assert errors == [f"error: {src}: {mapc.run(SPEC, src).error}" for src in (traces / "broken.jsonl",
                                                                               traces / "meta.json")]
    assert "invalid JSON" in errors[0] and "missing required field prompt" in errors[1]
    assert ESC not in one.stderr.decode(), "piped: no progress bar, no table"


def test_run_json_lists_every_source(traces):
    proc = cli("run", SPEC, traces / "part-0.jsonl", traces / "broken.jsonl", "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 1 and payload["ok"] is False
    part = mapc.run(SPEC, traces / "part-0.jsonl")
    assert [(r["source"], r["ok"], r["records"]) for r in payload["results"]] == [
        (str(traces / "part-0.jsonl"), True, part.records), (str(traces / "broken.jsonl"), False, [])]
    assert part.record_count == 60


def test_one_source_is_the_envelope_of_a_result_of_many(traces):
    """One source: the envelope of one result; several: the same envelope per source, in `results`."""
    one = json.loads(cli("run", SPEC, TRACE, "--json").stdout)
    assert set(one) == {"ok", "diagnostics", "spec", "source", "records", "warnings"}
    several = json.loads(cli("run", SPEC, TRACE, traces / "part-0.jsonl", "--json").stdout)
    assert set(several) == {"ok", "diagnostics", "spec", "results"}
    assert set(several["results"][0]) == set(one) - {"spec"} and several["results"][0]["records"] == one["records"]


def test_run_on_a_terminal_draws_progress_and_a_summary(traces):
    code, stdout, screen = on_a_terminal("run", SPEC, traces / "part-0.jsonl", traces / "part-1.jsonl",
                                         traces / "broken.jsonl", "--jobs", "1")
    assert code == 1
    assert stdout == b"".join(r.ndjson for r in mapc.run_many(SPEC, [traces / "part-0.jsonl",
                                                                     traces / "part-1.jsonl"], jobs=1))
    assert "mapping" in screen and ESC in screen, "a progress bar was drawn"
    for header in ("source", "records", "warnings", "verdict"):
        assert header in screen
    assert "2 ok, 1 failed" in screen and "FAIL" in screen
    assert f"error: {traces / 'broken.jsonl'}: line 2" in screen


def test_validate_on_a_terminal_and_piped(traces, tmp_path):
    plugin = tmp_path / "plugin"
    assert mapc.build(SPEC, "rlviz", plugin).ok
    sources = [traces / "part-0.jsonl", traces / "deeper"]
    piped = cli("validate", "--target", "rlviz", plugin, *sources, "--jobs", "2")
    assert piped.returncode == 0 and piped.stderr == b""
    assert piped.stdout.decode().splitlines() == [
        f"rlviz: ok {traces / 'part-0.jsonl'}: 60 records (verifiers-results), deterministic",
        f"rlviz: ok {traces / 'deeper' / 'all.jsonl'}: 178 records (verifiers-results), deterministic"]
    assert piped.stdout == cli("validate", "--target", "rlviz", plugin, *sources, "--jobs", "1").stdout
    code, stdout, screen = on_a_terminal("validate", "--target", "rlviz", plugin, *sources)
    assert code == 0 and stdout == piped.stdout
    assert "validating" in screen and "mapc validate --target rlviz" in screen and "all 2 ok" in screen


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Rollout files in folders per run, written in an order that is not the sorted one; the
    first in sorted order is the largest, so with two workers later files finish first."""
    folder = tmp_path_factory.mktemp("runs")
    lines = TRACE.read_text().splitlines(keepends=True)
    for name, part in (("run-b/r2.jsonl", lines[8:12]), ("run-a/r1.jsonl", lines[:3]),
                       ("run-a/r0.jsonl", lines * 4), ("run-b/.r3.jsonl", lines[:1]), ("notes.txt", ["x\n"])):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text("".join(part))
    return folder


def test_a_quoted_glob_expands_sorted_without_hidden_files(runs):
    got = [p.relative_to(runs).as_posix() for p in expand_sources([runs / "run-*" / "*.jsonl"])]
    assert got == ["run-a/r0.jsonl", "run-a/r1.jsonl", "run-b/r2.jsonl"]
    assert expand_sources([runs / "**" / "*.jsonl"]) == expand_sources([runs / "run-*" / "*.jsonl"])
    assert [p.name for p in expand_sources([runs / "run-?"])] == ["r0.jsonl", "r1.jsonl", "r2.jsonl"]


def test_run_over_a_glob_prints_in_sorted_order_whatever_finishes_first(runs):
    pattern = str(runs / "run-*" / "*.jsonl")
    expected = b"".join(mapc.run(SPEC, runs / name).ndjson for name in ("run-a/r0.jsonl", "run-a/r1.jsonl",
                                                                        "run-b/r2.jsonl"))
    for jobs in ("1", "2"):
        proc = cli("run", SPEC, pattern, "--jobs", jobs)
        assert (proc.returncode, proc.stderr, proc.stdout) == (0, b"", expected)


def test_a_glob_stays_inside_the_folder_before_its_first_wildcard(runs, tmp_path):
    with pytest.raises(mapc.UsageError, match=r"'\.\.' after a wildcard would match outside"):
        expand_sources([runs / "run-*" / ".." / "notes.txt"])
    with pytest.raises(mapc.UsageError, match="no files match"):
        expand_sources([runs / "run-*" / "*.csv"])
    trap = tmp_path / "trap"
    shutil.copytree(runs / "run-a", trap / "run-a")
    (trap / "run-a" / "outside.jsonl").symlink_to(TRACE)
    with pytest.raises(mapc.UsageError, match=r"outside\.jsonl \(matched by .*\) leads outside"):
        expand_sources([trap / "run-*" / "*.jsonl"])
    proc = cli("run", SPEC, trap / "run-*" / "*.jsonl")
    assert proc.returncode == 2 and proc.stdout == b"" and b"leads outside" in proc.stderr


def test_a_file_named_like_a_pattern_is_read_as_it_is(tmp_path):
    odd = tmp_path / "rollouts[1].jsonl"
    shutil.copy(TRACE, odd)
    assert expand_sources([odd]) == [odd]
    proc = cli("run", SPEC, odd)
    assert proc.returncode == 0 and proc.stdout == mapc.run(SPEC, odd).ndjson != b""
