"""Built-in validation of a cap-evolve adapter folder: cap-evolve's own verdict first, then more.

What it guarantees (decision D18, ``docs/security.md``):

- The folder is installed the documented way, ``cp -RL FOLDER/. .capevolve/project/adapters/``
  in a fresh temporary repository root (symlinks followed, ``__pycache__`` dropped), and
  ``cap-evolve check .capevolve/project`` runs there, in a clean interpreter
  (``python -S -P``: the standard library and ``cap_evolve`` only, never mapc's packages;
  ``PYTHONPATH``/``PYTHONHOME`` dropped), as cap-evolve's ``check.sh`` runs it.
- Its verdict is reported first and read the way ``check.sh`` reads it: the check must return,
  the process must exit with the check's status, and its JSON report must be found on stdout.
  ``cap_evolve`` is the installed package when one is importable (or ``$CAPEVOLVE_CORE`` names
  cap-evolve's ``core/``), else mapc's stand-in: cap-evolve's own package, copied unmodified
  (``standin/UPSTREAM.txt``), so an adapter may import any module of it
  (``tests/conformance/test_capevolve_differential.py`` holds the verdicts to the real check's).
- mapc's own checks follow, labelled "beyond cap-evolve check": ``tasks('all')``, splits,
  file-safe ids, errored and unknown-task scoring, gold leaks, one replayed task, nothing
  printed to stdout, identical scores across ``PYTHONHASHSEED`` 0 and 1 (the gate runs twice).
  They can only add failures: mapc passes an adapter only when cap-evolve's check passes it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mapc.core.diagnostics import Diagnostic
from mapc.targets.base import ValidationReport

HERE = Path(__file__).resolve().parent
GATE = HERE / "gate.py"
STANDIN = HERE / "standin"
HASH_SEEDS = ("0", "1")
#: check.sh's default CHECK_TIMEOUT, for cap-evolve check; mapc's checks get as long again.
TIMEOUT = 60.0
CHECK_NAME = "cap-evolve check"
BEYOND = "beyond cap-evolve check"
#: Environment variables check.sh removes before running cap-evolve.
DROPPED_ENV = ("PYTHONHOME", "PYTHONSTARTUP", "PYTHONPATH", "CAPEVOLVE_CORE")


def find_adapter(folder: Path) -> Path | None:
    """``adapter.py`` in the folder itself, or in its ``adapters/`` (a cap-evolve project)."""
    for candidate in (folder / "adapter.py", folder / "adapters" / "adapter.py"):
        if candidate.is_file():
            return candidate
    return None


def host_package() -> dict:
    """Which ``cap_evolve`` the adapter gets: ``$CAPEVOLVE_CORE/cap_evolve``, an importable one,
    else mapc's stand-in (a copy of cap-evolve's own)."""
    core = os.environ.get("CAPEVOLVE_CORE")
    if core and (Path(core) / "cap_evolve" / "__init__.py").is_file():
        return {"kind": "installed", "path": str(Path(core).resolve() / "cap_evolve")}
    try:
        spec = importlib.util.find_spec("cap_evolve")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]).resolve()
        if path != STANDIN / "cap_evolve":
            return {"kind": "installed", "path": str(path)}
    return {"kind": "stand-in", "path": str(STANDIN / "cap_evolve")}


# --- the documented install ------------------------------------------------------------


class CopyError(Exception):
    pass


def copy_following_links(src: Path, dst: Path, ancestors: frozenset = frozenset()) -> None:
    """``cp -RL src/. dst/``: symlinks followed, named pipes re-created, a dangling link or a
    device an error."""
    dst.mkdir(parents=True, exist_ok=True)
    ancestors = ancestors | {os.path.realpath(src)}
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        source, target = Path(entry.path), dst / entry.name
        try:
            st = os.stat(source)
        except OSError as exc:
            raise CopyError(f"cannot stat {source}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(st.st_mode):
            if os.path.realpath(source) in ancestors:
                raise CopyError(f"{source} links back to a folder that contains it")
            copy_following_links(source, target, ancestors)
        elif stat.S_ISREG(st.st_mode):
            try:
                shutil.copyfile(source, target)
                os.chmod(target, stat.S_IMODE(st.st_mode) | stat.S_IRUSR | stat.S_IWUSR)
            except OSError as exc:
                raise CopyError(f"cannot copy {source}: {exc.strerror or exc}") from None
        elif stat.S_ISFIFO(st.st_mode):
            os.mkfifo(target)
        else:
            raise CopyError(f"cannot copy {source}: not a regular file, folder or named pipe")


def install(data_dir: Path, root: Path) -> str | None:
    """Install ``data_dir`` as ``root/.capevolve/project/adapters/``; the problem, or None."""
    adapters = root / ".capevolve" / "project" / "adapters"
    try:
        copy_following_links(data_dir, adapters)
    except (CopyError, OSError) as exc:
        return f"copying {data_dir} failed: {exc}"
    shutil.rmtree(adapters / "__pycache__", ignore_errors=True)
    return None


# --- one gate run ---------------------------------------------------------------------


def gate_env(hash_seed: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(PYTHONHASHSEED=hash_seed, PYTHONDONTWRITEBYTECODE="1")
    return env


def host_dir(host: dict, tmp: Path) -> Path:
    """A folder holding only ``cap_evolve`` (the installed one linked in, not its site-packages)."""
    if host["kind"] == "stand-in":
        return STANDIN
    folder = tmp / "host"
    folder.mkdir()
    (folder / "cap_evolve").symlink_to(host["path"], target_is_directory=True)
    return folder


def supervise(proc: subprocess.Popen, reports: Path, timeout: float) -> str | None:
    """Wait for the gate: ``timeout`` for cap-evolve check, as long again for mapc's checks.

    Returns which phase was stopped (``check`` or ``beyond``), or None if it exited.
    """
    deadline = time.monotonic() + timeout
    phase = "check"
    delay = 0.005
    while proc.poll() is None:
        if phase == "check" and (reports / "check.json").exists():
            phase, deadline = "beyond", time.monotonic() + timeout
        if time.monotonic() > deadline:
            return phase
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return None


def end_group(proc: subprocess.Popen) -> None:
    """Stop the gate and everything the adapter started in its session."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def last_report(out: str) -> dict | None:
    """The report check.sh reads: the last JSON object starting a line that has ``ok`` and
    ``problems``."""
    decoder = json.JSONDecoder()
    starts = [i for i, ch in enumerate(out) if ch == "{" and (i == 0 or out[i - 1] == "\n")]
    for i in reversed(starts):
        try:
            obj, _ = decoder.raw_decode(out, i)
        except ValueError:
            continue
        if isinstance(obj, dict) and "ok" in obj and "problems" in obj:
            return obj
    return None


