"""Generated RLViz adapters, executed: probe, stream, determinism, failures, test_adapter.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlviz.support import ROOT, run_adapter
from mapc.codegen.program import load_module, read_runtime
from mapc.targets.rlviz.validator.records import StreamChecker, check_stream, split_lines
from shared_paths import CORPUS

OWN_FORMAT = {  # corpus files each example's adapter is written for
    "verifiers-math": {"verifiers-results/math-python--gpt-5-nano.results.jsonl"},
    "nemo-gym-blackjack": {"nemo-gym-rollouts/blackjack.example_rollouts.jsonl",
                           "nemo-gym-rollouts/workplace_assistant.example_rollouts.jsonl"},
    "inspect-ai-popularity": {f"inspect-ai-eval-log/{p.name}" for p in (CORPUS / "inspect-ai-eval-log").iterdir()},
}
CORPUS_FILES = sorted(p for p in CORPUS.glob("*/*") if p.is_file())


def _probe(plugin, source, tmp, **extra):
    run = run_adapter(plugin, "probe", source, tmp, **extra)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count(b"\n") == 1 and run.stdout.endswith(b"\n")
    return json.loads(run.stdout)


@pytest.mark.parametrize("name", sorted(OWN_FORMAT))
def test_probe_accepts_its_format_and_rejects_every_other_corpus_file(built, name, tmp_path):
    plugin, _ = built[name]
    for path in CORPUS_FILES:
        answer = _probe(plugin, path, tmp_path)
        own = path.relative_to(CORPUS).as_posix() in OWN_FORMAT[name]
        assert answer["supported"] is own, (path.name, answer)
        assert set(answer) <= {"supported", "confidence", "format", "reason"}
        assert 0 <= answer["confidence"] <= 1


@pytest.mark.parametrize("name,cut", [("verifiers-math", 2500), ("nemo-gym-blackjack", 3000),
                                      ("inspect-ai-popularity", 4000)])
def test_probe_recognises_a_cut_off_source(built, name, cut, tmp_path):
    plugin, source = built[name]
    prefix = tmp_path / source.name
    prefix.write_bytes(source.read_bytes()[:cut])
    assert _probe(plugin, prefix, tmp_path)["supported"] is True
    # and the same through RLViz's probe_bytes limit on the full file
    answer = _probe(plugin, source, tmp_path, limits={"probe_bytes": cut})
    assert answer["supported"] is True


@pytest.mark.parametrize("name", sorted(OWN_FORMAT))
def test_probe_reads_a_bounded_prefix(built, name, tmp_path):
    plugin, source = built[name]
    big = tmp_path / source.name
    data = source.read_bytes()
    big.write_bytes(data + b"\n" * (4 << 20))  # a long file: the probe must not read it all
    reads = []
    real_open = open

    class Counting:
        def __init__(self, fh):
            self.fh = fh

        def read(self, n=-1):
            chunk = self.fh.read(n)
            reads.append(len(chunk))
            return chunk

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    # the adapter and its runtime module, with every `open` counting what it reads
    import builtins

    ns = load_module((plugin / "adapter.py").read_text(), f"adapter_{name.replace('-', '_')}",
                     read_runtime(plugin),
                     builtins={**vars(builtins), "open": lambda *a, **k: Counting(real_open(*a, **k))})
    answer = ns["probe"](str(big), 1000)
    assert answer["supported"] in (True, False)
    assert 0 < sum(reads) <= 1001


def test_probe_of_directory_empty_and_binary_sources(built, tmp_path):
    plugin, _ = built["verifiers-math"]
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 4)
    folder = tmp_path / "folder"
    folder.mkdir()
    for path in (tmp_path / "empty.jsonl", tmp_path / "binary.bin", folder):
        answer = _probe(plugin, path, tmp_path)
        assert answer["supported"] is False and answer["reason"]


@pytest.mark.parametrize("name", sorted(OWN_FORMAT))
def test_stream_is_valid_canonical_ndjson(built, name, tmp_path):
    plugin, source = built[name]
    run = run_adapter(plugin, "stream", source, tmp_path)
    assert run.returncode == 0, run.stderr
    summary = check_stream(run.stdout, root=source.parent)  # schema, relations and provenance
    assert summary.records > 10
    first = json.loads(run.stdout.split(b"\n", 1)[0])
    assert first["record_type"] == "run"


def test_jsonl_events_carry_line_and_byte_ranges_that_match_the_source(built, tmp_path):
    plugin, source = built["nemo-gym-blackjack"]
    run = run_adapter(plugin, "stream", source, tmp_path)
    data = source.read_bytes()
    lines = data.split(b"\n")
    seen = 0
    for raw in split_lines(run.stdout):
        rec = json.loads(raw)
        if rec["record_type"] != "event":
            continue
        loc = rec["source"]
        chunk = data[loc["byte_offset"]:loc["byte_offset"] + loc["byte_length"]]
        assert chunk == lines[loc["line"] - 1]
        assert loc["path"] == source.name
        seen += 1
    assert seen == 24


@pytest.mark.parametrize("name", sorted(OWN_FORMAT))
def test_stream_bytes_do_not_depend_on_hash_seed_cwd_request_path_or_location(built, name, tmp_path):
    plugin, source = built[name]
    moved = tmp_path / "elsewhere" / "plugin"
    shutil.copytree(plugin, moved)
    outputs = set()
    for n, (where, seed, cwd) in enumerate([(plugin, "0", None), (plugin, "12345", tmp_path),
                                            (moved, "random", Path("/"))]):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = run_adapter(where, "stream", source, tmp_path, cwd=cwd, env=env, request_name=f"req-{n}.json")
        assert run.returncode == 0, run.stderr
        outputs.add(run.stdout)
    assert len(outputs) == 1


def _broken_sources(tmp_path: Path, source: Path) -> dict[str, Path]:
    data = source.read_bytes()
    cases = {
        "cut inside a record": data[: len(data) // 2],
        "empty": b"",
        "not JSON": b"this is not json\n",
        "missing required fields": b'{"unrelated": true}\n',
    }
    out = {}
    for label, content in cases.items():
        path = tmp_path / (label.replace(" ", "-") + source.suffix)
        path.write_bytes(content)
        out[label] = path
    return out


@pytest.mark.parametrize("name", sorted(OWN_FORMAT))
def test_malformed_source_exits_1_with_one_line_and_no_complete(built, name, tmp_path):
    plugin, source = built[name]
    for label, path in _broken_sources(tmp_path, source).items():
        run = run_adapter(plugin, "stream", path, tmp_path)
        assert run.returncode == 1, (label, run.stdout[-200:], run.stderr)
        assert run.stderr.count(b"\n") == 1 and run.stderr.startswith(b"error: "), (label, run.stderr)
        assert b'"record_type":"complete"' not in run.stdout, label
        checker = StreamChecker()
        for raw in split_lines(run.stdout):  # whatever was written is still valid protocol
            checker.add_line(raw)


@pytest.mark.parametrize("mutation,message", [
    (lambda r: r.update(api_version="rlviz.dev/v2"), "api_version"),
    (lambda r: r.update(extra=1), "unknown field"),
    (lambda r: r.update(operation="probe"), "does not match"),
    (lambda r: r["source"].update(root="/nonexistent-root"), "leads outside its root"),
    (lambda r: r["source"].update(path="relative.jsonl"), "absolute"),
    (lambda r: r["source"].update(kind="socket"), "kind"),
    (lambda r: r.update(limits={"probe_bytes": 0}), "probe_bytes"),
    (lambda r: r["source"].update(modified_at="yesterday"), "modified_at"),
    (lambda r: r["source"].update(size_bytes=-1), "size_bytes"),
    (lambda r: r.update(limits={"max_records": 3}), "unknown field"),
    (lambda r: r.pop("source"), "missing 'source'"),
])
def test_malformed_request_exits_2_with_one_line(built, tmp_path, mutation, message):
    plugin, source = built["verifiers-math"]
    request = {"api_version": "rlviz.dev/v1alpha1", "operation": "stream",
               "source": {"path": str(source), "root": str(source.parent), "kind": "file"}, "limits": {}}
    mutation(request)
    path = tmp_path / "req.json"
    path.write_text(json.dumps(request))
    run = subprocess.run([sys.executable, str(plugin / "adapter.py"), "stream", "--request", str(path)],
                         capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    assert run.returncode == 2 and run.stdout == b""
    assert run.stderr.count(b"\n") == 1 and message.encode() in run.stderr, run.stderr


@pytest.mark.parametrize("argv", [[], ["stream"], ["stream", "--request"], ["export", "--request", "x"],
                                  ["stream", "--request", "/nonexistent/request.json"]])
def test_bad_invocation_exits_2(built, argv):
    plugin, _ = built["verifiers-math"]
    run = subprocess.run([sys.executable, str(plugin / "adapter.py"), *argv], capture_output=True, timeout=60)
    assert run.returncode == 2 and run.stdout == b"" and run.stderr.count(b"\n") == 1


def test_raw_copies_only_when_the_spec_asks(built, tmp_path):
    from mapc.api import build

    plugin, source = built["nemo-gym-blackjack"]
    plain = run_adapter(plugin, "stream", source, tmp_path).stdout
    assert b'"raw":' not in plain
    spec = (ROOT / "examples/nemo-gym-blackjack/spec.yaml").read_text()
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "spec.yaml").write_text(spec + "\ntargets:\n  rlviz: {raw: true}\n")
    shutil.copy(source, tmp_path / "spec" / source.name)
    result = build(tmp_path / "spec" / "spec.yaml", "rlviz", tmp_path / "raw-plugin")
    assert result.ok, result.validation and result.validation.text
    raw = run_adapter(tmp_path / "raw-plugin", "stream", source, tmp_path).stdout
    events = [json.loads(x) for x in split_lines(raw) if b'"record_type":"event"' in x]
    assert events and all("raw" in e for e in events)
    assert events[0]["raw"] == json.loads(source.read_bytes().split(b"\n")[0])["responses_create_params"]["input"][0]


def test_generated_adapter_needs_only_the_standard_library(built, tmp_path):
    # run_adapter already uses `python -I -S` (no site-packages); check the imports too
    import ast

    for plugin, _ in built.values():
        parts = [(p.relative_to(plugin).as_posix(), set()) for p in sorted((plugin / "mapc_runtime").glob("*.py"))]
        assert len(parts) >= 3
        for name, own in (("adapter.py", {"mapc_runtime"}), *parts):
            tree = ast.parse((plugin / name).read_text())
            modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            modules |= {n.module.split(".")[0] for n in ast.walk(tree)
                        if isinstance(n, ast.ImportFrom) and not n.level}  # not the runtime's own parts
            assert modules <= set(sys.stdlib_module_names) | own, modules - set(sys.stdlib_module_names)
            assert not modules & {"subprocess", "socket", "urllib", "http", "shutil", "ctypes"}


def test_test_adapter_py_passes_with_a_validator_stand_in(built, rlviz_shim, tmp_path):
    plugin, _ = built["inspect-ai-popularity"]
    env = dict(os.environ, RLVIZ_BIN=str(rlviz_shim))
    run = subprocess.run([sys.executable, "test_adapter.py"], cwd=plugin, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "ok 2025-05-12T20-28-13-04-00_popularity.json: 49 records, inspect-ai-eval-log\n"


def _copy(plugin: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "plugin"
    shutil.copytree(plugin, dest)
    return dest


@pytest.mark.parametrize("cases,message", [
    ({"schema_version": 1, "cases": []}, "non-empty"),
    ({"schema_version": 2, "cases": []}, "schema_version"),
    ({"schema_version": 1, "cases": [], "extra": 1}, "exactly the keys"),
    ({"schema_version": 1, "cases": [{"source": "../adapter.py", "expected_format": "f", "min_records": 1}]},
     "must not be absolute or contain"),
    ({"schema_version": 1, "cases": [{"source": "/etc/hosts", "expected_format": "f", "min_records": 1}]},
     "must not be absolute or contain"),
    ({"schema_version": 1, "cases": [{"source": "link.json", "expected_format": "f", "min_records": 1}]},
     "leads outside testdata"),
    ({"schema_version": 1, "cases": [{"source": "x", "expected_format": "f", "min_records": True}]},
     "min_records"),
])
def test_test_adapter_py_rejects_bad_cases(built, rlviz_shim, tmp_path, cases, message):
    plugin = _copy(built["verifiers-math"][0], tmp_path)
    (plugin / "testdata" / "link.json").symlink_to(plugin / "adapter.py")
    (plugin / "testdata" / "cases.json").write_text(json.dumps(cases))
    env = dict(os.environ, RLVIZ_BIN=str(rlviz_shim))
    run = subprocess.run([sys.executable, "test_adapter.py"], cwd=plugin, env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1 and message in run.stderr, run.stderr


def test_test_adapter_py_fails_when_rlviz_disagrees(built, tmp_path):
    plugin = _copy(built["verifiers-math"][0], tmp_path)
    cases = json.loads((plugin / "testdata" / "cases.json").read_text())
    fake = tmp_path / "fake-rlviz"
    reports = {
        "rejects": ("exit 1", 1),
        "wrong format": (json.dumps({"deterministic": True, "format": "other", "records": 500}), 0),
        "too few records": (json.dumps({"deterministic": True, "format": cases["cases"][0]["expected_format"],
                                        "records": 1}), 0),
        "not deterministic": (json.dumps({"deterministic": False, "format": "x", "records": 500}), 0),
    }
    for label, (body, code) in reports.items():
        fake.write_text(f"#!/bin/sh\necho '{body}'\nexit {code}\n")
        fake.chmod(0o755)
        run = subprocess.run([sys.executable, "test_adapter.py"], cwd=plugin, env=dict(os.environ, RLVIZ_BIN=str(fake)),
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 1 and run.stderr.startswith("test_adapter: "), (label, run.stderr)
