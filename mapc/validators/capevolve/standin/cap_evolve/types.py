"""The cap-evolve value types, as the adapter contract describes them.

A stand-in written from cap-evolve's ADAPTER_CONTRACT.md and its published
type signatures (cap-evolve is not on PyPI): dataclasses with ``to_dict`` /
``from_dict``; ``Score`` clamps rewards to [0, 1] and rejects a malformed
metrics catalog with ``ValueError`` when it is built, as the real one does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

METRIC_DIRECTIONS = ("higher", "lower")


def _clamp01(x: float) -> float:
    """Rewards live in [0, 1]; NaN becomes 0.0."""
    if x != x:
        return 0.0
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else float(x)


@dataclass
class Task:
    """One unit of evaluation work."""

    id: str
    input: Any = None
    target: Any = None
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        return cls(
            id=str(d["id"]),
            input=d.get("input"),
            target=d.get("target"),
            metadata=dict(d.get("metadata") or {}),
        )


@dataclass
class Rollout:
    """The result of running the target agent on one task with a candidate live."""

    task_id: str
    output: Any = None
    trace: Any = None
    tool_calls: list = field(default_factory=list)
    cost_usd: float = 0.0
    tokens: int = 0
    error: Optional[str] = None
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Rollout":
        return cls(
            task_id=str(d["task_id"]),
            output=d.get("output"),
            trace=d.get("trace"),
            tool_calls=list(d.get("tool_calls") or []),
            cost_usd=float(d.get("cost_usd") or 0.0),
            tokens=int(d.get("tokens") or 0),
            error=d.get("error"),
            metadata=dict(d.get("metadata") or {}),
        )


@dataclass
class Score:
    """A scored task: reward in [0, 1], feedback, and an optional metrics catalog."""

    task_id: str
    reward: float = 0.0
    feedback: str = ""
    n: int = 1
    stderr: float = 0.0
    trial_rewards: list = field(default_factory=list)
    raw: dict = field(default_factory=dict)
    metrics: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reward = _clamp01(self.reward)
        self.trial_rewards = [_clamp01(r) for r in self.trial_rewards]
        self._validate_metrics()

    def _validate_metrics(self) -> None:
        if not self.metrics:
            return
        names: set = set()
        primaries = 0
        for m in self.metrics:
            if not isinstance(m, dict):
                raise ValueError(f"metric entry must be a dict, got {type(m).__name__}")
            name = m.get("name")
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"metric name must be a non-empty string, got {name!r}")
            if name in names:
                raise ValueError(f"duplicate metric name {name!r}")
            names.add(name)
            primary = m.get("primary")
            if not isinstance(primary, bool):
                raise ValueError(f"metric {name!r} 'primary' must be a bool, got {primary!r}")
            primaries += primary
            if m.get("direction") not in METRIC_DIRECTIONS:
                raise ValueError(f"metric {name!r} needs direction higher|lower")
            value = m.get("value")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"metric {name!r} value must be numeric, got {value!r}")
        if primaries != 1:
            raise ValueError(f"exactly one metric must be primary, got {primaries}")
        value = float(next(m["value"] for m in self.metrics if m["primary"]))
        if abs(value - self.reward) > 1e-9:
            raise ValueError(f"primary metric value {value} must equal reward {self.reward}")

    def primary_metric(self):
        for m in self.metrics:
            if m.get("primary") is True:
                return m
        return None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Score":
        return cls(
            task_id=str(d["task_id"]),
            reward=float(d.get("reward") or 0.0),
            feedback=str(d.get("feedback") or ""),
            n=int(d.get("n") or 1),
            stderr=float(d.get("stderr") or 0.0),
            trial_rewards=list(d.get("trial_rewards") or []),
            raw=dict(d.get("raw") or {}),
            metrics=list(d.get("metrics") or []),
        )
