"""cap-evolve's gate, run against one adapter.py in a fresh process.

Usage: ``python gate.py ADAPTER_PY STANDIN_DIR REPORT_JSON``. Standard library
only and independent of mapc: it imports ``cap_evolve`` (an installed one
first, else the stand-in in STANDIN_DIR), loads the adapter the way
``cap-evolve check`` does, runs the same probes, then the checks beyond
them, and writes a JSON report to REPORT_JSON. It never writes to stdout, so
the parent can tell whether the adapter did.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import tempfile
import traceback
from pathlib import Path

TOLERANCE = 1e-6
PROBE_ID = "__probe__"
PROBE_OUTPUT = "__probe_output__"
INFRA_REASON = "simulated infrastructure failure (mapc validate)"
#: A gold target that cannot be mistaken for anything else in feedback.
SENTINEL_TEXT = "mapc-gold-sentinel-7f3a"
SENTINEL = {"answer": SENTINEL_TEXT, "value": 918273.5}


class Gate:
    def __init__(self) -> None:
        self.checks: list[dict] = []
        self.notes: list[str] = []
        self.fingerprint: dict = {}
        self.host: dict = {}
        self.stubs: list[str] = []

    def check(self, name: str, ok: bool, detail: str = "", *, contract: bool) -> bool:
        """Record one check; ``contract`` marks what `cap-evolve check` itself verifies."""
        self.checks.append({"name": name, "ok": bool(ok), "detail": detail, "contract": contract})
        return bool(ok)

    def report(self) -> dict:
        problems = [f"{c['name']}: {c['detail']}" if c["detail"] else c["name"] for c in self.checks if not c["ok"]]
        return {"ok": not problems, "stubs": self.stubs, "problems": problems, "notes": self.notes,
                "checks": self.checks, "host": self.host, "fingerprint": self.fingerprint}


def short(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= 300 else text[:297] + "..."


def import_host(standin: str, gate: Gate):
    """``cap_evolve`` as the adapter will see it: installed if importable, else the stand-in."""
    try:
        import cap_evolve  # noqa: F401

        kind = "installed"
    except ImportError:
        sys.path.insert(0, standin)
        import cap_evolve  # noqa: F401

        kind = "stand-in"
    import cap_evolve

    gate.host = {"kind": kind, "path": os.path.dirname(os.path.abspath(cap_evolve.__file__)),
                 "version": str(getattr(cap_evolve, "__version__", "unknown"))}
    return cap_evolve


# --- gold-target leaks (written independently of the adapter's own scrubbing) ------------


def gold_texts(target) -> list[str]:
    """Texts that would give the gold target away: each string or number leaf, whitespace-normalized."""
    out = []
    stack = [target]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, (int, float, str)):
            text = " ".join(str(value).split())
            if text:
                out.append(text)
    return out


def gold_pattern(text: str) -> re.Pattern:
    """``text`` as a whole token: not inside a longer word or number, any case, any spacing."""
    body = r"\s+".join(re.escape(p) for p in text.split())
    if re.match(r"\w", text[0]):
        body = r"(?<![\w])(?<!\d\.)" + body
    if re.match(r"\w", text[-1]):
        body += r"(?![\w])(?!\.\d)"
    return re.compile(body, re.IGNORECASE)


def leaked(feedback: str, target) -> str | None:
    """A gold text found in ``feedback``, or None."""
    for text in gold_texts(target):
        if gold_pattern(text).search(feedback):
            return text
    return None


def gold_count(feedback: str, target) -> int:
    return sum(len(gold_pattern(text).findall(feedback)) for text in gold_texts(target))


# --- the checks ------------------------------------------------------------------------------


def metrics_problem(score, reward: float) -> str | None:
    """What breaks cap-evolve's metrics rules, or None (whichever host built the Score)."""
    metrics = getattr(score, "metrics", None)
    if not metrics:
        return None
    if not isinstance(metrics, list):
        return "metrics must be a list"
    names, primaries = set(), []
    for m in metrics:
        if not isinstance(m, dict):
            return "every metric must be a dict"
        name = m.get("name")
        if not isinstance(name, str) or not name.strip() or name in names:
            return f"metric names must be nonempty and unique ({name!r})"
        names.add(name)
        if not isinstance(m.get("primary"), bool):
            return f"metric {name!r}: primary must be a bool"
        if m.get("direction") not in ("higher", "lower"):
            return f"metric {name!r}: direction must be higher or lower"
        value = m.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return f"metric {name!r}: value must be a number"
        if m["primary"]:
            primaries.append(m)
    if len(primaries) != 1:
        return f"exactly one metric must be primary, found {len(primaries)}"
    if abs(float(primaries[0]["value"]) - reward) > 1e-9:
        return f"primary metric {primaries[0]['name']!r} = {primaries[0]['value']} but reward = {reward}"
    return None


