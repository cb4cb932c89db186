"""mapc: compile one YAML mapping spec into standalone trace adapters.

The Python API (documented in :mod:`mapc.api`)::

    import mapc

    spec = mapc.load_spec("spec.yaml")
    mapc.run(spec, "trace.jsonl").records
    mapc.build(spec, "rlviz", "plugins/my-agent").ok
    mapc.validate("rlviz", "plugins/my-agent", ["trace.jsonl"]).ok

Names are imported on first use (PEP 562): ``import mapc`` loads only the version. The
package's layers (``core``, ``expressions``, ``spec``, ``analysis``, ``codegen``,
``targets``, ``pipeline``, ``spectest``, ``tools``) are described in docs/architecture.md.
"""

from __future__ import annotations

import sys as _sys
from typing import TYPE_CHECKING

from mapc.core.version import __version__

if _sys.platform == "win32":
    # mapc locks output folders with fcntl (mapc/core/outlock.py, mapc/core/scratch.py): POSIX only
    raise ImportError("mapc runs on POSIX systems (it is tested on Linux) and not on Windows: it locks "
                      "output folders with fcntl, which Windows lacks. On Windows, run mapc under WSL.")

if TYPE_CHECKING:
    from mapc.api import (Mapper, MappingFailed, RunResult, Spec, SpecError, UsageError, build, load_spec, run,
                          run_many, validate)

_API = ("load_spec", "build", "run", "run_many", "validate", "Spec", "SpecError", "RunResult", "UsageError",
        "Mapper", "MappingFailed")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from mapc import api

        return getattr(api, name)
    raise AttributeError(f"module 'mapc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted((set(globals()) - {"_sys", "TYPE_CHECKING", "annotations"}) | set(__all__))
