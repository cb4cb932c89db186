"""Built-in validation of a cap-evolve adapter folder: cap-evolve's gate, and more.

``gate.py`` runs in a fresh Python process (so the adapter's imports, its
``cap_evolve`` and anything it prints stay out of mapc), once with
``PYTHONHASHSEED=0`` and once with ``1``: the adapter must pass every check
both times, give identical scores both times, and print nothing to stdout.
When no ``cap_evolve`` is installed, the gate imports the stand-in shipped in
``standin/`` (written from cap-evolve's adapter contract); with cap-evolve
installed it also runs cap-evolve's own ``check``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mapc.diagnostics import Diagnostic
from mapc.targets import ValidationReport

HERE = Path(__file__).resolve().parent
GATE = HERE / "gate.py"
STANDIN = HERE / "standin"
HASH_SEEDS = ("0", "1")
TIMEOUT = 300


def find_adapter(folder: Path) -> Path | None:
    """``adapter.py`` in the folder itself, or in its ``adapters/`` (a cap-evolve project)."""
    for candidate in (folder / "adapter.py", folder / "adapters" / "adapter.py"):
        if candidate.is_file():
            return candidate
    return None


def run_gate(adapter: Path, hash_seed: str) -> dict:
    """One gate run; the report, plus what the adapter wrote to stdout."""
    with tempfile.TemporaryDirectory(prefix="mapc-capevolve-gate-") as tmp:
        report_path = Path(tmp) / "report.json"
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONDONTWRITEBYTECODE="1")
        try:
            proc = subprocess.run(
                [sys.executable, str(GATE), str(adapter), str(STANDIN), str(report_path)],
                cwd=tmp, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return _failed(f"the gate did not finish within {TIMEOUT} s (PYTHONHASHSEED={hash_seed})")
        if not report_path.is_file():
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            return _failed("the gate crashed: " + (" | ".join(tail) or f"exit status {proc.returncode}"))
        report = json.loads(report_path.read_text(encoding="utf-8"))
    printed = [line for line in proc.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
    quiet = not printed
    report["checks"].append({
        "name": "nothing printed to stdout", "ok": quiet, "contract": False,
        "detail": "" if quiet else (f"the adapter wrote {printed[0][:100]!r}"
                                    + (f" and {len(printed) - 1} more line(s)" if len(printed) > 1 else "")
                                    + " (cap-evolve's JSON shares stdout)"),
    })
    if not quiet:
        report["problems"].append(f"nothing printed to stdout: {report['checks'][-1]['detail']}")
        report["ok"] = False
    return report


def _failed(message: str) -> dict:
    return {"ok": False, "stubs": [], "problems": [message], "notes": [], "host": {}, "fingerprint": {},
            "checks": [{"name": "gate ran", "ok": False, "detail": message, "contract": False}]}


def validate_adapter_dir(folder: Path) -> ValidationReport:
    """Validate a built adapter folder (or a cap-evolve project holding one)."""
    adapter = find_adapter(Path(folder))
    if adapter is None:
        message = f"no adapter.py in {folder} (nor in {folder}/adapters)"
        diag = Diagnostic(code="missing_adapter", message=message, file=str(folder),
                          hint="build one with `mapc build SPEC --target cap-evolve -o DIR`")
        return ValidationReport(False, {"ok": False, "problems": [message]}, f"cap-evolve gate: {message}", [diag])
    with ThreadPoolExecutor(max_workers=len(HASH_SEEDS)) as pool:  # the two runs are independent processes
        first, second = pool.map(lambda seed: run_gate(adapter, seed), HASH_SEEDS)
    same = first.get("fingerprint") == second.get("fingerprint")
    first["checks"].append({
        "name": "scores identical across hash seeds", "ok": same, "contract": False,
        "detail": "" if same else "a score differs between PYTHONHASHSEED=0 and 1 (set or dict order?)",
    })
    problems = list(dict.fromkeys(first["problems"] + second["problems"]))
    if not same:
        problems.append("scores identical across hash seeds: " + first["checks"][-1]["detail"])
    payload = {
        "ok": not problems,
        "adapter": str(adapter),
        "host": first.get("host") or {},
        "stubs": first.get("stubs", []),
        "problems": problems,
        "notes": first.get("notes", []),
        "checks": first["checks"],
    }
    return ValidationReport(payload["ok"], payload, report_text(payload))


def report_text(payload: dict) -> str:
    host = payload.get("host") or {}
    which = ("the installed cap_evolve" if host.get("kind") == "installed"
             else "mapc's stand-in cap_evolve (cap-evolve is not installed)")
    lines = [f"cap-evolve gate on {payload.get('adapter')}, using {which}" + (
        f" at {host['path']}" if host.get("kind") == "installed" else "")]
    for contract, title in ((True, "what `cap-evolve check` checks:"), (False, "beyond cap-evolve check:")):
        rows = [c for c in payload.get("checks", []) if c["contract"] == contract]
        if rows:
            lines.append(title)
            for c in rows:
                lines.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['name']}" + (f": {c['detail']}" if c["detail"] else ""))
    for note in payload.get("notes", []):
        lines.append(f"  note: {note}")
    extra = [p for p in payload["problems"] if not any(p.startswith(c["name"]) for c in payload.get("checks", []))]
    for p in extra:
        lines.append(f"  FAIL {p}")
    lines.append("result: " + ("ok" if payload["ok"] else f"{len(payload['problems'])} problem(s)"))
    return "\n".join(lines)
