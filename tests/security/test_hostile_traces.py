"""Hostile traces through every target's generated code: a clean failure or a defined warning.

Each case is a folder under tests/cases/hostile_traces/ holding the input
(``input.jsonl`` / ``input.json``, or ``make.py`` whose ``make(path, outside)``
creates it at test time: a 100 MB line, a directory, symlinks, a named pipe) and
``expected.json``: the container (which of the two specs in that folder reads it)
and, per target, the expected outcome class with a substring of the one-line
diagnostic or the warning count.

The specs (json, jsonl, csv) are built once per module for rlviz, relai and cap-evolve (each task
id is a case name; cap-evolve and RELAI replay ``traces/<case>``), then every input
is run through:

- RLViz: ``adapter.py probe`` and ``stream --request`` (RLViz's own invocation);
- RELAI: ``run.py --task-id CASE --output PATH`` from the project root;
- cap-evolve: ``Adapter().run_target`` then ``score`` in a fresh process with
  the stand-in ``cap_evolve``.

Beyond each case's expectation, every run is checked for the contract: never a
traceback; RLViz exits nonzero with exactly one ``error:`` line and no
``complete`` record (or exits 0 with a ``complete`` record counting the
warnings), whatever it wrote is whole lines of valid protocol, and the probe
always answers; RELAI exits 0 with a valid result (``failure`` set with a one-line
message); cap-evolve never raises, sets ``Rollout.error`` and scores an errored
rollout 0.0 with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mapc.targets.relai.validator.catalog import Findings
from mapc.targets.relai.validator.result import check_result
from mapc.targets.rlviz.validator.records import RecordError, StreamChecker, split_lines
from security_support import CASES, drive_capevolve, host_env

HOSTILE = CASES / "hostile_traces"
CASE_DIRS = sorted(p for p in HOSTILE.iterdir() if (p / "expected.json").is_file())
EXT = {"jsonl": "jsonl", "json": "json", "csv": "csv", "subtrajectory": "jsonl"}  # spec-<key>.yaml -> trace
TARGETS = ("rlviz", "relai", "cap-evolve")


def _expected(case: Path) -> dict:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))


def test_the_corpus_is_large_and_every_case_is_complete():
    assert len(CASE_DIRS) >= 30
    for case in CASE_DIRS:
        exp = _expected(case)
        assert exp["container"] in EXT and exp["about"], case.name
        assert set(TARGETS) <= set(exp), case.name
        inputs = [p.name for p in case.iterdir() if p.name.startswith("input.") or p.name == "make.py"]
        assert len(inputs) == 1, (case.name, inputs)
    names = {c.name for c in CASE_DIRS}
    for required in ("truncated-last-line", "invalid-utf8", "bom-first-line", "line-of-100-mb", "nan-infinity",
                     "wrong-types", "missing-required-field", "deep-nesting", "empty-file",
                     "directory-instead-of-file", "symlink-outside-root", "huge-integer"):
        assert required in names


def _materialize(case: Path, dest: Path, outside: Path) -> None:
    """Put the case's input at ``dest`` (a file, folder, symlink or pipe). A subtrajectory case's
    ``make`` puts the files beside (or outside) and returns the paths its session names: the
    session is written here, the same for each case."""
    maker = case / "make.py"
    if maker.is_file():
        spec = importlib.util.spec_from_file_location(f"hostile_{case.name.replace('-', '_')}", maker)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        named = module.make(dest, outside)
        if named is not None:
            _session(dest, named)
    else:
        shutil.copyfile(next(case.glob("input.*")), dest)


def _session(path: Path, files: list[str]) -> None:
    """A session (spec-subtrajectory.yaml): a prompt, the calls that start the subagents, one
    `agent` line (the call's result) naming each of ``files`` (its subagent's transcript), an answer."""
    lines = [{"type": "user", "text": "What is 2 + 2?"},
             {"type": "assistant", "text": "", "calls": [f"c{n}" for n in range(len(files))]}]
    lines += [{"type": "agent", "call": f"c{n}", "text": "done", "file": f} for n, f in enumerate(files)]
    lines.append({"type": "assistant", "text": "4"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _place(case: Path, dests: list[Path], outside: Path) -> None:
    """The input at every path in ``dests``; a big regular file is made once and hard-linked (a
    small one is made for each: a subtrajectory case puts files beside it, or names a path
    relative to it)."""
    for d in dests:
        if os.path.lexists(d):
            shutil.rmtree(d) if d.is_dir() and not d.is_symlink() else d.unlink()
    first = dests[0]
    _materialize(case, first, outside)
    for d in dests[1:]:
        if first.is_file() and not first.is_symlink() and first.stat().st_size > 1 << 20:
            os.link(first, d)
        else:
            _materialize(case, d, outside)


def _build(container: str, root: Path, cases: list[Path]) -> dict:
    """The container's spec in a fresh project, built for every target; traces are benign copies
    of the fixture until the builds are done."""
    from mapc.api import build

    project = root / container
    project.mkdir()
    spec = project / "spec.yaml"
    shutil.copyfile(HOSTILE / f"spec-{container}.yaml", spec)
    fixture = HOSTILE / f"fixture.{EXT[container]}"
    shutil.copyfile(fixture, project / fixture.name)
    names = [c.name for c in cases]
    (project / "tasks.jsonl").write_text("".join(json.dumps({"id": n, "input": n}) + "\n" for n in names),
                                         encoding="utf-8")
    (project / "traces").mkdir()
    for n in names:
        shutil.copyfile(fixture, project / "traces" / f"{n}.{EXT[container]}")
    outs = {"rlviz": project / "rlviz", "relai": project, "cap-evolve": project / "cap-evolve"}
    for target, out in outs.items():
        result = build(spec, target, out)
        assert result.ok, (container, target, [d.format() for d in result.diagnostics],
                           result.validation and result.validation.text[-2000:])
    return {"project": project, "outs": outs}


def _rlviz(plugin: Path, source: Path, tmp: Path, operation: str) -> subprocess.CompletedProcess:
    """`python3 adapter.py OP --request PATH` as RLViz runs it (the request names the source
    and its root, the folder it sits in)."""
    kind = "directory" if source.is_dir() else "file"
    request = tmp / f"{source.name}.{operation}.request.json"
    request.write_text(json.dumps({
        "api_version": "rlviz.dev/v1alpha1", "operation": operation,
        "source": {"path": str(source), "root": str(source.parent), "kind": kind}, "limits": {},
    }), encoding="utf-8")
    return subprocess.run([sys.executable, "-I", "-S", str(plugin / "adapter.py"), operation, "--request", str(request)],
                          cwd=plugin, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


def _relai(project: Path, case: str, tmp: Path) -> tuple[subprocess.CompletedProcess, dict | None]:
    output = tmp / f"{case}.result.json"
    runner = next((project / ".relai" / "custom-adaptor").iterdir()) / "run.py"
    proc = subprocess.run(["python3", str(runner.relative_to(project)), "--task-id", case, "--output", str(output)],
                          cwd=project, env=host_env(), capture_output=True, text=True, timeout=120)
    result = json.loads(output.read_text(encoding="utf-8")) if output.is_file() else None
    return proc, result


def _by_container() -> dict[str, list[Path]]:
    by_container: dict[str, list[Path]] = {}
    for case in CASE_DIRS:
        by_container.setdefault(_expected(case)["container"], []).append(case)
    return by_container


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> dict:
    """Every container's spec built for every target, once: container -> {project, outs}."""
    root = tmp_path_factory.mktemp("hostile")
    return {container: _build(container, root, cases) for container, cases in _by_container().items()}


