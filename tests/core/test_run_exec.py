"""`mapc run SPEC SOURCE` maps in a process without mapc's compiler (mapc/pipeline/run_exec.py, D73):
the same bytes, messages and exit statuses as mapping in process, a Ctrl-C still says
"interrupted", and nothing is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mapc

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "runtime_errors"
EXAMPLE = ROOT / "examples" / "verifiers-math"


def _mapc_run(spec: Path, source: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mapc.cli", "run", str(spec), str(source)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def test_the_command_prints_what_mapping_in_process_gives():
    """Runtime-diagnostics cases (an error naming the spec place, one in a base spec, warnings):
    stdout, stderr and exit status as `mapc.run` in process gives them to the command."""
    cases = [CASES / name for name in ("null-argument", "wrong-type-in-inherited-rule", "warnings-name-their-place")]
    runs = [(case / "spec.yaml", next(case.glob("input.*"))) for case in cases]
    procs = [_mapc_run(spec, source) for spec, source in runs]  # at once: 2 cores, short runs
    said = []
    for (spec, source), proc in zip(runs, procs):
        out, err = proc.communicate(timeout=120)
        want = mapc.run(spec, source)
        lines = [f"warning: {m}" for m in want.warning_messages]
        if not want.ok:
            lines.append(f"error: {source}: {want.error}")
        assert (proc.returncode, out, err.decode().splitlines()) == (0 if want.ok else 1, want.ndjson, lines)
        said += lines
    # failures and warnings name the spec place, e.g. records.events.rules[0].content (spec.yaml:16)
    assert sum("cannot be evaluated" in line and "(spec.yaml:" in line for line in said) >= 1
    assert sum(line.startswith("warning: ") and "(spec.yaml:" in line for line in said) >= 2


def _exec_done(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"\0-c\0" in fh.read()
    except OSError:
        return False


def test_the_mapping_process_holds_no_compiler_and_a_ctrl_c_leaves_nothing(tmp_path):
    trace = tmp_path / "big.jsonl"
    line = (EXAMPLE / "results.jsonl").read_bytes().splitlines()[0]
    rows = [json.loads(line) for _ in range(3000)]
    trace.write_text("".join(json.dumps({**r, "example_id": i}) + "\n" for i, r in enumerate(rows)))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _mapc_run(EXAMPLE / "spec.yaml", trace, env={**os.environ, "TMPDIR": str(tmp)})
    try:
        assert proc.stdout.read(10) == b'{"record_t'  # mapping: the pipe is full, it waits for us
        deadline = time.monotonic() + 60
        while not _exec_done(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _exec_done(proc.pid)
        with open(f"/proc/{proc.pid}/maps") as fh:
            maps = fh.read()
        assert "site-packages" not in maps  # no pyyaml, jinja2, jsonschema, typer, ... loaded
        proc.send_signal(signal.SIGINT)
        proc.stdout.read()  # what it wrote before it stopped
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()
        proc.wait()
    assert err.splitlines()[-1] == "interrupted" and "Traceback" not in err
    assert list(tmp.iterdir()) == []
