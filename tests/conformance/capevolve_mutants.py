"""Mutants of a mapc-built cap-evolve adapter, each carrying one labelled defect.

Every mutant is one row: a name, the defect in words, what the REAL ``cap-evolve
check`` says about it (``host_ok``, checked by the differential suite: a row whose
defect does not do what its label says fails there), and the mutation. Mutations
are data, applied to a copy of one built adapter folder:

- ``after(code)``: Python appended to ``adapter.py`` (it runs after ``class Adapter``
  is defined, so it can wrap or replace its methods; ``_orig`` is the method it wraps);
- ``before(code)``: Python inserted right after the ``from cap_evolve import`` line;
- ``edit(old, new)``: one textual replacement in ``adapter.py`` (the text must be there);
- ``files(fn)``: ``fn(folder, outside)`` changes the data files (``outside`` is a folder
  beside the adapter folder, for symlink targets).

``slow`` rows hang by design: both checks run them with a short timeout.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HOST_IMPORT = "from cap_evolve import CapabilityAdapter, Rollout, Score, Task\n"
#: The public modules of the real cap_evolve (the vendored copy): an adapter may import any of them.
CAPEVOLVE_MODULES = tuple(f"cap_evolve.{p.stem}" for p in sorted(
    (Path(__file__).resolve().parents[1] / "data" / "upstream" / "cap-evolve" / "core" / "cap_evolve").glob("*.py"))
    if not p.stem.startswith("_"))


@dataclass(frozen=True)
class Mutant:
    name: str
    defect: str
    host_ok: bool
    mutations: tuple = ()
    slow: bool = False
    group: str = field(default="", compare=False)

    def apply(self, folder: Path, outside: Path) -> None:
        for mutate in self.mutations:
            mutate(folder, outside)


def after(code: str) -> Callable:
    def mutate(folder: Path, outside: Path) -> None:
        path = folder / "adapter.py"
        path.write_text(path.read_text(encoding="utf-8") + "\n\n" + textwrap.dedent(code).strip() + "\n",
                        encoding="utf-8")
    return mutate


def wrap(method: str, body: str) -> Callable:
    """Replace ``Adapter.<method>``; ``body`` defines ``_new(self, ...)`` and may call ``_orig``."""
    return after(f"_orig = Adapter.{method}\n{textwrap.dedent(body).strip()}\nAdapter.{method} = _new\n")


def before(code: str) -> Callable:
    return edit(HOST_IMPORT, HOST_IMPORT + textwrap.dedent(code).strip() + "\n")


def edit(old: str, new: str) -> Callable:
    def mutate(folder: Path, outside: Path) -> None:
        path = folder / "adapter.py"
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"the mutation expects {old!r} once in adapter.py"
        path.write_text(text.replace(old, new), encoding="utf-8")
    return mutate


def files(fn: Callable[[Path, Path], None]) -> Callable:
    return fn


def _write(name: str, data: bytes) -> Callable:
    def mutate(folder: Path, outside: Path) -> None:
        (folder / name).write_bytes(data)
    return mutate


def _move_out(name: str) -> Callable:
    """Move ``name`` beside the folder and leave a symlink to it (check.sh copies with -L)."""
    def mutate(folder: Path, outside: Path) -> None:
        os.replace(folder / name, outside / name)
        (folder / name).symlink_to(outside / name)
    return mutate


def _dangling(folder: Path, outside: Path) -> None:
    (folder / "notes.txt").symlink_to(outside / "missing.txt")


def _fifo(folder: Path, outside: Path) -> None:
    os.mkfifo(folder / "events.pipe")


def _remove(name: str) -> Callable:
    def mutate(folder: Path, outside: Path) -> None:
        (folder / name).unlink()
    return mutate


def _rename_task(folder: Path, outside: Path) -> None:
    path = folder / "tasks.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace('"airline-6"', '"airline/6"'), encoding="utf-8")


def _latin1(folder: Path, outside: Path) -> None:
    path = folder / "adapter.py"
    path.write_bytes(path.read_bytes() + b"\nPLACE = 'caf\xe9'\n")


def _crlf(folder: Path, outside: Path) -> None:
    path = folder / "adapter.py"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def _helper_module(folder: Path, outside: Path) -> None:
    (folder / "mapc_diff_helper.py").write_text("GREETING = 'hello'\n", encoding="utf-8")


M = Mutant
LOADING = [
    M("clean", "none (control): the adapter as mapc built it", True),
    M("clean-crlf", "none (control): CRLF line endings", True, (files(_crlf),)),
    M("syntax-error", "adapter.py does not compile", False, (after("def broken(:\n    pass"),)),
    M("import-raises", "an exception at import", False, (after("raise RuntimeError('no config file')"),)),
    M("import-sys-exit", "sys.exit(0) at import", False, (after("import sys\nsys.exit(0)"),)),
    M("import-os-exit", "os._exit(0) at import", False, (after("os._exit(0)"),)),
    M("no-adapter-class", "the class is not named Adapter", False,
      (edit("class Adapter(CapabilityAdapter):", "class Adaptor(CapabilityAdapter):"),)),
    M("adapter-is-a-factory", "none (control): Adapter is a function returning the adapter", True,
      (after("_Real = Adapter\ndef Adapter():\n    return _Real()"),)),
    M("init-raises", "Adapter() raises", False,
      (wrap("__init__", "def _new(self):\n    raise RuntimeError('missing API key')"),)),
    M("init-needs-argument", "Adapter() needs an argument", False,
      (wrap("__init__", "def _new(self, config):\n    _orig(self)"),)),
    M("imports-yaml", "imports yaml (one of mapc's own dependencies)", False, (before("import yaml"),)),
    M("imports-jmespath", "imports jmespath (one of mapc's own dependencies)", False, (before("import jmespath"),)),
    M("imports-mapc", "imports mapc itself", False, (before("import mapc"),)),
    M("imports-sibling-module", "none (control): imports a helper module next to it", True,
      (files(_helper_module), before("import mapc_diff_helper"))),
    M("imports-cap-evolve-stats", "none (control): imports cap_evolve.stats, part of the real package", True,
      (before("from cap_evolve.stats import mean"),)),
    M("imports-every-cap-evolve-module", "none (control): imports every public module of the real cap_evolve",
      True, (before("import " + ", ".join(CAPEVOLVE_MODULES)),)),
    M("absolute-file-assumed", "none (control): assumes __file__ is absolute (cap-evolve loads it so)", True,
      (after("assert os.path.isabs(__file__), __file__"),)),
    M("chdir-at-import", "changes the working directory at import (later steps lose their relative paths)",
      True, (after("os.chdir('/')"),)),
    M("reads-cwd-relative", "reads tasks.jsonl relative to the working directory", False,
      (wrap("_catalog", "def _new(self):\n    open('tasks.jsonl').close()\n    return _orig(self)"),)),
    M("string-annotation-dataclass", "a dataclass with a string annotation (its module is not in sys.modules)",
      False, (after("import dataclasses\n@dataclasses.dataclass\nclass Extra:\n    x: 'int' = 0"),)),
    M("latin1-string", "a Latin-1 byte in a string of adapter.py", False, (files(_latin1),)),
]
DATA = [
    M("tasks-file-missing", "tasks.jsonl deleted", False, (files(_remove("tasks.jsonl")),)),
    M("tasks-file-empty", "tasks.jsonl empty", False, (files(_write("tasks.jsonl", b"")),)),
    M("tasks-file-not-json", "tasks.jsonl holds a line that is not JSON", False,
      (files(_write("tasks.jsonl", b"{not json\n")),)),
    M("tasks-file-symlinked", "none (control): tasks.jsonl is a symlink to a file outside", True,
      (files(_move_out("tasks.jsonl")),)),
    M("traces-dir-symlinked", "none (control): traces/ is a symlink to a folder outside", True,
      (files(_move_out("traces")),)),
    M("dangling-symlink", "a dangling symlink in the folder", False, (files(_dangling),)),
    M("named-pipe", "none (control): a named pipe in the folder", True, (files(_fifo),)),
    M("task-id-with-slash", "a task id holds '/' (rollout file names break)", True, (files(_rename_task),)),
]
STUBS = [
    M("stub-tasks", "tasks() still raises IMPLEMENT ME", False,
      (wrap("tasks", "def _new(self, split):\n    raise NotImplementedError('IMPLEMENT ME: tasks(split)')"),)),
    M("stub-run-target", "run_target() still raises IMPLEMENT ME", False,
      (wrap("run_target", "def _new(self, task, ctx, *, seed=0):\n    raise NotImplementedError('IMPLEMENT ME')"),)),
    M("stub-score", "score() still raises IMPLEMENT ME", False,
      (wrap("score", "def _new(self, task, rollout):\n    raise NotImplementedError('IMPLEMENT ME: score')"),)),
    M("run-target-not-implemented", "run_target raises NotImplementedError without the marker", True,
      (wrap("run_target", "def _new(self, task, ctx, *, seed=0):\n    raise NotImplementedError('later')"),)),
    M("run-target-raises", "run_target raises instead of returning an errored Rollout", True,
      (wrap("run_target", "def _new(self, task, ctx, *, seed=0):\n    raise RuntimeError('agent crashed')"),)),
    M("run-target-returns-none", "run_target returns None", True,
      (wrap("run_target", "def _new(self, task, ctx, *, seed=0):\n    return None"),)),
    M("run-target-sys-exit", "run_target calls sys.exit", False,
      (wrap("run_target", "def _new(self, task, ctx, *, seed=0):\n    raise SystemExit(3)"),)),
    M("run-target-abstract", "run_target is not defined (abstract)", False,
      (after("Adapter = type('Adapter', (CapabilityAdapter,), {k: v for k, v in vars(Adapter).items()\n"
             "                if k not in ('run_target', '__dict__', '__weakref__', '_abc_impl', '__abstractmethods__')})"),)),
    M("duck-typed", "Adapter does not subclass CapabilityAdapter", True,
      (after("Adapter = type('Adapter', (), {k: v for k, v in vars(Adapter).items()\n"
             "                if k not in ('__dict__', '__weakref__', '_abc_impl', '__abstractmethods__')})"),)),
    M("tasks-raises-base-exception", "tasks raises a BaseException that is not an Exception", False,
      (wrap("tasks", "class Abort(BaseException):\n    pass\ndef _new(self, split):\n    raise Abort('stop')"),)),
]
RUNNER_MODEL = [
    M("runner-model-raises", "runner_model() raises", True,
      (wrap("runner_model", "def _new(self):\n    raise RuntimeError('no model configured')"),)),
    M("runner-model-sys-exit", "runner_model() calls sys.exit", False,
      (wrap("runner_model", "def _new(self):\n    raise SystemExit(0)"),)),
    M("runner-model-prints", "runner_model() prints to stdout", True,
      (wrap("runner_model", "def _new(self):\n    print('model: gpt-4o')\n    return 'gpt-4o'"),)),
    M("runner-model-not-a-string", "none (control): runner_model() returns an int", True,
      (wrap("runner_model", "def _new(self):\n    return 42"),)),
    M("runner-model-empties-tasks", "runner_model() has a side effect: tasks('val') becomes empty", False,
      (wrap("runner_model", "def _new(self):\n    self._catalog().clear()\n    return None"),)),
    M("runner-model-hangs", "runner_model() never returns", False,
      (wrap("runner_model", "def _new(self):\n    import time\n    time.sleep(600)"),), True),
]
TASKS = [
    M("tasks-val-empty", "tasks('val') is empty", False,
      (wrap("tasks", "def _new(self, split):\n    return [] if split == 'val' else _orig(self, split)"),)),
    M("tasks-tuple", "tasks() returns a tuple", True,
      (wrap("tasks", "def _new(self, split):\n    return tuple(_orig(self, split))"),)),
    M("tasks-dicts", "tasks() returns dicts, not Task", False,
      (wrap("tasks", "def _new(self, split):\n    return [t.to_dict() for t in _orig(self, split)]"),)),
    M("tasks-generator", "tasks() returns a generator", False,
      (wrap("tasks", "def _new(self, split):\n    return (t for t in _orig(self, split))"),)),
    M("tasks-unstable-order", "tasks() order changes between calls", False,
      (wrap("tasks", "def _new(self, split):\n    self._n = getattr(self, '_n', 0) + 1\n"
                     "    rows = _orig(self, split)\n    return rows[::-1] if self._n % 2 else rows"),)),
    M("tasks-all-raises", "tasks('all') raises (the split a real run uses)", True,
      (wrap("tasks", "def _new(self, split):\n    if split == 'all':\n        raise ValueError('no such split')\n"
                     "    return _orig(self, split)"),)),
    M("tasks-duplicate-ids", "tasks() repeats a task", True,
      (wrap("tasks", "def _new(self, split):\n    rows = _orig(self, split)\n    return rows + rows[:1]"),)),
    M("tasks-val-raises", "tasks('val') raises", False,
      (wrap("tasks", "def _new(self, split):\n    if split == 'val':\n        raise KeyError(split)\n"
                     "    return _orig(self, split)"),)),
    M("tasks-foreign-task-class", "tasks() returns its own Task class", False,
      (wrap("tasks", "class _T:\n    def __init__(self, id):\n        self.id = id\n"
                     "def _new(self, split):\n    return [_T(t.id) for t in _orig(self, split)]"),)),
    M("tasks-task-subclass", "none (control): tasks() returns a subclass of Task", True,
      (wrap("tasks", "class _T(Task):\n    pass\n"
                     "def _new(self, split):\n    return [_T(**t.to_dict()) for t in _orig(self, split)]"),)),
    M("task-id-not-a-string", "a task id is an int", True,
      (wrap("tasks", "def _new(self, split):\n    rows = _orig(self, split)\n    rows[0].id = 7\n    return rows"),)),
    M("val-not-in-all", "tasks('val') holds a task that tasks('all') lacks", True,
      (wrap("tasks", "def _new(self, split):\n    rows = _orig(self, split)\n"
                     "    return rows + [Task(id='extra')] if split == 'val' else rows"),)),
]
SCORE = [
    M("score-random", "score() is random", False,
      (wrap("score", "import random\ndef _new(self, task, rollout):\n    s = _orig(self, task, rollout)\n"
                     "    s.reward = random.random()\n    return s"),)),
    M("score-jitter-tiny", "score() drifts by 1e-9 per call (within cap-evolve's tolerance)", True,
      (wrap("score", "def _new(self, task, rollout):\n    self._k = getattr(self, '_k', 0) + 1\n"
                     "    s = _orig(self, task, rollout)\n    s.reward = s.reward + self._k * 1e-9\n    return s"),)),
    M("score-jitter-large", "score() drifts by 1e-3 per call", False,
      (wrap("score", "def _new(self, task, rollout):\n    self._k = getattr(self, '_k', 0) + 1\n"
                     "    s = _orig(self, task, rollout)\n    s.reward = s.reward + self._k * 1e-3\n    return s"),)),
    M("score-returns-dict", "score() returns a dict", False,
      (wrap("score", "def _new(self, task, rollout):\n    return _orig(self, task, rollout).to_dict()"),)),
    M("score-returns-namespace", "score() returns a look-alike object, not a Score", True,
      (wrap("score", "import types\ndef _new(self, task, rollout):\n    s = _orig(self, task, rollout)\n"
                     "    return types.SimpleNamespace(reward=s.reward, feedback=s.feedback, metrics=[])"),)),
    M("score-nan-reward", "score() returns a NaN reward (on a look-alike object)", True,
      (wrap("score", "import types\ndef _new(self, task, rollout):\n"
                     "    return types.SimpleNamespace(reward=float('nan'), feedback='f', metrics=[])"),)),
    M("score-string-reward", "score() returns a reward that is a string", False,
      (wrap("score", "import types\ndef _new(self, task, rollout):\n"
                     "    return types.SimpleNamespace(reward='0.5', feedback='f', metrics=[])"),)),
    M("score-reward-above-one", "score() sets a reward of 1.5 after building the Score", True,
      (wrap("score", "def _new(self, task, rollout):\n    s = _orig(self, task, rollout)\n"
                     "    s.reward = 1.5\n    return s"),)),
    M("score-two-primary-metrics", "score() declares two primary metrics", False,
      (wrap("score", "def _new(self, task, rollout):\n    s = _orig(self, task, rollout)\n"
                     "    m = {'name': 'other', 'value': s.reward, 'primary': True, 'direction': 'higher'}\n"
                     "    return Score(task_id=s.task_id, reward=s.reward, feedback=s.feedback, "
                     "metrics=s.metrics + [m])"),)),
    M("score-leaks-gold", "feedback shows the gold target", True,
      (wrap("score", "def _new(self, task, rollout):\n    s = _orig(self, task, rollout)\n"
                     "    import json\n    s.feedback += ' expected: ' + json.dumps(task.target)\n    return s"),)),
    M("score-empty-feedback", "feedback is empty", True,
      (wrap("score", "def _new(self, task, rollout):\n    s = _orig(self, task, rollout)\n"
                     "    s.feedback = ''\n    return s"),)),
    M("score-hash-seed", "the reward depends on PYTHONHASHSEED", True,
      (wrap("score", "def _new(self, task, rollout):\n    s = _orig(self, task, rollout)\n"
                     "    s.reward = (hash('mapc') % 7) / 10\n    s.metrics = []\n    return s"),)),
    M("score-errored-full-reward", "an errored rollout scores 1.0", True,
      (wrap("score", "def _new(self, task, rollout):\n    if rollout.error:\n"
                     "        return Score(task_id=task.id, reward=1.0, feedback='fine')\n"
                     "    return _orig(self, task, rollout)"),)),
    M("score-unknown-task-full-reward", "a task the adapter does not know scores 1.0", True,
      (wrap("score", "def _new(self, task, rollout):\n    if task.id not in {t.id for t in self.tasks('all')}:\n"
                     "        return Score(task_id=task.id, reward=1.0, feedback='looks right')\n"
                     "    return _orig(self, task, rollout)"),)),
    M("score-raises-on-unknown-task", "score() raises for a task it does not know", True,
      (wrap("score", "def _new(self, task, rollout):\n    if task.id == '__probe__':\n"
                     "        raise KeyError(task.id)\n    return _orig(self, task, rollout)"),)),
    M("score-raises", "score() always raises", False,
      (wrap("score", "def _new(self, task, rollout):\n    raise ValueError('no grader')"),)),
    M("score-raises-on-probe-output", "score() raises on the check's probe output", False,
      (wrap("score", "def _new(self, task, rollout):\n    if rollout.output == '__probe_output__':\n"
                     "        raise ValueError('unexpected output')\n    return _orig(self, task, rollout)"),)),
]
MATERIALIZE = [
    M("materialize-raises", "materialize() raises", True,
      (wrap("materialize", "def _new(self, candidate_dir, edits=None):\n    raise OSError('read-only')"),)),
    M("materialize-sys-exit", "materialize() calls sys.exit", False,
      (wrap("materialize", "def _new(self, candidate_dir, edits=None):\n    raise SystemExit(0)"),)),
    M("materialize-writes-cwd", "materialize() writes into the working directory", True,
      (wrap("materialize", "def _new(self, candidate_dir, edits=None):\n"
                           "    open('leftover.txt', 'w').write('x')"),)),
]
PROCESS = [
    M("prints-at-import", "prints a line to stdout at import", True, (after("print('adapter ready')"),)),
    M("writes-stdout-no-newline", "writes to stdout without a line break", False,
      (after("import sys\nsys.stdout.write('booting')"),)),
    M("prints-fake-report", "prints a JSON report of its own", True,
      (after("import json\nprint(json.dumps({'ok': False, 'problems': ['fake']}))"),)),
    M("writes-stderr", "none (control): writes to stderr", True,
      (after("import sys\nsys.stderr.write('adapter loaded\\n')"),)),
    M("replaces-stdout", "sets sys.stdout = sys.stderr", False, (after("import sys\nsys.stdout = sys.stderr"),)),
    M("closes-stdout", "closes file descriptor 1", False, (after("os.close(1)"),)),
    M("atexit-exit-status", "an atexit handler changes the exit status", False,
      (after("import atexit\natexit.register(os._exit, 3)"),)),
    M("daemon-thread", "none (control): starts a daemon thread", True,
      (after("import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()"),)),
    M("thread-keeps-running", "starts a thread that keeps the process alive", False,
      (after("import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()"),), True),
    M("tasks-hang", "tasks() never returns", False,
      (wrap("tasks", "import time\ndef _new(self, split):\n    time.sleep(600)"),), True),
]

GROUPS = {"loading": LOADING, "data files": DATA, "stubs and probes": STUBS, "runner_model": RUNNER_MODEL,
          "tasks": TASKS, "score": SCORE, "materialize": MATERIALIZE, "process and stdout": PROCESS}
MUTANTS = [Mutant(m.name, m.defect, m.host_ok, m.mutations, m.slow, group)
           for group, rows in GROUPS.items() for m in rows]
