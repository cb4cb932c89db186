"""A minimal stand-in of cap-evolve's public adapter types.

cap-evolve is not on PyPI, so mapc ships this small package, written from
cap-evolve's ADAPTER_CONTRACT.md, to import and exercise generated adapters
when the real ``cap_evolve`` is not installed. It exposes the same names and
behaviour the contract specifies; generated adapters import
``from cap_evolve import CapabilityAdapter, Rollout, Score, Task`` and cannot
tell the two apart.
"""

from __future__ import annotations

from .adapter import IMPLEMENT_MARKER, CapabilityAdapter, stub_methods
from .types import Rollout, Score, Task

__version__ = "0.0.0+mapc.standin"

__all__ = ["CapabilityAdapter", "IMPLEMENT_MARKER", "Rollout", "Score", "Task", "stub_methods", "__version__"]
