"""Spec composition (`extends:`): build on a library spec or another file.

Placeholder until composition lands: a spec with `extends` gets a clear
diagnostic instead of being silently half-applied.
"""

from __future__ import annotations

from mapc.diagnostics import Diagnostics
from mapc.spec.loader import LoadedSpec


def resolve_extends(loaded: LoadedSpec, diags: Diagnostics) -> LoadedSpec:
    data = loaded.data
    if isinstance(data, dict) and "extends" in data:
        diags.add(loaded.diag("unsupported", ("extends",), "`extends` is not supported yet", key=True))
    return loaded