@pytest.fixture(scope="module")
def outcomes(projects, tmp_path_factory) -> dict:
    """Every case run through every target: case name -> target -> what happened."""
    outside = tmp_path_factory.mktemp("outside-the-root")
    runs = tmp_path_factory.mktemp("runs")
    by_container = _by_container()
    out: dict[str, dict] = {}
    jobs = []
    for container, cases in by_container.items():
        built = projects[container]
        project, outs = built["project"], built["outs"]
        for case in cases:
            name = f"{case.name}.{EXT[container]}"
            _place(case, [project / "traces" / name, outs["cap-evolve"] / "traces" / name], outside)
            out[case.name] = {"container": container}
            jobs.append((case.name, "rlviz-probe", lambda p=outs["rlviz"], s=project / "traces" / name:
                         _rlviz(p, s, runs, "probe")))
            jobs.append((case.name, "rlviz", lambda p=outs["rlviz"], s=project / "traces" / name:
                         _rlviz(p, s, runs, "stream")))
            jobs.append((case.name, "relai", lambda p=project, c=case.name: _relai(p, c, runs)))
        ops = []
        for case in cases:
            ops += [{"op": "run", "task": case.name, "ctx": ".", "seed": 0, "as": case.name},
                    {"op": "score", "task": case.name, "rollout": case.name}]
        jobs.append((container, "cap-evolve", lambda a=outs["cap-evolve"], o=ops, c=project:
                     drive_capevolve(a, o, cwd=c)))
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [(case, what, pool.submit(fn)) for case, what, fn in jobs]
        for case, what, fut in futures:
            if what == "cap-evolve":
                (results, proc) = fut.result()
                cases = [c for c in CASE_DIRS if _expected(c)["container"] == case]
                for i, c in enumerate(cases):
                    out[c.name]["cap-evolve"] = {"rollout": results[2 * i], "score": results[2 * i + 1],
                                                 "stdout": proc.stdout, "stderr": proc.stderr}
            else:
                out[case][what] = fut.result()
    for built in projects.values():  # the 100 MB input: free the disk now
        for path in built["project"].rglob("*"):
            if path.is_file() and not path.is_symlink() and path.stat().st_size > 50 << 20:
                path.unlink()
    return out


