"""The runtime package next to each entry file, under the real hosts.

Each build writes ``mapc_runtime/`` beside ``adapter.py`` / ``run.py``. RLViz digests every
file of a plugin and rejects one that changes while it validates: running the adapter by hand
(no ``PYTHONDONTWRITEBYTECODE``) must leave no ``__pycache__/`` behind, also when a stream
imports the runtime's ``stream`` part late (a probe never imports it, D72). cap-evolve's loader
puts ``adapters/`` first on ``sys.path``: its real check and a real run must import the
runtime from there. RELAI runs ``run.py`` by path: mapc's RELAI validator runs every task.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mapc.api import build

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"


def _built(tmp_path: Path, target: str) -> Path:
    work = tmp_path / "example"
    if not work.exists():
        shutil.copytree(EXAMPLE, work)
    out = tmp_path / target
    result = build(work / "spec.yaml", target, out)
    assert result.ok, [d.format() for d in result.diagnostics] + [result.validation and result.validation.text]
    return out


def _request(tmp_path: Path, source: Path, operation: str = "probe") -> Path:
    real = os.path.realpath(source)
    request = tmp_path / f"request-{operation}.json"
    request.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": operation,
                                   "source": {"path": real, "root": os.path.dirname(real), "kind": "file"},
                                   "limits": {}}))
    return request


def test_rlviz_digest_survives_running_the_adapter_by_hand(real_rlviz, tmp_path):
    plugin = _built(tmp_path, "rlviz")
    fixture = plugin / "testdata" / "results.jsonl"
    first = subprocess.run([str(real_rlviz), "--json", str(plugin), str(fixture)], capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 0, first.stderr
    # by hand, as a user would: bytecode writing allowed, under plain python3 and python3 -I
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for flags in ([], ["-I"]):
        run = subprocess.run([sys.executable, *flags, "-X", "importtime", "adapter.py", "probe", "--request",
                              str(_request(tmp_path, fixture))], cwd=plugin, env=env, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0 and json.loads(run.stdout)["supported"] is True, run.stderr
        # a probe imports the modules the entry names and the probe's own (sniff), never the
        # stream's, nor what only other sources need (D76, D135)
        assert "| mapc_runtime.rlviz_rt\n" in run.stderr and "| mapc_runtime.sniff\n" in run.stderr
        for module in ("stream", "csv", "document", "merge", "timestamps", "jmespath_more"):
            assert f"mapc_runtime.{module}\n" not in run.stderr, module
        stream = subprocess.run([sys.executable, *flags, "-X", "importtime", "adapter.py", "stream", "--request",
                                 str(_request(tmp_path, fixture, "stream"))], cwd=plugin, env=env,
                                capture_output=True, text=True, timeout=60)
        assert stream.returncode == 0 and stream.stdout.count("\n") > 100, stream.stderr[-2000:]
        assert "| mapc_runtime.stream\n" in stream.stderr
    assert not list(plugin.rglob("__pycache__"))
    again = subprocess.run([str(real_rlviz), "--json", str(plugin), str(fixture)], capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["digest"] == json.loads(first.stdout)["digest"]


def test_capevolve_check_and_run_import_the_runtime_from_adapters(real_capevolve, tmp_path):
    adapters = _built(tmp_path, "cap-evolve")
    check = subprocess.run([str(real_capevolve / "check.sh"), str(adapters / "adapter.py"), str(adapters)],
                           capture_output=True, text=True, timeout=300)
    assert json.loads(check.stdout.strip().splitlines()[-1])["ok"] is True, check.stdout + check.stderr[-2000:]
    run = subprocess.run([str(real_capevolve / "run.sh"), str(adapters / "adapter.py"), str(adapters)],
                         capture_output=True, text=True, timeout=600)
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["ok"] is True and summary["strict_ok"] is True, summary
    assert (adapters / "mapc_runtime" / "__init__.py").is_file()
    assert not (adapters / "mapc_runtime" / "__pycache__").exists()


def test_relai_runner_imports_the_runtime_next_to_it(tmp_path):
    project = _built(tmp_path, "relai")
    shutil.copy(EXAMPLE / "results.jsonl", project / "results.jsonl")  # the replayed trace, project-relative
    folder = project / ".relai" / "custom-adaptor" / "verifiers-math"
    assert (folder / "mapc_runtime" / "__init__.py").is_file()
    done = subprocess.run([sys.executable, "-m", "mapc.cli", "validate", "--target", "relai", str(project), "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    payload = json.loads(done.stdout)
    assert done.returncode == 0 and payload["ok"] is True, done.stdout[-2000:]
    assert not list(folder.rglob("__pycache__"))
