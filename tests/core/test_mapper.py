"""``mapc.Mapper``: a spec's mapping as a picklable object that carries program text, not live
objects, executes it once per process, and maps to the bytes ``mapc run`` prints. (On a real
Ray instance: tests/core/test_ray_data.py.)"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from shared_paths import CORPUS

import mapc
from mapc.pipeline import mapper as mapper_module

ROOT = Path(__file__).resolve().parents[2]
VERIFIERS = ROOT / "examples" / "verifiers-math" / "spec.yaml"  # reads a sibling (metadata.json)
NEMO = ROOT / "specs" / "nemo-gym-rollouts.yaml"
ROLLOUTS = CORPUS / "nemo-gym-rollouts" / "blackjack.example_rollouts.jsonl"


@pytest.fixture(scope="module")
def nemo() -> mapc.Mapper:
    return mapc.Mapper(NEMO)


def mapc_run(spec: Path, source: Path) -> bytes:
    return subprocess.run([sys.executable, "-m", "mapc.cli", "run", str(spec), str(source)], cwd=ROOT,
                          capture_output=True, timeout=120, check=True).stdout


def test_it_pickles_program_text_only_and_maps_in_a_fresh_process_without_the_spec(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"mapc: 1\nname: rollouts\nextends: nemo-gym-rollouts\n")
    data = pickle.dumps(mapc.Mapper(spec))
    spec.unlink()  # a worker needs neither the spec nor its folder
    assert len(data) < 64 * 1024, "about 45 KB of compressed program text"
    assert str(tmp_path).encode() not in data and b"mapc.spec" not in data, "no spec path, no compiled spec objects"
    (tmp_path / "mapper.pickle").write_bytes(data)
    code = "import pickle, sys; sys.stdout.buffer.write(pickle.load(open(sys.argv[1], 'rb')).run(sys.argv[2]).ndjson)"
    worker = subprocess.run([sys.executable, "-c", code, str(tmp_path / "mapper.pickle"), str(ROLLOUTS)],
                            cwd=tmp_path, capture_output=True, timeout=120, check=True)
    assert worker.stdout == mapc_run(NEMO, ROLLOUTS)


def test_the_program_is_executed_once_per_process(nemo, monkeypatch):
    import mapc.codegen.program as program

    calls = []
    real = program.load_module
    monkeypatch.setattr(program, "load_module", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(mapper_module, "_PROGRAMS", {})
    first, second = pickle.loads(pickle.dumps(nemo)), pickle.loads(pickle.dumps(nemo))
    assert first.run(ROLLOUTS).ndjson == second.run(ROLLOUTS).ndjson == nemo.run(ROLLOUTS).ndjson
    assert len(calls) == 1 and list(mapper_module._PROGRAMS) == [nemo.digest]


def test_a_program_that_does_not_match_its_digest_is_refused(nemo, monkeypatch):
    monkeypatch.setattr(mapper_module, "_PROGRAMS", {})
    forged = pickle.loads(pickle.dumps(nemo))
    forged.digest = "0" * 64
    with pytest.raises(ValueError, match="does not match its digest"):
        forged.run(ROLLOUTS)


def test_rows_of_bytes_map_like_the_file_under_its_name(nemo):
    data = ROLLOUTS.read_bytes()
    by_path = nemo.run(ROLLOUTS)
    by_bytes = nemo.run({"path": "s3://bucket/rollouts/" + ROLLOUTS.name, "bytes": data})
    assert by_bytes.ok and by_bytes.ndjson == by_path.ndjson
    assert by_bytes.source == "s3://bucket/rollouts/" + ROLLOUTS.name


def test_flat_map_rows_are_the_lines_mapc_run_prints(nemo):
    rows = nemo({"path": str(ROLLOUTS)})
    assert [row["index"] for row in rows] == list(range(len(rows)))
    assert {row["source"] for row in rows} == {str(ROLLOUTS)}
    assert "".join(row["record"] + "\n" for row in rows).encode() == mapc_run(NEMO, ROLLOUTS)


def test_a_batch_is_the_rows_of_its_files_as_columns(nemo):
    other = CORPUS / "nemo-gym-rollouts" / "workplace_assistant.example_rollouts.jsonl"
    rows = nemo(str(ROLLOUTS)) + nemo({"path": str(other), "bytes": other.read_bytes()})
    columns = nemo.batch({"path": [str(ROLLOUTS), str(other)], "bytes": [None, other.read_bytes()]})
    assert columns == {key: [row[key] for row in rows] for key in ("source", "index", "record")}


def test_a_source_that_cannot_be_mapped(nemo, tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(ROLLOUTS.read_bytes().splitlines(keepends=True)[0] + b"{not json\n")
    expected = mapc.run(NEMO, broken)
    with pytest.raises(mapc.MappingFailed) as failed:
        nemo(str(broken))
    assert (failed.value.source, failed.value.error) == (str(broken), expected.error)
    row = nemo.per_file({"path": str(broken)})
    assert (row["ok"], row["error"], row["ndjson"]) == (False, expected.error, expected.ndjson)


def test_per_file_rows_carry_what_run_many_gives(nemo):
    row = nemo.per_file(str(ROLLOUTS))
    result = mapc.run_many(NEMO, [ROLLOUTS], jobs=1)[0]
    assert row == {"source": str(ROLLOUTS), "ok": True, "error": None, "warnings": result.warnings,
                   "warning_messages": result.warning_messages, "records": result.record_count,
                   "ndjson": result.ndjson}


def test_a_spec_that_reads_siblings_needs_the_path(tmp_path):
    verifiers = mapc.Mapper(VERIFIERS)
    trace = VERIFIERS.parent / "results.jsonl"
    assert verifiers.run({"path": str(trace)}).ndjson == mapc_run(VERIFIERS, trace)
    with pytest.raises(ValueError, match=r"reads files beside the source .*hint: give rows with only 'path'"):
        verifiers.run({"path": str(trace), "bytes": trace.read_bytes()})


@pytest.mark.parametrize("row", [{"bytes": b"{}"}, {"path": 3}, 42])
def test_a_row_without_a_path_says_what_a_row_needs(nemo, row):
    with pytest.raises(ValueError, match="a mapc row needs 'path'"):
        nemo.run(row)


@pytest.mark.parametrize("name", ["..", ".", "rollouts/"])
def test_a_row_path_never_names_a_folder_for_its_bytes(nemo, name, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = nemo.run({"path": name, "bytes": ROLLOUTS.read_bytes()})
    assert result.ok, result.error  # mapped as a file of its own in a private folder
    assert result.source == name
    assert list(tmp_path.iterdir()) == [], "the private folder is removed, nothing was written beside it"


def test_a_spec_with_errors_raises_spec_error(tmp_path):
    bad = tmp_path / "spec.yaml"
    bad.write_text("mapc: 1\nname: x\n")
    with pytest.raises(mapc.SpecError):
        mapc.Mapper(bad)