def host_verdict(check: dict | None, beyond: dict | None, returncode: int | None, stopped: str | None,
                 stdout: bytes, timeout: float) -> dict:
    """cap-evolve check's verdict, decided as check.sh decides it."""
    verdict = {"ok": False, "stubs": [], "problems": [], "notes": [], "completed": False, "exit_code": returncode}
    if check is None or not check.get("completed"):
        if stopped == "check":
            verdict["reason"] = f"timed out after {timeout:g} s"
        else:
            error = (check or {}).get("error") or f"the process ended with status {returncode}"
            verdict["reason"] = (f"did not complete: {error} ended it before the check "
                                 "returned (cap-evolve's check catches only Exception)")
        return verdict
    code = check["exit_code"]
    verdict["exit_code"] = code
    if beyond is not None and stopped is None and returncode != code:
        verdict["reason"] = (f"did not complete: the check returned {code} but the process "
                             f"exited with status {returncode} (an atexit handler?)")
        return verdict
    if stopped == "beyond" and check.get("threads"):
        verdict["reason"] = ("did not complete: the process could not exit while the "
                             f"adapter's thread(s) {', '.join(check['threads'])} ran")
        return verdict
    report = last_report(stdout[: check["report_end"]].decode("utf-8", "replace")) if check["report_end"] >= 0 else None
    verdict["completed"] = True
    if report is None:
        verdict["reason"] = (f"exited {code} without a JSON report that starts a line on stdout "
                             "(the adapter wrote to stdout without a line break, or replaced stdout)")
        return verdict
    verdict.update(stubs=report.get("stubs", []), problems=report.get("problems", []), notes=report.get("notes", []))
    verdict["ok"] = code == 0 and report.get("ok") is True
    if not verdict["ok"]:
        verdict["reason"] = ("; ".join(str(p) for p in verdict["problems"])
                             or f"exited {code} (report ok={report.get('ok')})")
    return verdict


