"""cap-evolve's gate on one installed adapter, then mapc's checks beyond it.

Usage: ``python -S -P gate.py HOST_DIR REPORT_DIR``, run with the current
directory a repository root holding ``.capevolve/project/adapters/`` (the
documented install) and stdout a regular file. Standard library only and
independent of mapc; ``-S`` keeps every site-packages folder (mapc's own
packages included) out of reach, so the adapter sees what it sees under
cap-evolve: the standard library and ``cap_evolve``, found in HOST_DIR (the
installed package or mapc's stand-in, a copy of it).

1. ``cap-evolve check .capevolve/project``, as cap-evolve's CLI runs it:
   ``cap_evolve.check.run_check``, its report printed to stdout as indented
   JSON; REPORT_DIR/check.json then says whether it returned, its exit code
   and where the report sits in stdout (the parent reads the report back the
   way check.sh does). Anything that ends the check (``SystemExit``) ends it.
2. mapc's checks beyond cap-evolve check, on a freshly loaded adapter:
   REPORT_DIR/beyond.json.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import tempfile
import threading
import traceback
from pathlib import Path

PROJECT = Path(".capevolve/project")
ADAPTER = PROJECT / "adapters" / "adapter.py"
PROBE_ID = "__probe__"
PROBE_OUTPUT = "__probe_output__"
INFRA_REASON = "simulated infrastructure failure (mapc validate)"
#: A gold target that cannot be mistaken for anything else in feedback.
SENTINEL_TEXT = "mapc-gold-sentinel-7f3a"
SENTINEL = {"answer": SENTINEL_TEXT, "value": 918273.5}


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` whole or not at all (the parent may look at any moment)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def stdout_offset() -> int:
    """How many bytes are in stdout so far (a regular file the parent gave us)."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - the adapter may have replaced or closed it
        pass
    try:
        return os.fstat(1).st_size
    except OSError:
        return -1


