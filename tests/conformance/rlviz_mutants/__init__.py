"""RLViz plugin mutants: one built plugin, one deliberate defect each, judged by the real RLViz and by mapc.

The base is a plugin ``mapc build --target rlviz`` writes (the nemo-gym-blackjack
example), with its own probe answer and stream recorded on its fixture. Each
:class:`Mutant` copies it and applies ONE change from the table in
:mod:`.table` (manifest text, plugin tree, probe answer, stream records,
limits, timing, process behaviour), or is a clean control (the plugin as
built, RLViz's own scaffold adapter and canonical fixtures). Most mutants
replace the command with ``sh replay.sh``, which prints recorded (mutated)
output, so a case costs milliseconds; the others wrap the generated adapter.

Each mutant names the verdict the real RLViz gives it (``expect``), so a
mutation that stopped taking effect is noticed; the differential test then
asserts mapc's verdict equals the real one. ``python -m
tests.conformance.rlviz_mutants`` (from the repository root) prints the
agreement table.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[3]
BASE_SPEC = ROOT / "examples" / "nemo-gym-blackjack" / "spec.yaml"
CATEGORIES = ("control", "manifest", "tree", "probe", "stream", "limits", "timing", "process")

REPLAY = """\
# Mutant replay: prints recorded output (probe.out, stream.out; run-<n>.out for the n-th run;
# a large stream is kept outside the plugin, in $state/stream.out, so it is not hashed and copied).
state="$MUTANT_STATE"
plugin="$MUTANT_PLUGIN"
n=$(cat "$state/count" 2>/dev/null || echo 0)
echo $((n + 1)) > "$state/count"
[ -f before.sh ] && . ./before.sh
if [ -f "run-$n.out" ]; then cat "run-$n.out"; elif [ "$1" = probe ]; then cat probe.out
elif [ -f "$state/stream.out" ]; then cat "$state/stream.out"; else cat stream.out; fi
[ -f after.sh ] && . ./after.sh
exit 0
"""


@dataclass
class Base:
    """The built plugin and what its adapter answers on its own fixture."""

    plugin: Path
    fixture: str  # file name inside testdata/
    probe: bytes
    stream: bytes

    @property
    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.stream.splitlines()]


@dataclass
class Case:
    """A mutant made real: its plugin folder, the source to validate, a private state folder."""

    plugin: Path
    source: Path
    state: Path


@dataclass(frozen=True)
class Mutant:
    name: str
    category: str
    defect: str  # the one thing that is wrong ("" for a clean control)
    expect: str  # the real RLViz's verdict: "pass", "fail" (no phase) or "fail:<phase>/<kind>"
    apply: Callable[[Case, Base], None]
    slow: bool = False  # waits on RLViz's 10 s / 30 s limits


@dataclass
class Verdict:
    ok: bool
    phase: str | None = None
    kind: str | None = None
    report: dict = field(default_factory=dict)  # the success report, or the failure payload
    seconds: float = 0.0
    beyond: int = 0  # mapc only: beyond-RLViz findings on a pass (warnings; failures with --strict)

    def label(self) -> str:
        if self.ok:
            return "pass"
        return f"fail:{self.phase}/{self.kind}" if self.phase else "fail"


# -- the base plugin --------------------------------------------------------------------------------
def build_base(work: Path, env: dict[str, str]) -> Base:
    """Build the base plugin once and record its adapter's probe answer and stream on its fixture."""
    from mapc.api import build

    plugin = work / "base-plugin"
    result = build(BASE_SPEC, "rlviz", plugin, validate=False)
    assert result.diagnostics.ok, [d.format() for d in result.diagnostics]
    fixture = json.loads((plugin / "testdata" / "cases.json").read_text())["cases"][0]["source"]
    source = os.path.realpath(plugin / "testdata" / fixture)
    outputs = {}
    for op in ("probe", "stream"):
        request = work / f"base-{op}.json"
        request.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": op, "limits": {},
                                       "source": {"path": source, "root": os.path.dirname(source), "kind": "file"}}))
        run = subprocess.run(["python3", "adapter.py", op, "--request", str(request)], cwd=plugin, env=env,
                             capture_output=True, timeout=120, check=True)
        outputs[op] = run.stdout
    return Base(plugin, fixture, outputs["probe"], outputs["stream"])