def run_gate(data_dir: Path, host: dict, hash_seed: str, timeout: float = TIMEOUT) -> dict:
    """One gate run on a fresh install of ``data_dir``: {check, beyond, printed}."""
    from mapc.core.scratch import scratch

    with scratch("capevolve-gate", near=data_dir) as tmp_name:  # private, beside it; swept after a kill -9
        tmp = Path(tmp_name)
        root, reports = tmp / "root", tmp / "reports"
        reports.mkdir()
        problem = install(data_dir, root)
        if problem:
            return {"check": {"ok": False, "reason": problem, "stubs": [], "problems": [], "notes": [],
                              "completed": False, "exit_code": None}, "beyond": None, "printed": []}
        out_path, err_path = tmp / "stdout", tmp / "stderr"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-S", "-P", str(GATE), str(host_dir(host, tmp)), str(reports)],
                cwd=root, env=dict(gate_env(hash_seed), TMPDIR=str(tmp)), stdin=subprocess.DEVNULL, stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                stopped = supervise(proc, reports, timeout)
            finally:
                end_group(proc)
        check, beyond = read_json(reports / "check.json"), read_json(reports / "beyond.json")
        stdout = out_path.read_bytes()
        stderr = err_path.read_bytes()[-4000:].decode("utf-8", "replace")
    returncode = None if stopped else proc.returncode
    verdict = host_verdict(check, beyond, returncode, stopped, stdout, timeout)
    if not verdict["completed"] and check is not None and check.get("error"):
        verdict["traceback"] = check.get("traceback", "")
    if check is not None and check.get("completed") and beyond is None:
        what = (f"stopped after {timeout:g} s" if stopped == "beyond"
                else f"the process ended with status {returncode}")
        beyond = {"checks": [{"name": "mapc's checks finished", "ok": False, "contract": False,
                              "detail": f"{what}: {stderr.strip().splitlines()[-1:] or ''}"[:300]}],
                  "notes": [], "fingerprint": {}}
    printed = adapter_output(stdout, check)
    return {"check": verdict, "beyond": beyond, "printed": printed}


def adapter_output(stdout: bytes, check: dict | None) -> list[str]:
    """Nonempty lines the adapter wrote to stdout (the check's own report left out)."""
    if check and check.get("completed") and check["report_start"] >= 0:
        stdout = stdout[: check["report_start"]] + stdout[check["report_end"]:]
    return [line for line in stdout.decode("utf-8", "replace").splitlines() if line.strip()]


# --- the report ---------------------------------------------------------------------------