def short(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= 300 else text[:297] + "..."


# --- 1. cap-evolve check ------------------------------------------------------------------


def run_host_check(report_dir: Path) -> int:
    """``cap-evolve check .capevolve/project``: ``run_check`` (installed or stand-in), printed."""
    result = {"completed": False, "exit_code": None, "report_start": None, "report_end": None}
    try:
        from cap_evolve.check import run_check

        rep = run_check(PROJECT)
        result["report_start"] = stdout_offset()
        print(json.dumps(rep.to_dict(), indent=2))
        result["report_end"] = stdout_offset()
        result["exit_code"] = 0 if rep.ok else 1
        result["completed"] = True
    except BaseException as exc:  # noqa: BLE001 - it ended cap-evolve check; say how
        result["error"] = short(exc)
        result["traceback"] = traceback.format_exc()[-2000:]
    # threads that would keep cap-evolve's process from exiting after the check
    result["threads"] = [t.name for t in threading.enumerate()
                         if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    write_json(report_dir / "check.json", result)
    return result["exit_code"] if result["completed"] else 1


# --- 2. beyond cap-evolve check -----------------------------------------------------------


class Beyond:
    """mapc's own checks; every one is labelled as beyond cap-evolve check."""

    def __init__(self) -> None:
        self.checks: list[dict] = []
        self.notes: list[str] = []
        self.fingerprint: dict = {}

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append({"name": name, "ok": bool(ok), "detail": detail, "contract": False})
        return bool(ok)

    def report(self) -> dict:
        return {"checks": self.checks, "notes": self.notes, "fingerprint": self.fingerprint}


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


def load_again(host, gate: Beyond):
    """The adapter loaded a second time, as every later cap-evolve step loads it; (module, adapter)."""
    adir = str(ADAPTER.parent)
    if adir not in sys.path:
        sys.path.insert(0, adir)
    try:
        spec = importlib.util.spec_from_file_location("forge_project_adapter", ADAPTER)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        adapter = module.Adapter()
    except BaseException as exc:  # noqa: BLE001
        gate.check("the adapter loads again after the check", False, short(exc))
        return None, None
    ok = isinstance(adapter, host.CapabilityAdapter)
    gate.check("Adapter subclasses CapabilityAdapter", ok,
               "" if ok else "cap-evolve's harness calls live(), apply() and materialize() from it")
    return module, adapter


def check_probes(adapter, host, gate: Beyond) -> None:
    """cap-evolve's stub probes ignore any exception; a run must not raise on them."""
    try:
        r = adapter.run_target(host.Task(id=PROBE_ID), Path("."), seed=0)
        ok = isinstance(r, host.Rollout) and bool(getattr(r, "error", None))
        detail = f"error: {r.error}" if ok else f"returned {r!r}"[:300]
    except Exception as exc:  # noqa: BLE001
        ok, detail = False, f"raised {short(exc)}"
    gate.check("run_target on an unknown task returns an errored Rollout", ok, detail)
    try:
        s = adapter.score(host.Task(id=PROBE_ID), host.Rollout(task_id=PROBE_ID))
        ok = isinstance(s, host.Score)
        detail = "" if ok else f"returned {s!r}"[:300]
    except Exception as exc:  # noqa: BLE001
        ok, detail = False, f"raised {short(exc)}"
    gate.check("score on an empty rollout returns a Score", ok, detail)


def check_tasks(adapter, host, gate: Beyond):
    """What a real run asks of tasks(): 'all' (the only split it uses), lists, file-safe ids."""
    try:
        val = adapter.tasks("val")
    except Exception as exc:  # noqa: BLE001
        gate.check("tasks('val') works when loaded again", False, f"raised {short(exc)}")
        return None
    ok = isinstance(val, list) and bool(val) and all(isinstance(t, host.Task) for t in val)
    gate.check("tasks('val') is a nonempty list of Task", ok, "" if ok else f"returned {type(val).__name__}")
    try:
        a1, a2 = adapter.tasks("all"), adapter.tasks("all")
    except Exception as exc:  # noqa: BLE001
        gate.check("tasks('all') works", False, f"raised {short(exc)}")
        return val if ok else None
    ids = [t.id for t in a1] if isinstance(a1, list) else []
    good = (bool(ids) and all(isinstance(t, host.Task) for t in a1) and isinstance(a2, list)
            and ids == [t.id for t in a2])
    gate.check("tasks('all') works", good,
               f"{len(ids)} task(s), stable" if good else "empty, not a list of Task, or unstable")
    bad = [i for i in ids if not isinstance(i, str) or "/" in i or "\\" in i or "\0" in i or i in ("", ".", "..")]
    gate.check("task ids are unique file-safe strings", not bad and len(set(ids)) == len(ids),
               f"bad: {bad[:3]!r}" if bad else ("duplicates" if len(set(ids)) != len(ids) else ""))
    outside = []
    for split in ("train", "val", "test"):
        try:
            got = [t.id for t in adapter.tasks(split)]
        except Exception as exc:  # noqa: BLE001
            outside.append(f"{split}: raised {short(exc)}")
            continue
        if not set(got) <= set(ids):
            outside.append(f"{split} has ids that 'all' lacks")
    gate.check("every split is part of tasks('all')", not outside, "; ".join(outside))
    return val if ok else None


def check_probe_scoring(adapter, host, gate: Beyond, task) -> None:
    """The probe rollout again: a real Score, range, metrics, leaks, errored rollouts."""
    Rollout, Score = host.Rollout, host.Score
    probe = Rollout(task_id=task.id, output=PROBE_OUTPUT)
    try:
        s1, s2 = adapter.score(task, probe), adapter.score(task, probe)
    except Exception as exc:  # noqa: BLE001
        gate.check("score returns a Score", False, f"raised {short(exc)}")
        return
    if not (isinstance(s1, Score) and isinstance(s2, Score)):
        gate.check("score returns a Score", False, f"returned {type(s1).__name__}")
        return
    gate.check("probe score identical on rescoring (reward, feedback, metrics)", score_view(s1) == score_view(s2))
    gate.check("reward in [0, 1]", 0.0 <= s1.reward <= 1.0, f"{s1.reward}")
    gate.check("feedback is nonempty text", isinstance(s1.feedback, str) and bool(s1.feedback.strip()))
    problem = metrics_problem(s1, s1.reward)
    gate.check("metrics catalog follows cap-evolve's rules", problem is None, problem or "")
    gate.fingerprint["probe"] = score_view(s1)
    check_gold(adapter, host, gate, task)
    check_gold_differential(adapter, host, gate, task, probe, "probe")
    try:
        s4 = adapter.score(task, Rollout(task_id=task.id, output=PROBE_OUTPUT, error=INFRA_REASON))
        ok = s4.reward == 0.0 and INFRA_REASON in s4.feedback
        gate.check("an errored rollout scores 0.0 with the reason", ok,
                   "" if ok else f"reward {s4.reward}, feedback {s4.feedback[:120]!r}")
    except Exception as exc:  # noqa: BLE001
        gate.check("an errored rollout scores 0.0 with the reason", False, f"raised {short(exc)}")
    try:
        s5 = adapter.score(host.Task(id=PROBE_ID, target=task.target), Rollout(task_id=PROBE_ID, output=PROBE_OUTPUT))
        ok = s5.reward == 0.0
        gate.check("a task the adapter does not know scores 0.0", ok, "" if ok else f"reward {s5.reward}")
    except Exception as exc:  # noqa: BLE001
        gate.check("a task the adapter does not know scores 0.0", False, f"raised {short(exc)}")


def with_target(host, task, target):
    return host.Task(id=task.id, input=task.input, target=target, metadata=task.metadata)


def check_gold(adapter, host, gate: Beyond, task) -> None:
    """A distinctive gold target never shows in feedback, even when the output repeats it."""
    name = "feedback withholds the gold target, even when the output repeats it"
    for target in (SENTINEL_TEXT, SENTINEL):
        output = target if isinstance(target, str) else json.dumps(target)
        try:
            fb = adapter.score(with_target(host, task, target), host.Rollout(task_id=task.id, output=output)).feedback
        except Exception as exc:  # noqa: BLE001
            gate.check(name, False, f"score raised {short(exc)}")
            return
        found = leaked(fb, target)
        if found:
            gate.check(name, False, f"feedback contains {found!r}")
            return
    gate.check(name, True)


def check_gold_differential(adapter, host, gate: Beyond, task, rollout, what: str) -> None:
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
        gate.check(name, False, f"score raised {short(exc)}")
        return
    more = gold_count(real, task.target) > gold_count(other, task.target)
    gate.check(name, not more, f"feedback contains {leaked(real, task.target)!r}" if more else "")


def check_replay(module, adapter, host, gate: Beyond) -> None:
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
                       "no task's recorded trace could be replayed: " + "; ".join(errors[:3]))
            return
    if errors:
        gate.notes.append(f"{len(errors)} task(s) before {task.id!r} did not replay, e.g. {errors[0]}")
    try:
        json.dumps(rollout.to_dict(), allow_nan=False)
        serial = ""
    except (TypeError, ValueError) as exc:
        serial = short(exc)
    gate.check("the rollout is plain JSON (cap-evolve saves it)", not serial, serial)
    try:
        s1, s2 = adapter.score(task, rollout), adapter.score(task, rollout)
    except Exception as exc:  # noqa: BLE001
        gate.check("a replayed task runs and scores", False, f"score raised {short(exc)}")
        return
    ok = isinstance(s1, host.Score) and 0.0 <= s1.reward <= 1.0 and score_view(s1) == score_view(s2)
    gate.check("a replayed task runs and scores", ok,
               f"task {task.id!r}: reward {s1.reward:.4f}, {len(rollout.tool_calls)} tool call(s)")
    problem = metrics_problem(s1, s1.reward)
    gate.check("replay metrics follow cap-evolve's rules", problem is None, problem or "")
    check_gold_differential(adapter, host, gate, task, rollout, "replay")
    gate.fingerprint["replay"] = [task.id, json.dumps(rollout.to_dict(), sort_keys=True, default=str)] + score_view(s1)


def run_beyond(report_dir: Path) -> None:
    gate = Beyond()
    try:
        import cap_evolve as host

        module, adapter = load_again(host, gate)
        if adapter is not None:
            check_probes(adapter, host, gate)
            val = check_tasks(adapter, host, gate)
            if val:
                check_probe_scoring(adapter, host, gate, val[0])
                check_replay(module, adapter, host, gate)
    except BaseException as exc:  # noqa: BLE001 - the report must always be written
        gate.check("mapc's checks finished", False, short(exc))
        sys.stderr.write(traceback.format_exc())
    write_json(report_dir / "beyond.json", gate.report())


def main(argv: list[str]) -> int:
    host_dir, report_dir = argv[1], Path(argv[2])
    # as under `python -c`: the working directory first; cap_evolve where site-packages would be
    sys.path.insert(0, "")
    sys.path.append(host_dir)
    code = run_host_check(report_dir)
    if (report_dir / "check.json").is_file() and json.loads((report_dir / "check.json").read_text())["completed"]:
        run_beyond(report_dir)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