# --- per target: the contract, then the case's expectation -----------------------------------
def _no_traceback(text) -> None:
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    assert "Traceback" not in text and 'File "' not in text, text[-2000:]


def _check_rlviz(case: str, got: dict, exp: dict) -> None:
    probe, run = got["rlviz-probe"], got["rlviz"]
    _no_traceback(probe.stderr)
    _no_traceback(run.stderr)
    if "probe" in exp:
        assert probe.returncode == 0 and probe.stderr == b"", (probe.returncode, probe.stderr)
        answer = json.loads(probe.stdout)
        assert probe.stdout.count(b"\n") == 1 and answer["supported"] is exp["probe"], answer
        if "probe_reason" in exp:  # the same words as stream's one-line error
            assert answer["reason"] == exp["probe_reason"] and run.stderr == f"error: {exp['error']}\n".encode(), \
                (answer, run.stderr)
    elif "probe_exit" in exp:  # a request RLViz would not send: refused like a bad request
        assert probe.returncode == exp["probe_exit"] and probe.stdout == b"", probe.stdout
    checker = StreamChecker()
    lines = list(split_lines(run.stdout))
    for raw in lines:  # whatever was written is whole lines of valid protocol
        checker.add_line(raw)
    assert run.stdout == b"" or run.stdout.endswith(b"\n")
    if exp["exit"] == 0:
        assert run.returncode == 0, run.stderr.decode(errors="replace")
        assert checker.complete and checker.warnings == exp["warnings"], (checker.complete, checker.warnings)
        stderr = run.stderr.decode().splitlines()
        assert all(line.startswith("warning: ") for line in stderr), stderr
        assert len(stderr) == exp["warnings"], stderr
    else:
        assert run.returncode == exp["exit"], (run.returncode, run.stderr)
        assert not checker.complete and b'"record_type":"complete"' not in run.stdout
        assert run.stderr.count(b"\n") == 1 and run.stderr.startswith(b"error: "), run.stderr
        assert exp["error"].encode() in run.stderr, run.stderr


def _check_relai(case: str, got, exp: dict) -> None:
    proc, result = got
    _no_traceback(proc.stderr)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert result is not None, "RELAI's runner must write a result"
    findings = Findings("result.json")
    task = {"id": case, "evaluators": [{"id": "answered"}]}
    check_result(result, case, task, findings)
    assert findings.ok, [d.format() for d in findings.items]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == len(proc.stderr.splitlines()), proc.stderr
    if exp["failure"] is None:
        assert "failure" not in result, result.get("failure")
        assert len(warnings) == exp["warnings"], warnings
    else:
        failure = result["failure"]
        assert failure["kind"] == exp["failure"], failure
        assert "\n" not in failure["message"] and exp["error"] in failure["message"], failure
        assert result["evaluations"] == [] and result["trace"]["steps"] == []


def _check_capevolve(case: str, got: dict, exp: dict) -> None:
    rollout, score = got["rollout"], got["score"]
    _no_traceback(got["stderr"])
    assert got["stdout"] == b""
    assert "raised" not in rollout and "raised" not in score, (rollout, score)
    if exp["error"] is None:
        assert rollout.get("error") is None, rollout["error"]
        assert rollout["metadata"].get("mapping_warnings", 0) == exp["warnings"], rollout["metadata"]
        assert score["reward"] == exp["reward"], score
    else:
        error = rollout.get("error")
        assert error and "\n" not in error and exp["error"] in error, error
        assert score["reward"] == 0.0 and error in score["feedback"], score


CHECKS = {"rlviz": _check_rlviz, "relai": _check_relai, "cap-evolve": _check_capevolve}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASE_DIRS, ids=[c.name for c in CASE_DIRS])
def test_hostile_trace(outcomes, case, target):
    exp = _expected(case)
    got = outcomes[case.name]
    CHECKS[target](case.name, got if target == "rlviz" else got[target], exp[target])