def score_view(score) -> list:
    return [score.reward, score.feedback, json.dumps(score.metrics, sort_keys=True, default=str)]


def load_adapter(adapter_py: str, host, gate: Gate):
    """Import adapter.py as `cap-evolve check` does and build ``Adapter()``."""
    adir = os.path.dirname(adapter_py)
    if adir not in sys.path:
        sys.path.insert(0, adir)
    try:
        spec = importlib.util.spec_from_file_location("forge_project_adapter", adapter_py)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - report anything, even SystemExit
        gate.check("adapter loads", False, short(exc), contract=True)
        return None, None
    if not hasattr(module, "Adapter"):
        gate.check("adapter loads", False, "adapter.py must define a class named `Adapter`", contract=True)
        return module, None
    try:
        adapter = module.Adapter()
    except Exception as exc:  # noqa: BLE001
        gate.check("adapter loads", False, f"Adapter() raised {short(exc)}", contract=True)
        return module, None
    gate.check("adapter loads", True, "Adapter() constructed", contract=True)
    gate.check("Adapter subclasses CapabilityAdapter", isinstance(adapter, host.CapabilityAdapter),
               "" if isinstance(adapter, host.CapabilityAdapter) else "it does not", contract=False)
    return module, adapter


def check_stubs(adapter, host, gate: Gate) -> bool:
    """cap-evolve's stub probe, plus: the probes must not raise at all and must return host types."""
    Task, Rollout, Score = host.Task, host.Rollout, host.Score
    probes = {
        "tasks": lambda m: m("val"),
        "run_target": lambda m: m(Task(id=PROBE_ID), Path("."), seed=0),
        "score": lambda m: m(Task(id=PROBE_ID), Rollout(task_id=PROBE_ID)),
    }
    stubs, results, raised = [], {}, {}
    for name, probe in probes.items():
        method = getattr(adapter, name, None)
        if method is None:
            stubs.append(name)
            continue
        try:
            results[name] = probe(method)
        except NotImplementedError as exc:
            if "IMPLEMENT ME" in str(exc):
                stubs.append(name)
            else:
                raised[name] = short(exc)
        except Exception as exc:  # noqa: BLE001 - cap-evolve ignores it; we report it below
            raised[name] = short(exc)
    gate.stubs = stubs
    if not gate.check("required methods implemented", not stubs,
                      "unimplemented: " + ", ".join(stubs) if stubs else "tasks, run_target, score", contract=True):
        return False
    r = results.get("run_target")
    ok = "run_target" not in raised and isinstance(r, Rollout) and bool(getattr(r, "error", None))
    detail = raised.get("run_target") or (f"error: {r.error}" if ok else f"returned {r!r}"[:300])
    gate.check("run_target on an unknown task returns an errored Rollout", ok, detail, contract=False)
    s = results.get("score")
    ok = "score" not in raised and isinstance(s, Score)
    gate.check("score on an empty rollout returns a Score", ok,
               raised.get("score") or ("" if ok else f"returned {s!r}"[:300]), contract=False)
    return True


def check_tasks(adapter, host, gate: Gate):
    """tasks('val') as cap-evolve checks it; then 'all', the other splits, and file-safe ids."""
    try:
        t1, t2 = adapter.tasks("val"), adapter.tasks("val")
    except Exception as exc:  # noqa: BLE001
        gate.check("tasks('val') nonempty and stable", False, f"raised {short(exc)}", contract=True)
        return None
    if not t1 or not isinstance(t1, list) or not all(isinstance(t, host.Task) for t in t1):
        gate.check("tasks('val') nonempty and stable", False,
                   "returned an empty list" if not t1 else "must return a list[Task]", contract=True)
        return None
    stable = [t.id for t in t1] == [t.id for t in t2]
    gate.check("tasks('val') nonempty and stable", stable,
               f"{len(t1)} task(s)" if stable else "not stable across calls", contract=True)
    try:
        a1, a2 = adapter.tasks("all"), adapter.tasks("all")
    except Exception as exc:  # noqa: BLE001
        gate.check("tasks('all') works", False, f"raised {short(exc)}", contract=False)
        return t1
    ids = [t.id for t in a1] if isinstance(a1, list) else []
    ok = bool(ids) and all(isinstance(t, host.Task) for t in a1) and ids == [t.id for t in a2]
    gate.check("tasks('all') works", ok, f"{len(ids)} task(s), stable" if ok else "empty, not Tasks, or unstable",
               contract=False)
    bad = [i for i in ids if not isinstance(i, str) or "/" in i or "\\" in i or "\0" in i or i in ("", ".", "..")]
    gate.check("task ids are unique file-safe strings", not bad and len(set(ids)) == len(ids),
               f"bad: {bad[:3]!r}" if bad else ("duplicates" if len(set(ids)) != len(ids) else ""), contract=False)
    outside = []
    for split in ("train", "val", "test"):
        try:
            got = [t.id for t in adapter.tasks(split)]
        except Exception as exc:  # noqa: BLE001
            outside.append(f"{split}: raised {short(exc)}")
            continue
        if not set(got) <= set(ids):
            outside.append(f"{split} has ids that 'all' lacks")
    gate.check("every split is part of tasks('all')", not outside, "; ".join(outside), contract=False)
    return t1


