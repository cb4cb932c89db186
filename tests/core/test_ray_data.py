"""``mapc.Mapper`` on a real local Ray instance (Ray Data): records byte-identical to what
``mapc run`` prints for the same files, one task per file, and the example
examples/ray-rollouts/convert.py end to end. One Ray instance for the module (starting one
costs seconds); conftest.py keeps this file on one test worker."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from shared_paths import CORPUS

import mapc

ray = pytest.importorskip("ray", reason="Ray is in the test extra: pip install -e '.[test]'")
ray_data = pytest.importorskip("ray.data")

ROOT = Path(__file__).resolve().parents[2]
#: spec -> corpus files; each read by Ray Data as bytes (read_binary_files)
AS_BYTES = {
    ROOT / "specs" / "nemo-gym-rollouts.yaml": ["nemo-gym-rollouts/blackjack.example_rollouts.jsonl",
                                                "nemo-gym-rollouts/workplace_assistant.example_rollouts.jsonl"],
    ROOT / "specs" / "swe-agent-traj.yaml": ["swe-agent-traj/marshmallow-code__marshmallow-1867.function_calling.traj",
                                             "swe-agent-traj/pydicom__pydicom-1458.traj"],
    ROOT / "specs" / "openhands-events.yaml": ["openhands-events/basic_gui_mode.json",
                                               "openhands-events/harbor-rfc-openhands_trajectory.json"],
}
VERIFIERS = ROOT / "examples" / "verifiers-math" / "spec.yaml"  # reads metadata.json beside the trace
# Ray Data's own DataContext warns about its deprecated settings when first used
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")


@pytest.fixture(scope="module")
def cluster():
    """A local Ray instance: 2 CPUs, no dashboard, its files in a private temporary folder,
    a token of its own (so nothing is written to ~/.ray)."""
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(16)  # ray.init turns token mode on and finds it here
    folder = tempfile.mkdtemp(prefix="mapc-ray-")  # short: Ray's socket paths must fit 107 bytes
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=folder)
        ray_data.DataContext.get_current().enable_progress_bars = False
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def mapc_run(spec: Path, sources: list[Path]) -> bytes:
    """What ``mapc run SPEC SOURCE...`` prints: each source's stream, in order."""
    return subprocess.run([sys.executable, "-m", "mapc.cli", "run", str(spec), *map(str, sources)], cwd=ROOT,
                          capture_output=True, timeout=300, check=True).stdout


@pytest.mark.parametrize("spec", sorted(AS_BYTES), ids=lambda p: p.stem)
def test_flat_map_over_read_binary_files_gives_mapc_runs_records(cluster, spec):
    files = [CORPUS / rel for rel in AS_BYTES[spec]]
    ds = ray_data.read_binary_files([str(f) for f in files], include_paths=True, override_num_blocks=len(files))
    rows = ds.flat_map(mapc.Mapper(spec)).take_all()
    by_file = {f: sorted((r["index"], r["record"]) for r in rows if r["source"].endswith("/" + f.name)) for f in files}
    assert len(rows) == sum(map(len, by_file.values())), "every row names one of the files"
    ndjson = "".join(record + "\n" for f in files for _, record in by_file[f]).encode()
    assert ndjson == mapc_run(spec, files)


def test_map_batches_gives_the_rows_of_flat_map(cluster):
    spec = ROOT / "specs" / "nemo-gym-rollouts.yaml"
    files = [str(CORPUS / rel) for rel in AS_BYTES[spec]]
    mapper = mapc.Mapper(spec)
    ds = ray_data.read_binary_files(files, include_paths=True, override_num_blocks=1)
    batched = ds.map_batches(mapper.batch, batch_size=2).take_all()
    key = (lambda row: (files.index(row["source"]), row["index"]))
    assert sorted(batched, key=key) == sorted(ds.flat_map(mapper).take_all(), key=key)
    assert {row["source"] for row in batched} == set(files)


def test_per_file_rows_with_paths_read_siblings_and_report_failures(cluster, tmp_path):
    shutil.copytree(VERIFIERS.parent, tmp_path / "verifiers")
    broken = tmp_path / "verifiers" / "broken.jsonl"
    broken.write_text((VERIFIERS.parent / "results.jsonl").read_text().splitlines()[0] + "\n{not json\n")
    files = [tmp_path / "verifiers" / "results.jsonl", broken, CORPUS / "verifiers-results" /
             "math-python--gpt-5-nano.results.jsonl"]
    rows = (ray_data.from_items([{"path": str(f)} for f in files], override_num_blocks=len(files))
            .map(mapc.Mapper(VERIFIERS).per_file).take_all())
    rows.sort(key=lambda row: [str(f) for f in files].index(row["source"]))
    expected = mapc.run_many(VERIFIERS, files, jobs=1)
    assert [(r["ok"], r["error"], r["records"], r["ndjson"]) for r in rows] == \
        [(e.ok, e.error, e.record_count, e.ndjson) for e in expected]
    assert [r["ok"] for r in rows] == [True, False, True] and "invalid JSON" in rows[1]["error"]
    good = [files[0], files[2]]
    assert b"".join(rows[n]["ndjson"] for n in (0, 2)) == mapc_run(VERIFIERS, good)


def load_example():
    path = ROOT / "examples" / "ray-rollouts" / "convert.py"
    spec = importlib.util.spec_from_file_location("ray_rollouts_convert", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # cloudpickle pickles by value only modules it can find
    spec.loader.exec_module(module)
    ray.cloudpickle.register_pickle_by_value(module)  # run as a script its classes pickle by value too
    return module


def test_the_example_converts_a_folder_one_task_per_file(cluster, tmp_path, capsys):
    example = load_example()
    source = tmp_path / "rollouts"
    for rel in AS_BYTES[ROOT / "specs" / "nemo-gym-rollouts.yaml"]:
        (source / "day-1").mkdir(parents=True, exist_ok=True)
        shutil.copy(CORPUS / rel, source / "day-1" / Path(rel).name)
    shutil.copy(CORPUS / "nemo-gym-rollouts" / "blackjack.example_rollouts.jsonl", source / "late.jsonl")
    (source / "broken.jsonl").write_text("{not json\n")
    spec, out = ROOT / "specs" / "nemo-gym-rollouts.yaml", tmp_path / "out"
    code = example.main([str(spec), str(source), "-o", str(out)])
    summary = json.loads(capsys.readouterr().out)
    files = mapc.api.expand_sources([source])
    assert code == 1 and summary["files"] == 4 and summary["ok"] == 3 and summary["tasks"] == 4
    assert [f["source"] for f in summary["failed"]] == [str(source / "broken.jsonl")]
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert written == ["day-1", "day-1/blackjack.example_rollouts.jsonl.ndjson",
                       "day-1/workplace_assistant.example_rollouts.jsonl.ndjson", "late.jsonl.ndjson"], \
        "one NDJSON file per mapped file, none for the broken one, nothing else"
    for f in files[1:]:
        assert (out / f"{f.relative_to(source)}.ndjson").read_bytes() == mapc_run(spec, [f])
    assert summary["records"] == sum(mapc.run(spec, f).record_count for f in files[1:])
    assert example.main([str(spec), str(source), "-o", str(out)]) == 2, "an output folder in use is refused"
    assert "exists and is not an empty folder" in capsys.readouterr().err