def test_a_symlink_never_leaks_the_file_outside_the_root(outcomes):
    got = outcomes["symlink-outside-root"]
    assert b"SECRET-CONTENT" not in got["rlviz"].stdout + got["rlviz"].stderr
    _, result = got["relai"]
    assert "SECRET-CONTENT" not in json.dumps(result)
    capevolve = got["cap-evolve"]
    assert "SECRET-CONTENT" not in json.dumps([capevolve["rollout"], capevolve["score"]])


def test_relai_exits_nonzero_with_one_line_only_when_no_result_can_be_written(projects, tmp_path):
    """RELAI's contract: a result for every outcome; a nonzero exit only when none can be written."""
    project = projects["jsonl"]["project"]
    runner = next((project / ".relai" / "custom-adaptor").iterdir()) / "run.py"
    blocked = tmp_path / "a-folder"
    blocked.mkdir()
    for output in (blocked, tmp_path / "a-file" / "result.json"):
        (tmp_path / "a-file").write_text("not a folder")
        proc = subprocess.run(["python3", str(runner.relative_to(project)), "--task-id", "empty-file",
                               "--output", str(output)], cwd=project, env=host_env(), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 1, (proc.returncode, proc.stderr)
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: cannot write the result"), proc.stderr
        _no_traceback(proc.stderr)
    assert list(blocked.iterdir()) == [], "no temporary file is left behind"


def test_a_subtrajectory_never_reads_a_file_outside_the_root(outcomes):
    """A subagent's transcript that leads out of the source root (`..`, an absolute path, a
    symlinked file or folder) is refused with a warning naming it; its text is never read."""
    for case in ("subtrajectory-dotdot-escape", "subtrajectory-absolute-path", "subtrajectory-symlink-file-out",
                 "subtrajectory-symlink-folder-out"):
        got = outcomes[case]
        assert b"SECRET-CONTENT" not in got["rlviz"].stdout + got["rlviz"].stderr, case
        assert b"leads outside the source's root" in got["rlviz"].stderr, (case, got["rlviz"].stderr)
        _, result = got["relai"]
        assert "SECRET-CONTENT" not in json.dumps(result), case
        capevolve = got["cap-evolve"]
        assert "SECRET-CONTENT" not in json.dumps([capevolve["rollout"], capevolve["score"]]), case
        assert "leads outside the source's root" in " ".join(capevolve["rollout"]["metadata"]["warning_messages"])
    stderr = outcomes["subtrajectory-too-many-files"]["rlviz"].stderr.decode()
    assert "would be subtrajectory file 257 of this source; not mapped, nor any other past this bound" in stderr
    lines = outcomes["subtrajectory-too-many-files"]["rlviz"].stdout.splitlines()
    assert sum(b'"record_type":"trajectory"' in line for line in lines) == 1 + 256  # the session and 256


HOSTILE_ROLLOUTS = [  # what a cap-evolve run directory may hold after edits, crashes or other versions
    {"task_id": "empty-file", "output": None, "trace": "not an object"},
    {"task_id": "empty-file", "output": {"nested": [1, None]}, "trace": {"events": "not a list"}},
    {"task_id": "empty-file", "output": "4", "trace": {"events": [None, 7, {"id": []}], "signals": "x"}},
    {"task_id": "empty-file", "output": "4", "trace": {"events": [], "signals": [{"name": None, "value": {}}]}},
    {"task_id": "empty-file", "output": "\ud800 \x00" * 1000, "trace": None, "metadata": {"x": [1] * 1000}},
    {"task_id": "empty-file", "output": "4", "trace": {"trajectory": 5, "events": [{"kind": 1}], "artifacts": 3}},
]


def test_capevolve_score_never_raises_on_a_hostile_rollout(projects, tmp_path):
    """`score` gets rollouts cap-evolve saved as JSON: whatever they hold, a Score in [0, 1] with feedback."""
    built = projects["jsonl"]
    ops = [{"op": "score", "task": "empty-file", "rollout": r} for r in HOSTILE_ROLLOUTS]
    results, proc = drive_capevolve(built["outs"]["cap-evolve"], ops, cwd=built["project"])
    _no_traceback(proc.stderr)
    assert proc.stdout == b""
    for rollout, score in zip(HOSTILE_ROLLOUTS, results):
        assert "raised" not in score, (rollout, score)
        assert 0.0 <= score["reward"] <= 1.0 and score["feedback"], score