def check_probe_scoring(adapter, host, gate: Gate, task) -> None:
    """cap-evolve's determinism probe, then: range, metrics, leaks, errored rollouts."""
    Rollout, Score = host.Rollout, host.Score
    probe = Rollout(task_id=task.id, output=PROBE_OUTPUT)
    try:
        s1, s2 = adapter.score(task, probe), adapter.score(task, probe)
        r1, r2 = s1.reward, s2.reward
    except Exception as exc:  # noqa: BLE001
        gate.check("score deterministic on a probe rollout", False, f"raised {short(exc)}", contract=True)
        return
    same = abs(r1 - r2) <= TOLERANCE
    gate.check("score deterministic on a probe rollout", same,
               f"probe reward={r1:.4f}" if same else f"{r1} vs {r2} on identical input", contract=True)
    if not (isinstance(s1, Score) and isinstance(s2, Score)):
        gate.check("score returns a Score", False, f"returned {type(s1).__name__}", contract=False)
        return
    gate.check("probe feedback and metrics identical on rescoring", score_view(s1) == score_view(s2), contract=False)
    gate.check("reward in [0, 1]", 0.0 <= r1 <= 1.0, f"{r1}", contract=False)
    gate.check("feedback is nonempty text", isinstance(s1.feedback, str) and bool(s1.feedback.strip()), contract=False)
    problem = metrics_problem(s1, r1)
    gate.check("metrics catalog follows cap-evolve's rules", problem is None, problem or "", contract=False)
    gate.fingerprint["probe"] = score_view(s1)
    check_gold(adapter, host, gate, task)
    check_gold_differential(adapter, host, gate, task, probe, "probe")
    try:
        s4 = adapter.score(task, Rollout(task_id=task.id, output=PROBE_OUTPUT, error=INFRA_REASON))
        ok = s4.reward == 0.0 and INFRA_REASON in s4.feedback
        gate.check("an errored rollout scores 0.0 with the reason", ok,
                   "" if ok else f"reward {s4.reward}, feedback {s4.feedback[:120]!r}", contract=False)
    except Exception as exc:  # noqa: BLE001
        gate.check("an errored rollout scores 0.0 with the reason", False, f"raised {short(exc)}", contract=False)


def with_target(host, task, target):
    return host.Task(id=task.id, input=task.input, target=target, metadata=task.metadata)


def check_gold(adapter, host, gate: Gate, task) -> None:
    """A distinctive gold target never shows in feedback, even when the output repeats it."""
    name = "feedback withholds the gold target, even when the output repeats it"
    for target in (SENTINEL_TEXT, SENTINEL):
        output = target if isinstance(target, str) else json.dumps(target)
        try:
            fb = adapter.score(with_target(host, task, target), host.Rollout(task_id=task.id, output=output)).feedback
        except Exception as exc:  # noqa: BLE001
            gate.check(name, False, f"score raised {short(exc)}", contract=False)
            return
        found = leaked(fb, target)
        if found:
            gate.check(name, False, f"feedback contains {found!r}", contract=False)
            return
    gate.check(name, True, contract=False)


def check_gold_differential(adapter, host, gate: Gate, task, rollout, what: str) -> None:
    """The task's real target shows no more often than when the target is replaced by a sentinel.

    Short targets (``0``, ``A``) may coincide with words or numbers of the
    feedback's own frame; those appear just as often with any other target.
    """
    if not gold_texts(task.target):
        return
    name = f"{what} feedback withholds the task's gold target"
    try:
        real = adapter.score(task, rollout).feedback
        other = adapter.score(with_target(host, task, SENTINEL), rollout).feedback
    except Exception as exc:  # noqa: BLE001
        gate.check(name, False, f"score raised {short(exc)}", contract=False)
        return
    more = gold_count(real, task.target) > gold_count(other, task.target)
    gate.check(name, not more, f"feedback contains {leaked(real, task.target)!r}" if more else "", contract=False)


