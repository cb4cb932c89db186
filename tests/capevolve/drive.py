"""Drive a generated cap-evolve adapter in a fresh process, as cap-evolve's harness would.

Usage: ``python drive.py ADAPTER_PY OPS_JSON RESULT_JSON``, with the host
``cap_evolve`` (mapc's stand-in) on PYTHONPATH. OPS is a list of operations:
``{"op": "tasks", "split": S}``, ``{"op": "run", "task": ID, "ctx": PATH,
"seed": N}`` (with ``"as": NAME`` to keep the Rollout), ``{"op": "score",
"task": ID, "rollout": NAME | {...}}``; ``"target"`` in an op builds the Task
from it instead of asking the adapter.
Each result is the returned object's ``to_dict()``, or ``{"raised": ...}``.
Nothing is written to stdout, so the caller can check the adapter wrote nothing.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from cap_evolve import CapabilityAdapter, Rollout, Task


def main(adapter_py: str, ops_path: str, result_path: str) -> None:
    # like cap-evolve's loader: the adapters/ folder first on sys.path (its runtime module is there)
    sys.path.insert(0, str(Path(adapter_py).resolve().parent))
    spec = importlib.util.spec_from_file_location("forge_project_adapter", adapter_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    adapter = module.Adapter()
    assert isinstance(adapter, CapabilityAdapter)
    kept: dict[str, Rollout] = {}
    results = []

    def task_of(op) -> Task:
        """The adapter's own Task for op["task"]; or one built from op["target"]; or a bare one."""
        if "target" in op:
            return Task(id=op["task"], target=op["target"])
        return next((t for t in adapter.tasks("all") if t.id == op["task"]), None) or Task(id=op["task"])

    for op in json.loads(Path(ops_path).read_text(encoding="utf-8")):
        try:
            if op["op"] == "tasks":
                out = [t.to_dict() for t in adapter.tasks(op["split"])]
            elif op["op"] == "run":
                task = task_of(op)
                with adapter.live(Path(op.get("ctx", "."))) as ctx:
                    rollout = adapter.run_target(task, ctx, seed=op.get("seed", 0))
                kept[op.get("as", "last")] = rollout
                out = rollout.to_dict()
            elif op["op"] == "score":
                task = task_of(op)
                ref = op.get("rollout", "last")
                rollout = kept[ref] if isinstance(ref, str) else Rollout.from_dict(ref)
                out = adapter.score(task, rollout).to_dict()
            else:
                raise ValueError(f"unknown op {op['op']!r}")
        except Exception as exc:  # noqa: BLE001 - reported to the test
            out = {"raised": f"{type(exc).__name__}: {exc}"}
        results.append(out)
    Path(result_path).write_text(json.dumps(results, default=str), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:4])
