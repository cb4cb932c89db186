"""Every example and every library spec, built for RLViz, passes the real RLViz validator.

Each spec (``examples/*/spec*.yaml`` and ``specs/*.yaml``) is built once for
``rlviz``; the plugin is then validated by the real ``rlviz-validate`` (RLViz's
own Go code) on each of its fixtures (``testdata/cases.json``) and on each
corpus trace of its format (``tests/data/corpus/<format>/``, the files the library
tests list for that format). mapc's built-in validator must give the same
verdict and the same report (records, warnings, format, digest), and find
nothing beyond RLViz either: ``mapc build`` validates strictly.

Both validators run the adapters with this interpreter's folder first on PATH
(``python3`` then starts without a machine-wide site-packages); the verdicts do
not depend on it, the suite's time does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from rlviz_mutants import fast_python_env

from shared_paths import CORPUS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "library"))
from library_support import AUXILIARY, FORMATS  # noqa: E402

EXAMPLE_SPECS = sorted(ROOT.glob("examples/*/spec*.yaml"))
#: The language cases of issue 27's event streams (merge, carry, counters, pairing), on their fixtures
CASE_SPECS = sorted(p for prefix in ("merge-", "carry-", "counters-", "pairing-")
                    for p in ROOT.glob(f"tests/cases/language/{prefix}*/spec.yaml"))
WORKERS = 4


def _spec_id(spec: Path) -> str:
    if spec.parent.parent.name == "examples":
        return f"{spec.parent.name}/{spec.name}"
    return f"specs/{spec.name}"


def _library_specs() -> list[Path]:
    from mapc.spec.library import library_specs

    return list(library_specs().values())


SPECS = {_spec_id(p): p for p in EXAMPLE_SPECS + _library_specs()}


def corpus_traces(fmt: str) -> list[Path]:
    """The corpus traces of ``fmt`` (a folder may hold several formats: AgentLab's summary JSON
    and its result_df CSV); every corpus file is a trace of one format or auxiliary."""
    listed = [rel for rels in FORMATS.values() for rel in rels]
    for p in CORPUS.glob("*/*"):
        if p.is_dir():  # a session log's own folder (subagents) or a fixture set kept in its layout
            continue
        rel = f"{p.parent.name}/{p.name}"
        assert p.name == "PROVENANCE.md" or rel in AUXILIARY or listed.count(rel) == 1, rel
    return [CORPUS / rel for rel in FORMATS.get(fmt, [])]


@pytest.fixture(scope="session")
def conformance_runs(real_rlviz, tmp_path_factory) -> dict[tuple[str, str], dict]:
    """(spec id, source label) -> both verdicts, for every spec's fixtures and corpus traces."""
    from mapc.api import build

    base = tmp_path_factory.mktemp("rlviz-conformance")
    env = fast_python_env()
    jobs = []
    for n, (spec_id, spec) in enumerate(sorted(SPECS.items())):
        plugin = base / f"plugin-{n}"
        result = build(spec, "rlviz", plugin, validate=False)  # validated below, by both validators
        assert result.diagnostics.ok, (spec_id, [d.format() for d in result.diagnostics])
        cases = json.loads((plugin / "testdata" / "cases.json").read_text(encoding="utf-8"))["cases"]
        for case in cases:
            jobs.append((spec_id, f"testdata/{case['source']}", plugin, plugin / "testdata" / case["source"],
                         case["expected_format"]))
        for trace in corpus_traces(result.spec.source.format):
            jobs.append((spec_id, f"corpus/{trace.parent.name}/{trace.name}", plugin, trace, result.spec.source.format))

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(pool.map(lambda job: _verdicts(real_rlviz, env, job), jobs))


def _verdicts(real_rlviz, env, job) -> tuple[tuple[str, str], dict]:
    """Both validators' verdicts on one (spec id, source label, plugin, source, format) job."""
    from mapc.targets.rlviz.validator.validate import ValidationFailure, validate

    spec_id, label, plugin, source, fmt = job
    real = subprocess.run([str(real_rlviz), "--json", str(plugin), str(source)], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env=env)
    try:
        report = validate(plugin, source, env=env)
        mapc = {"ok": True, **report.payload(), "beyond_rlviz": [f.text() for f in report.findings.kept]}
    except ValidationFailure as exc:
        mapc = {"ok": False, **exc.payload()}
    return (spec_id, label), {"format": fmt, "real_exit": real.returncode,
                              "real": json.loads(real.stdout or real.stderr or "null"), "mapc": mapc}


@pytest.fixture(scope="session")
def case_runs(real_rlviz, tmp_path_factory) -> dict[tuple[str, str], dict]:
    """(case, fixture) -> both verdicts, for the event-stream language cases."""
    from mapc.api import build

    base = tmp_path_factory.mktemp("rlviz-cases")
    env = fast_python_env()
    jobs = []
    for spec in CASE_SPECS:
        plugin = base / spec.parent.name
        result = build(spec, "rlviz", plugin, validate=False)
        assert result.diagnostics.ok, (spec, [d.format() for d in result.diagnostics])
        for case in json.loads((plugin / "testdata" / "cases.json").read_text(encoding="utf-8"))["cases"]:
            jobs.append((spec.parent.name, case["source"], plugin, plugin / "testdata" / case["source"],
                         case["expected_format"]))
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(pool.map(lambda job: _verdicts(real_rlviz, env, job), jobs))


@pytest.mark.parametrize("case", [p.parent.name for p in CASE_SPECS])
def test_real_rlviz_passes_the_event_stream_cases_and_mapc_agrees(case_runs, case):
    runs = {label: run for (name, label), run in case_runs.items() if name == case}
    assert runs, case
    _assert_agree(runs)


def test_every_example_and_library_spec_is_covered(conformance_runs):
    assert {spec for spec, _ in conformance_runs} == set(SPECS)
    assert len(SPECS) >= len(EXAMPLE_SPECS) + 10
    for spec_id in SPECS:
        labels = [label for spec, label in conformance_runs if spec == spec_id]
        assert any(label.startswith("testdata/") for label in labels), spec_id
        assert any(label.startswith("corpus/") for label in labels), f"{spec_id}: no corpus trace of its format"


@pytest.mark.parametrize("spec_id", sorted(SPECS))
def test_real_rlviz_passes_and_mapc_agrees(conformance_runs, spec_id):
    runs = {label: run for (spec, label), run in conformance_runs.items() if spec == spec_id}
    assert runs
    _assert_agree(runs)


def _assert_agree(runs: dict[str, dict]) -> None:
    """The real RLViz accepts every run, and mapc's validator says the same, with nothing beyond."""
    for label, run in sorted(runs.items()):
        real, mapc = run["real"], dict(run["mapc"])
        assert run["real_exit"] == 0, f"the real RLViz rejects {label}: {real}"
        assert real["deterministic"] is True and real["format"] == run["format"] and real["records"] >= 1, real
        assert mapc.pop("ok") is True, f"{label}: mapc's validator rejects what the real RLViz accepts: {mapc}"
        assert mapc.pop("beyond_rlviz") == [], f"{label}: generated output must meet RLViz's schemas too"
        assert mapc == real, f"{label}: mapc's report differs from the real RLViz's"