def validate_adapter_dir(folder: Path, *, timeout: float = TIMEOUT, host: dict | None = None) -> ValidationReport:
    """Validate a built adapter folder (or a cap-evolve project holding one).

    ``timeout`` bounds cap-evolve check (and mapc's checks again); ``host`` overrides
    :func:`host_package` (``{"kind": "installed", "path": ".../cap_evolve"}``).
    """
    adapter = find_adapter(Path(folder))
    if adapter is None:
        message = f"no adapter.py in {folder} (nor in {folder}/adapters)"
        diag = Diagnostic(code="missing_adapter", message=message, file=str(folder),
                          hint="build one with `mapc build SPEC --target cap-evolve -o DIR`")
        return ValidationReport(False, {"ok": False, "problems": [message]}, f"cap-evolve gate: {message}", [diag])
    host = host or host_package()
    with ThreadPoolExecutor(max_workers=len(HASH_SEEDS)) as pool:  # independent processes
        runs = list(pool.map(lambda seed: run_gate(adapter.parent, host, seed, timeout), HASH_SEEDS))
    payload = combine(adapter, host, runs)
    return ValidationReport(payload["ok"], payload, report_text(payload))


def combine(adapter: Path, host: dict, runs: list[dict]) -> dict:
    """One report from the two hash-seed runs: cap-evolve check's verdict, then mapc's checks."""
    first = runs[0]
    verdicts = [r["check"] for r in runs]
    check = dict(first["check"])
    failing = next((v for v in verdicts if not v["ok"]), None)
    if failing is not None and check["ok"]:
        check = dict(failing)
        check["reason"] = f"{failing.get('reason', '')} (only with PYTHONHASHSEED={HASH_SEEDS[verdicts.index(failing)]})"
    checks = []
    if all(r["beyond"] is not None for r in runs):
        checks = list(first["beyond"]["checks"])
        seen = {c["name"] for c in checks}
        checks += [c for r in runs[1:] for c in r["beyond"]["checks"] if not c["ok"] and c["name"] not in seen]
        printed = next((r["printed"] for r in runs if r["printed"]), [])
        checks.append({
            "name": "nothing printed to stdout", "ok": not printed, "contract": False,
            "detail": "" if not printed else (f"the adapter wrote {printed[0][:100]!r}"
                                              + (f" and {len(printed) - 1} more line(s)" if len(printed) > 1 else "")
                                              + " (cap-evolve's JSON shares stdout)"),
        })
        same = first["beyond"]["fingerprint"] == runs[1]["beyond"]["fingerprint"]
        checks.append({"name": "scores identical across hash seeds", "ok": same, "contract": False,
                       "detail": "" if same else "a score differs between PYTHONHASHSEED=0 and 1 (set or dict order?)"})
    problems = []
    if not check["ok"]:
        problems.append(f"{CHECK_NAME}: {check.get('reason') or 'failed'}")
    problems += [f"{BEYOND}: {c['name']}" + (f": {c['detail']}" if c["detail"] else "") for c in checks if not c["ok"]]
    notes = list(check.get("notes") or [])
    if first["beyond"] is not None:
        notes += first["beyond"]["notes"]
    return {
        "ok": not problems,
        "adapter": str(adapter),
        "host": host,
        CHECK_NAME: check,
        "stubs": check.get("stubs", []),
        "problems": problems,
        "notes": notes,
        "checks": checks,
    }


def report_text(payload: dict) -> str:
    host = payload["host"]
    which = (f"the installed cap_evolve at {host['path']}" if host["kind"] == "installed"
             else "mapc's stand-in cap_evolve, a copy of cap-evolve's own (cap-evolve is not installed)")
    check = payload[CHECK_NAME]
    lines = [f"cap-evolve gate on {payload['adapter']}, installed as .capevolve/project/adapters/, "
             f"standard library and {which}",
             f"{CHECK_NAME}: " + ("ok" if check["ok"] else f"FAIL: {check.get('reason', '')}")]
    lines += [f"  note: {note}" for note in payload["notes"]]
    if payload["checks"]:
        lines.append(f"{BEYOND} (mapc's own checks):")
        for c in payload["checks"]:
            lines.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['name']}" + (f": {c['detail']}" if c["detail"] else ""))
    lines.append("result: " + ("ok" if payload["ok"] else f"{len(payload['problems'])} problem(s)"))
    return "\n".join(lines)
