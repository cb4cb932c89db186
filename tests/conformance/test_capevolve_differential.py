"""Differential suite: mapc's built-in cap-evolve gate against the REAL ``cap-evolve check``.

Each mutant of a mapc-built adapter (``capevolve_mutants.py``: one labelled defect per
row, plus clean controls) goes through the real check (``check.sh``) and through
``mapc validate`` (``validate_adapter_dir``, with mapc's stand-in ``cap_evolve``, as a
user without cap-evolve has it). Required, for every mutant:

- the real check gives the verdict the row is labelled with (the defect is real);
- mapc's "cap-evolve check" verdict is exactly the real one, and is reported first;
- mapc passes nothing the real check fails (0 such cases); where mapc fails an adapter
  the real check passes, every problem it reports is labelled "beyond cap-evolve check".

A few mutants also go through mapc's gate with the REAL ``cap_evolve`` package as host
(``$CAPEVOLVE_CORE``-style), the same verdicts required. The agreement table is printed
(``pytest -s``) and attached to any failure.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from capevolve_host import real_check
from capevolve_mutants import MUTANTS, Mutant
from mapc.api import build
from mapc.targets.capevolve.validator import BEYOND, CHECK_NAME, validate_adapter_dir

ROOT = Path(__file__).resolve().parents[2]
BASE_SPEC = ROOT / "examples" / "cap-evolve-tau-bench" / "spec.yaml"
SLOW_TIMEOUT = 4.0
#: Mutants also checked with the real cap_evolve package as mapc's host (one or two per group).
WITH_REAL_PACKAGE = {"clean", "imports-yaml", "absolute-file-assumed", "tasks-file-symlinked", "dangling-symlink",
                     "stub-score", "duck-typed", "runner-model-sys-exit", "runner-model-empties-tasks",
                     "tasks-tuple", "score-returns-namespace", "score-random", "materialize-sys-exit",
                     "writes-stdout-no-newline", "atexit-exit-status", "imports-cap-evolve-stats"}


def test_the_corpus_is_large_and_labelled():
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names))
    defects = [m for m in MUTANTS if not m.defect.startswith("none (control)")]
    assert len(defects) >= 50 and len(MUTANTS) - len(defects) >= 5
    assert sum(not m.host_ok for m in MUTANTS) >= 25 and sum(m.host_ok for m in defects) >= 15


@pytest.fixture(scope="module")
def base_adapter(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("capevolve-base") / "adapters"
    result = build(BASE_SPEC, "cap-evolve", out, validate=False)
    assert result.diagnostics.ok, [d.format() for d in result.diagnostics]
    return out


def make_mutant(base: Path, mutant: Mutant, work: Path) -> Path:
    folder = work / mutant.name / "adapters"
    outside = work / mutant.name / "outside"
    shutil.copytree(base, folder)
    outside.mkdir()
    mutant.apply(folder, outside)
    return folder


def judge(mutant: Mutant, folder: Path, capevolve: Path, venv: Path, real_host: dict | None) -> dict:
    timeout = SLOW_TIMEOUT if mutant.slow else 60.0
    real = real_check(capevolve, venv, folder / "adapter.py", timeout=timeout)
    mapc = validate_adapter_dir(folder, timeout=timeout)
    row = {"mutant": mutant, "real": real, "mapc": mapc}
    if real_host is not None:
        row["mapc_real_host"] = validate_adapter_dir(folder, timeout=timeout, host=real_host)
    return row


def problems_of(row: dict) -> list[str]:
    """What is wrong with mapc's answer on one mutant (empty when it agrees)."""
    m, real, mapc = row["mutant"], row["real"], row["mapc"]
    found = []
    if real["ok"] is not m.host_ok:
        found.append(f"the real check says ok={real['ok']}, the row is labelled {m.host_ok}: "
                     f"{real.get('reason', '')[:200]}")
    for label, report in (("stand-in", mapc), ("real package", row.get("mapc_real_host"))):
        if report is None:
            continue
        check = report.payload[CHECK_NAME]
        if check["ok"] is not real["ok"]:
            found.append(f"mapc ({label}) says cap-evolve check ok={check['ok']} ({check.get('reason', '')[:200]}), "
                         f"the real check ok={real['ok']} ({real.get('reason', '')[:200]})")
        if not real["ok"] and report.ok:
            found.append(f"mapc ({label}) passes what the real check fails")
        lines = report.text.splitlines()
        if len(lines) < 2 or not lines[1].startswith(f"{CHECK_NAME}: "):
            found.append(f"mapc ({label}) does not report cap-evolve check's verdict first")
        problems = report.payload["problems"]
        if not real["ok"] and not (problems and problems[0].startswith(f"{CHECK_NAME}: ")):
            found.append(f"mapc ({label}) does not list cap-evolve check's failure first: {problems[:1]}")
        if real["ok"] and any(not p.startswith(f"{BEYOND}: ") for p in problems):
            found.append(f"mapc ({label}) reports an unlabelled problem: {problems}")
    return found


