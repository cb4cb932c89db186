"""Issue 28, items 3 and 4: what a third-party target package and an agent's trace cannot do.

Item 3: a package in the ``mapc.targets`` entry-point group is imported only by a command
that names its target (or lists them all), in a thread with a time bound; whatever it does at
import (``sys.exit``, an exception, a ``KeyboardInterrupt`` of its own, a hang) becomes one
line naming its distribution, version and entry point, and no other command notices it. A
real Ctrl-C still stops mapc.

Item 4: every runner (RELAI's ``run.py``, cap-evolve's ``run_target``, RLViz's request check)
contains the trace it reads with one rule (``mapping_rt.contained``) and refuses an escape
with the same line; here the agent itself leaves its trace outside the project behind a
symlink, under mapc's stand-in cap-evolve, RELAI's runner, and the real cap-evolve.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from security_support import ROOT, drive_capevolve, host_env

SPEC = ROOT / "examples" / "verifiers-math" / "spec.yaml"
TRACE = ROOT / "examples" / "verifiers-math" / "results.jsonl"


# --- item 3: third-party target packages ---------------------------------------------------
#: What a broken package does at import, and the end of the line mapc says about it.
AT_IMPORT = {
    "exit": ("import sys\nsys.exit(7)\n", "loading it called sys.exit(7); fix or uninstall the package"),
    "raise": ("raise RuntimeError('no licence\\nfound')\n",
              "loading it raised RuntimeError: no licence found; fix or uninstall the package"),
    "keyboard-interrupt": ("raise KeyboardInterrupt\n",
                           "loading it raised KeyboardInterrupt; fix or uninstall the package"),
    "hang": ("while True:\n    pass\n",
             "loading it did not finish in 1 s (a hang at import?); fix or uninstall the package, or set "
             "MAPC_TARGET_LOAD_TIMEOUT to wait longer"),
}
HEAD = "target 'broken' of mapc-target-broken 2.5 (entry point broken = broken_target) cannot be used: "


def plant(site: Path, body: str, dist: str = "mapc-target-broken", module: str = "broken_target") -> None:
    """Install, as pip lays out a wheel, the package ``dist`` 2.5 whose ``module`` (entry point
    ``broken``) runs ``body`` at import."""
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(body)
    info = site / f"{dist.replace('-', '_')}-2.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 2.5\n")
    (info / "entry_points.txt").write_text(f"[mapc.targets]\nbroken = {module}\n")


def mapc_cli(site: Path, *args, timeout=120, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(site), "MAPC_TARGET_LOAD_TIMEOUT": "1", **env}
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("behaviour", sorted(AT_IMPORT))
def test_item3_a_package_that_exits_raises_or_hangs_at_import_stops_no_command(behaviour, tmp_path):
    site = tmp_path / "site"
    body, said = AT_IMPORT[behaviour]
    plant(site, body)
    built = mapc_cli(site, "build", SPEC, "--target", "rlviz", "-o", tmp_path / "out", "--no-validate")
    assert built.returncode == 0 and "built rlviz adapter" in built.stderr, (built.returncode, built.stderr)
    ran = mapc_cli(site, "run", SPEC, TRACE)
    assert ran.returncode == 0 and ran.stdout.endswith('{"record_type":"complete","records":178,"warnings":0}\n'), (ran.returncode, ran.stderr)
    assert mapc_cli(site, "check", SPEC).returncode == 0
    listed = mapc_cli(site, "targets", "--json")
    assert listed.returncode == 0, (listed.returncode, listed.stderr)
    payload = json.loads(listed.stdout)
    assert sorted(t["name"] for t in payload["targets"]) == ["atif", "cap-evolve", "relai", "rlviz"]
    assert payload["problems"] == {"broken": HEAD + said}
    text = mapc_cli(site, "targets")
    assert text.returncode == 0 and text.stderr == f"warning: {HEAD}{said}\n"
    asked = mapc_cli(site, "build", SPEC, "--target", "broken", "-o", tmp_path / "out2")
    assert asked.returncode == 2 and asked.stdout == ""
    assert asked.stderr == f"error: {HEAD}{said}; other targets: atif, cap-evolve, relai, rlviz\n"
    assert not (tmp_path / "out2").exists()


def test_item3_only_the_target_named_is_imported(tmp_path):
    """A command that needs no package target, or another one, never imports it."""
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    plant(site, f"open({str(marker)!r}, 'a').write('x')\nTARGET = None\n")
    for args in (("build", SPEC, "--target", "rlviz", "-o", tmp_path / "out", "--no-validate"),
                 ("run", SPEC, TRACE), ("check", SPEC, "--target", "cap-evolve"), ("runtime", "--target", "relai"),
                 ("test", SPEC), ("build", SPEC, "--target", "nope", "-o", tmp_path / "nope")):
        done = mapc_cli(site, *args)
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, (args, done.stderr)
        assert not marker.exists(), f"mapc {args[0]} imported a package target it does not use"
    unknown = mapc_cli(site, "build", SPEC, "--target", "nope", "-o", tmp_path / "nope")
    assert unknown.stderr == "error: unknown target 'nope'; known targets: atif, broken, cap-evolve, relai, rlviz\n"
    asked = mapc_cli(site, "build", SPEC, "--target", "broken", "-o", tmp_path / "out2")
    assert marker.read_text() == "x", "the target named is imported, once"
    assert asked.stderr.startswith(f"error: {HEAD}broken_target is not a mapc.targets.Target")


def test_item3_two_packages_declaring_one_target_are_refused_unimported(tmp_path):
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    for dist, module in (("mapc-target-broken", "broken_target"), ("other-broken", "other_target")):
        plant(site, f"open({str(marker)!r}, 'a').write('x')\n", dist, module)
    asked = mapc_cli(site, "build", SPEC, "--target", "broken", "-o", tmp_path / "out")
    assert asked.returncode == 2 and asked.stderr == (
        "error: target 'broken' cannot be used: 2 installed packages provide it (mapc-target-broken 2.5 "
        "(broken = broken_target); other-broken 2.5 (broken = other_target)); uninstall all but one; "
        "other targets: atif, cap-evolve, relai, rlviz\n")
    assert not marker.exists()


def test_item3_a_real_ctrl_c_while_a_package_hangs_still_stops_mapc(tmp_path):
    """The package's own KeyboardInterrupt is its failure; the user's Ctrl-C (SIGINT, delivered
    to mapc's main thread while the package loads in another) stops mapc."""
    site = tmp_path / "site"
    started = tmp_path / "loading"
    plant(site, f"import time\nopen({str(started)!r}, 'w').close()\nwhile True:\n    time.sleep(0.01)\n")
    env = {**os.environ, "PYTHONPATH": str(site), "MAPC_TARGET_LOAD_TIMEOUT": "600"}
    proc = subprocess.Popen([sys.executable, "-m", "mapc.cli", "targets"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "mapc never started loading the package"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and err == "interrupted\n" and out == ""


# --- item 4: one containment rule for every runner -------------------------------------------
GREETING = ROOT / "examples" / "atif-greeting-agent"
#: An agent that writes its real trajectory (the right answer: reward 1.0 if scored) outside the
#: project, in $ESCAPE_TO, and leaves a symlink to it where the spec says the trace is: at the
#: file itself, or (ESCAPE_HOW=folder) in place of the trace's folder.
ESCAPING_AGENT = """\
import os, shutil, subprocess, sys
out = sys.argv[sys.argv.index("--out") + 1]
outside = os.environ["ESCAPE_TO"]
args = sys.argv[1:]
args[args.index("--out") + 1] = os.path.join(outside, os.path.basename(out))
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent.py"), *args],
               check=True)
if os.environ.get("ESCAPE_HOW") == "folder":
    shutil.rmtree(os.path.dirname(out))
    os.symlink(outside, os.path.dirname(out))
else:
    os.symlink(os.path.join(outside, os.path.basename(out)), out)
"""
REFUSED = "trace 'runs/greet-en.json' leads outside the project (through a symlink, '..' or an absolute path); refused"


def escaping_project(tmp_path: Path) -> Path:
    """The greeting-agent example, its agent swapped for the escaping one, built for RELAI
    (into the project) and cap-evolve (``out-ce``)."""
    project = tmp_path / "project"
    shutil.copytree(GREETING, project)
    (project / "escaping_agent.py").write_text(ESCAPING_AGENT)
    spec = project / "spec.yaml"
    spec.write_text(spec.read_text().replace("command: [python3, agent.py,", "command: [python3, escaping_agent.py,"))
    for target, out in (("relai", project), ("cap-evolve", project / "out-ce")):
        done = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", target, "-o",
                               str(out), "--no-validate", "--no-test"], cwd=project, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return project


@pytest.mark.parametrize("how", ["file", "folder"])
def test_item4_a_trace_the_agent_symlinks_out_of_the_project_is_refused_alike_by_every_runner(how, tmp_path):
    project = escaping_project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    env = host_env(ESCAPE_TO=str(outside), ESCAPE_HOW=how)
    ops = [{"op": "run", "task": "greet-en", "ctx": ".", "seed": 0, "as": "r"},
           {"op": "score", "task": "greet-en", "rollout": "r"}]
    (rollout, score), proc = drive_capevolve(project / "out-ce", ops, cwd=project, env=env)
    assert rollout.get("error") == REFUSED, (rollout, proc.stderr)
    assert score["reward"] == 0.0
    assert (outside / "greet-en.json").is_file(), "the agent did write the outside trace"
    (project / "runs").unlink() if how == "folder" else (project / "runs" / "greet-en.json").unlink()
    runner = next((project / ".relai" / "custom-adaptor").iterdir()) / "run.py"
    result_file = tmp_path / "result.json"
    ran = subprocess.run([sys.executable, str(runner), "--task-id", "greet-en", "--output", str(result_file)],
                         cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(result_file.read_text())["failure"] == {"kind": "agent", "message": REFUSED}


def test_item4_the_real_cap_evolve_gets_the_escape_refused(tmp_path):
    """A real `cap-evolve run` (run.sh: every task run with run_target, then scored): every
    rollout is an error with the containment line, none scores the outside trace."""
    from hosts import require_capevolve

    capevolve = require_capevolve()
    project = escaping_project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    run_root = tmp_path / "run-root"  # what run.sh copies into the repository root it makes
    run_root.mkdir()
    for name in ("agent.py", "escaping_agent.py"):
        shutil.copy(project / name, run_root / name)
    env = dict(os.environ, RUN_ROOT=str(run_root), RUN_TIMEOUT="240", ESCAPE_TO=str(outside))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(capevolve / "run.sh"), str(project / "out-ce" / "adapter.py"),
                           str(project / "out-ce")], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=300)
    summary = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert summary["run_target_calls"] >= 3 and summary["errored_rollouts"] == summary["run_target_calls"], summary
    assert summary["errors"] and all(e.split(": ", 1)[1] == REFUSED.replace("greet-en", e.split(":")[0])
                                     for e in summary["errors"]), summary["errors"]
    assert set(summary["mean_reward"].values()) == {0.0}, summary
    assert sorted(p.name for p in outside.iterdir()) == ["greet-en.json", "greet-es.json", "greet-fr.json"]