#: Manifest and plugin-tree mutants run the replaying command (``sh replay.sh``, in the manifest's
#: block-list form): what they test is read before anything runs, and a shell costs far less than
#: starting Python four times per validator.
REPLAYED = ("manifest", "tree")


def materialize(mutant: Mutant, base: Base, dest: Path) -> Case:
    """A fresh copy of the base plugin with the mutant's change applied."""
    dest.mkdir(parents=True)
    plugin = dest / "plugin"
    shutil.copytree(base.plugin, plugin, symlinks=True)
    case = Case(plugin, plugin / "testdata" / base.fixture, dest / "state")
    case.state.mkdir()
    if mutant.category in REPLAYED:
        replay(case, base, block=True)
    mutant.apply(case, base)
    return case


# -- running both validators --------------------------------------------------------------------------
def case_env(case: Case, env: dict[str, str]) -> dict[str, str]:
    """Where a replaying mutant keeps its run count and finds its plugin (not written into the plugin,
    so both copies of a mutant have the same digest)."""
    return dict(env, MUTANT_STATE=str(case.state), MUTANT_PLUGIN=str(case.plugin))


def run_real(binary: Path, case: Case, env: dict[str, str]) -> Verdict:
    start = time.monotonic()
    run = subprocess.run([str(binary), "--json", str(case.plugin), str(case.source)], capture_output=True,
                         env=case_env(case, env), stdin=subprocess.DEVNULL, timeout=120)
    seconds = time.monotonic() - start
    if run.returncode == 0:
        return Verdict(True, report=json.loads(run.stdout), seconds=seconds)
    try:
        diag = json.loads(run.stderr)
    except ValueError:
        diag = {"error": run.stderr.decode("utf-8", "replace")}
    return Verdict(False, diag.get("phase"), diag.get("kind"), diag, seconds)


def run_mapc(case: Case, env: dict[str, str]) -> Verdict:
    from mapc.targets.rlviz.validator.validate import ValidationFailure, validate

    start = time.monotonic()
    try:
        report = validate(case.plugin, case.source, env=case_env(case, env))
    except ValidationFailure as exc:
        return Verdict(False, exc.phase, exc.kind, exc.payload(), time.monotonic() - start)
    return Verdict(True, report=report.payload(), seconds=time.monotonic() - start, beyond=report.findings.total)