def check_replay(module, adapter, host, gate: Gate) -> None:
    """Run one real task (replaying its recorded trace) and score it: a reward in range, twice the same."""
    agent = getattr(module, "AGENT", None)
    if not isinstance(agent, dict):
        gate.notes.append("not a mapc adapter (no AGENT): no task was run")
        return
    if not agent.get("replay"):
        argv0 = (agent.get("command") or ["?"])[0]
        gate.notes.append(f"run_target runs {argv0!r}; the validator does not run the agent (it may be slow or "
                          "costly); exercise it with `cap-evolve baseline`")
        return
    errors = []
    try:
        tasks = adapter.tasks("all")
    except Exception:  # noqa: BLE001 - already reported by check_tasks
        return
    with tempfile.TemporaryDirectory(prefix="mapc-candidate-") as candidate:
        for task in tasks:
            try:
                rollout = adapter.run_target(task, Path(candidate), seed=0)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{task.id}: run_target raised {short(exc)}")
                continue
            if getattr(rollout, "error", None):
                errors.append(f"{task.id}: {rollout.error}")
                continue
            break
        else:
            gate.check("a replayed task runs and scores", False,
                       "no task's recorded trace could be replayed: " + "; ".join(errors[:3]), contract=False)
            return
    if errors:
        gate.notes.append(f"{len(errors)} task(s) before {task.id!r} did not replay, e.g. {errors[0]}")
    try:
        json.dumps(rollout.to_dict(), allow_nan=False)
        serial = ""
    except (TypeError, ValueError) as exc:
        serial = short(exc)
    gate.check("the rollout is plain JSON (cap-evolve saves it)", not serial, serial, contract=False)
    try:
        s1, s2 = adapter.score(task, rollout), adapter.score(task, rollout)
    except Exception as exc:  # noqa: BLE001
        gate.check("a replayed task runs and scores", False, f"score raised {short(exc)}", contract=False)
        return
    ok = isinstance(s1, host.Score) and 0.0 <= s1.reward <= 1.0 and score_view(s1) == score_view(s2)
    gate.check("a replayed task runs and scores", ok,
               f"task {task.id!r}: reward {s1.reward:.4f}, {len(rollout.tool_calls)} tool call(s)", contract=False)
    problem = metrics_problem(s1, s1.reward)
    gate.check("replay metrics follow cap-evolve's rules", problem is None, problem or "", contract=False)
    check_gold_differential(adapter, host, gate, task, rollout, "replay")
    gate.fingerprint["replay"] = [task.id, json.dumps(rollout.to_dict(), sort_keys=True, default=str)] + score_view(s1)


def check_materialize(adapter, gate: Gate) -> None:
    """cap-evolve calls materialize(sandbox) without edits; a failure is only a note."""
    with tempfile.TemporaryDirectory(prefix="mapc-sandbox-") as sandbox:
        try:
            adapter.materialize(Path(sandbox))
            gate.notes.append("materialize() callable")
        except Exception as exc:  # noqa: BLE001
            gate.notes.append(f"materialize() probe raised (may be expected): {short(exc)}")


def check_with_host(host, adapter_py: str, gate: Gate) -> None:
    """With cap-evolve installed, also run its own `check` on a project holding this adapter."""
    try:
        from cap_evolve.check import run_check
    except ImportError:
        return
    with tempfile.TemporaryDirectory(prefix="mapc-capevolve-project-") as project:
        os.symlink(os.path.dirname(adapter_py), os.path.join(project, "adapters"))
        try:
            rep = run_check(Path(project))
            data = rep.to_dict() if hasattr(rep, "to_dict") else dict(rep)
        except Exception as exc:  # noqa: BLE001
            gate.check("cap-evolve's own check", False, f"raised {short(exc)}", contract=True)
            return
    gate.check("cap-evolve's own check", bool(data.get("ok")), "; ".join(data.get("problems") or []), contract=True)
    gate.notes += [f"cap-evolve: {n}" for n in data.get("notes") or []]


def run(adapter_py: str, standin: str, gate: Gate) -> None:
    host = import_host(standin, gate)
    module, adapter = load_adapter(adapter_py, host, gate)
    if adapter is None:
        return
    if not check_stubs(adapter, host, gate):
        return
    val = check_tasks(adapter, host, gate)
    if val:
        check_probe_scoring(adapter, host, gate, val[0])
        check_replay(module, adapter, host, gate)
    check_materialize(adapter, gate)
    if gate.host["kind"] == "installed":
        check_with_host(host, adapter_py, gate)


def main(argv: list[str]) -> int:
    adapter_py, standin, report_path = argv[1:4]
    gate = Gate()
    try:
        run(os.path.abspath(adapter_py), standin, gate)
    except BaseException as exc:  # noqa: BLE001 - the report must always be written
        gate.check("validator finished", False, short(exc), contract=False)
        sys.stderr.write(traceback.format_exc())
    with open(report_path, "w", encoding="utf-8") as fh:
        json.dump(gate.report(), fh, ensure_ascii=False, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