def table(rows: list[dict]) -> str:
    width = max(len(r["mutant"].name) for r in rows)
    lines = [f"{'mutant':<{width}}  real   mapc-check  mapc  agree  defect",
             f"{'-' * width}  -----  ----------  ----  -----  ------"]
    for r in rows:
        mapc_check = r["mapc"].payload[CHECK_NAME]["ok"]
        verdict = "pass" if r["mapc"].ok else "FAIL"
        agree = "yes" if not problems_of(r) else "NO"
        lines.append(f"{r['mutant'].name:<{width}}  {'pass' if r['real']['ok'] else 'FAIL':<5}  "
                     f"{'pass' if mapc_check else 'FAIL':<10}  {verdict:<4}  {agree:<5}  {r['mutant'].defect}")
    real_fail = [r for r in rows if not r["real"]["ok"]]
    same = sum(r["mapc"].payload[CHECK_NAME]["ok"] is r["real"]["ok"] for r in rows)
    unsafe = sum(r["mapc"].ok for r in real_fail)
    stricter = sum(r["real"]["ok"] and not r["mapc"].ok for r in rows)
    with_real = [r for r in rows if "mapc_real_host" in r]
    same_real = sum(r["mapc_real_host"].payload[CHECK_NAME]["ok"] is r["real"]["ok"] for r in with_real)
    lines += [
        "",
        f"{len(rows)} adapters ({sum(r['mutant'].defect.startswith('none') for r in rows)} controls); "
        f"the real check fails {len(real_fail)}, passes {len(rows) - len(real_fail)}",
        f"mapc's cap-evolve check verdict = the real one: {same}/{len(rows)} (stand-in cap_evolve), "
        f"{same_real}/{len(with_real)} (real cap_evolve package)",
        f"the real check fails and mapc passes: {unsafe}",
        f"mapc fails only beyond cap-evolve check (documented superset): {stricter}",
    ]
    return "\n".join(lines)


def test_mapc_gives_the_real_checks_verdict(base_adapter, tmp_path, real_capevolve, real_capevolve_venv):
    real_host = {"kind": "installed", "path": str(real_capevolve / "core" / "cap_evolve")}
    folders = {m.name: make_mutant(base_adapter, m, tmp_path) for m in MUTANTS}
    order = sorted(MUTANTS, key=lambda m: not m.slow)  # the slow ones first, while the rest run
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = {m.name: pool.submit(judge, m, folders[m.name], real_capevolve, real_capevolve_venv,
                                       real_host if m.name in WITH_REAL_PACKAGE else None) for m in order}
        rows = [futures[m.name].result() for m in MUTANTS]
    report = table(rows)
    print("\n" + report)
    disagreements = {r["mutant"].name: problems_of(r) for r in rows if problems_of(r)}
    assert not disagreements, "\n".join(f"{k}: {v}" for k, v in disagreements.items()) + "\n\n" + report
    assert sum(r["real"]["ok"] and not r["mapc"].ok for r in rows) >= 10  # mapc's extra checks do bite