def fast_python_env() -> dict[str, str]:
    """This environment with this interpreter's folder first on PATH: ``python3`` starts without
    the site-packages of whatever ``python3`` the machine has (both validators get the same PATH)."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", os.defpath)
    return env


def judge(mutants: list[Mutant], base: Base, binary: Path, work: Path, env: dict[str, str],
          workers: int = 6) -> dict[str, tuple[Verdict, Verdict]]:
    """``name -> (real verdict, mapc verdict)`` for every mutant, each side on its own copy.

    Both sides of every mutant run in parallel with the others; the slow ones
    (RLViz's 10 s / 30 s limits) start first and on threads of their own.
    """
    def real(mutant: Mutant) -> Verdict:
        return run_real(binary, materialize(mutant, base, work / mutant.name / "real"), env)

    def mine(mutant: Mutant) -> Verdict:
        return run_mapc(materialize(mutant, base, work / mutant.name / "mapc"), env)

    slow = [m for m in mutants if m.slow]
    ordered = slow + [m for m in mutants if not m.slow]
    with ThreadPoolExecutor(max_workers=workers + 2 * len(slow)) as pool:
        futures = {m.name: (pool.submit(real, m), pool.submit(mine, m)) for m in ordered}
        return {name: (r.result(), m.result()) for name, (r, m) in futures.items()}


def agree(real: Verdict, mine: Verdict) -> bool:
    """Same verdict: pass/fail, the phase and kind when both report one, the same report on a pass."""
    if real.ok != mine.ok:
        return False
    if real.ok:
        return real.report == mine.report
    return (real.phase, real.kind) == (mine.phase, mine.kind)


def agreement_table(mutants: list[Mutant], results: dict[str, tuple[Verdict, Verdict]]) -> str:
    """Cases and agreement per category (and how many passes mapc flags "beyond RLViz"), then every
    disagreement."""
    rows = ["| category | cases | agreed | real RLViz passes | real RLViz fails | passes beyond RLViz |",
            "|---|---|---|---|---|---|"]
    total = agreed_total = beyond_total = 0
    for category in CATEGORIES:
        names = [m.name for m in mutants if m.category == category]
        if not names:
            continue
        agreed = sum(agree(*results[n]) for n in names)
        passes = sum(results[n][0].ok for n in names)
        beyond = sum(results[n][1].ok and results[n][1].beyond > 0 for n in names)
        rows.append(f"| {category} | {len(names)} | {agreed} | {passes} | {len(names) - passes} | {beyond} |")
        total += len(names)
        agreed_total += agreed
        beyond_total += beyond
    rows.append(f"| **all** | {total} | {agreed_total} ({100 * agreed_total / max(total, 1):.1f}%) | | "
                f"| {beyond_total} |")
    for m in mutants:
        real, mine = results[m.name]
        if not agree(real, mine):
            rows.append(f"- DISAGREE {m.name} ({m.defect or 'control'}): real {real.label()} "
                        f"{real.report.get('error', '')[:160]!r}, mapc {mine.label()} {mine.report.get('error', '')[:160]!r}")
    return "\n".join(rows)


# -- building blocks for the table ------------------------------------------------------------------------
def write(case: Case, name: str, data: bytes | str, mode: int | None = None) -> Path:
    path = case.plugin / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        path.chmod(mode)
    return path


def set_command(case: Case, command: list[str], *, block: bool = False) -> None:
    """Replace the manifest's command (as a JSON inline list, or as a block list like mapc writes)."""
    manifest = case.plugin / "rlviz-plugin.yaml"
    text = manifest.read_text()
    new = "command:\n" + "".join(f"  - {item}\n" for item in command) if block else \
        "command: " + json.dumps(command) + "\n"
    text = re.sub(r"command:(\n  - .*)+\n|command: \[.*\]\n", lambda _: new, text)
    manifest.write_text(text)


def replay(case: Case, base: Base, *, probe: bytes | None = None, stream: bytes | None = None,
           runs: dict[int, bytes] | None = None, before: str = "", after: str = "", block: bool = False) -> None:
    """Answer with recorded output: ``probe``/``stream`` bytes (the base's by default), ``runs`` for
    the n-th execution (0 = probe pass 1, 1 = probe pass 2, 2 = stream pass 1, 3 = stream pass 2), and
    shell code run ``before`` and ``after`` printing (``$n``, ``$state`` and ``$plugin`` are set: the
    run's number, a private folder outside the plugin, and the plugin folder RLViz was given)."""
    write(case, "replay.sh", REPLAY)
    write(case, "probe.out", base.probe if probe is None else probe)
    write(case, "stream.out", base.stream if stream is None else stream)
    for n, data in (runs or {}).items():
        write(case, f"run-{n}.out", data)
    if before:
        write(case, "before.sh", before)
    if after:
        write(case, "after.sh", after)
    set_command(case, ["sh", "replay.sh"], block=block)


def encode(records: list[dict]) -> bytes:
    """Compact NDJSON, the ``complete`` record's count fixed to the records before it."""
    out = []
    count = 0
    for rec in records:
        if rec.get("record_type") == "complete" and set(rec) == {"record_type", "records", "warnings"}:
            rec = dict(rec, records=count)
        else:
            count += 1
        out.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode())
    return b"\n".join(out) + b"\n"


def first(records: list[dict], rtype: str) -> dict:
    return next(r for r in records if r["record_type"] == rtype)


def events(records: list[dict]) -> list[dict]:
    return [r for r in records if r["record_type"] == "event"]


def add_before_complete(records: list[dict], *new: dict) -> list[dict]:
    return records[:-1] + list(new) + records[-1:]
