"""mapc's stand-in cap_evolve is cap-evolve's own package, and behaves as its adapter contract says.

``mapc validate --target cap-evolve`` puts ``mapc/targets/capevolve/validator/standin/`` on the
adapter's path when cap-evolve is not installed: an adapter may import any module of the
real package (``cap_evolve.stats``...), so the stand-in is a byte-for-byte copy of it
(``standin/UPSTREAM.txt``), held here to the vendored upstream tree.
"""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import pytest

from capevolve_support import STANDIN

UPSTREAM_PACKAGE = Path(__file__).resolve().parents[1] / "data" / "upstream" / "cap-evolve" / "core" / "cap_evolve"


def test_the_stand_in_is_the_real_package_byte_for_byte():
    """Every module of cap-evolve's package, unmodified; only its demo data is left out."""
    ours = sorted(p.name for p in (STANDIN / "cap_evolve").iterdir() if p.name != "__pycache__")
    theirs = sorted(p.name for p in UPSTREAM_PACKAGE.iterdir() if p.name != "demo_session")
    assert ours == theirs and len(ours) > 30
    changed = [name for name in ours
               if (STANDIN / "cap_evolve" / name).read_bytes() != (UPSTREAM_PACKAGE / name).read_bytes()]
    assert not changed
    assert (STANDIN / "LICENSE").read_bytes() == (UPSTREAM_PACKAGE.parents[1] / "LICENSE").read_bytes()
    commit = (UPSTREAM_PACKAGE.parents[1] / "UPSTREAM.txt").read_text().split()[0]
    assert commit in (STANDIN / "UPSTREAM.txt").read_text()


@pytest.fixture(scope="module")
def host():
    sys.path.insert(0, str(STANDIN))
    try:
        module = importlib.import_module("cap_evolve")
        yield module
    finally:
        sys.path.remove(str(STANDIN))
        for name in [n for n in sys.modules if n == "cap_evolve" or n.startswith("cap_evolve.")]:
            del sys.modules[name]


def test_types_round_trip(host):
    task = host.Task(id="t", input={"q": 1}, target=[2], metadata={"m": 3})
    assert host.Task.from_dict(task.to_dict()) == task
    rollout = host.Rollout(task_id="t", output="o", trace={"e": []}, tool_calls=[{"id": 1}], cost_usd=0.5,
                           tokens=7, error=None, metadata={"k": "v"})
    assert host.Rollout.from_dict(rollout.to_dict()) == rollout
    assert host.Rollout.from_dict({"task_id": 5}).task_id == "5"
    score = host.Score(task_id="t", reward=0.5, feedback="f", metrics=[
        {"name": "reward", "value": 0.5, "primary": True, "direction": "higher"}])
    assert host.Score.from_dict(score.to_dict()) == score and score.primary_metric()["name"] == "reward"


@pytest.mark.parametrize("given, expected", [(1.5, 1.0), (-2, 0.0), (math.nan, 0.0), (0.25, 0.25)])
def test_score_clamps_rewards(host, given, expected):
    assert host.Score(task_id="t", reward=given, trial_rewards=[given]).reward == expected
    assert host.Score(task_id="t", trial_rewards=[given]).trial_rewards == [expected]


def metric(**kw):
    base = {"name": "reward", "value": 0.5, "primary": True, "direction": "higher"}
    return {**base, **kw}


@pytest.mark.parametrize("metrics, message", [
    (["x"], "must be a dict"),
    ([metric(name=" ")], "non-empty string"),
    ([metric(), metric()], "duplicate metric name"),
    ([metric(primary=1)], "must be a bool"),
    ([metric(direction="up")], "direction higher|lower"),
    ([metric(value=True)], "must be numeric"),
    ([metric(primary=False)], "exactly one metric must be primary, got 0"),
    ([metric(), metric(name="b")], "exactly one metric must be primary, got 2"),
    ([metric(value=0.7)], "must equal reward"),
])
def test_score_rejects_a_bad_metrics_catalog(host, metrics, message):
    with pytest.raises(ValueError, match=message):
        host.Score(task_id="t", reward=0.5, metrics=metrics)


def test_primary_metric_is_compared_after_clamping(host):
    assert host.Score(task_id="t", reward=3.0, metrics=[metric(value=1.0)]).reward == 1.0


def test_the_adapter_base_class(host, tmp_path):
    class Half(host.CapabilityAdapter):
        def tasks(self, split):
            return [host.Task(id="a")]

        def run_target(self, task, ctx, *, seed=0):
            raise KeyError(task.id)  # failing on the probe's fake task is not being a stub

        def score(self, task, rollout):
            return super().score(task, rollout)

    with pytest.raises(TypeError):
        host.CapabilityAdapter()
    adapter = Half()
    assert host.stub_methods(adapter) == ["score"]
    adapter.materialize(tmp_path / "cand", {"prompt.md": "hello", "sub/x.txt": 3})
    assert (tmp_path / "cand" / "prompt.md").read_text() == "hello"
    assert (tmp_path / "cand" / "sub" / "x.txt").read_text() == "3"
    adapter.materialize(tmp_path / "none")
    assert not (tmp_path / "none").exists()
    with adapter.live(Path("cand")) as ctx:
        assert ctx == Path("cand")
    assert adapter.trajectories("val") is None and adapter.runner_model() is None
    assert host.adapter.IMPLEMENT_MARKER == "IMPLEMENT ME"
