"""mapc: compile one YAML mapping spec into standalone trace adapters.

The Python API (documented in :mod:`mapc.api`)::

    import mapc

    spec = mapc.load_spec("spec.yaml")
    mapc.run(spec, "trace.jsonl").records
    mapc.build(spec, "rlviz", "plugins/my-agent").ok
    mapc.validate("rlviz", "plugins/my-agent", ["trace.jsonl"]).ok

Names are imported on first use: ``import mapc`` loads nothing else.
"""

import sys as _sys

__version__ = "0.1.0"

if _sys.platform == "win32":
    # mapc locks output folders with fcntl (mapc/outlock.py, mapc/scratch.py): POSIX only
    raise ImportError("mapc runs on POSIX systems (it is tested on Linux) and not on Windows: it locks "
                      "output folders with fcntl, which Windows lacks. On Windows, run mapc under WSL.")

_API = ("load_spec", "run", "run_many", "validate", "Spec", "SpecError", "RunResult", "UsageError", "Mapper",
        "MappingFailed")
__all__ = ["__version__", "build", *_API]


def __getattr__(name: str):
    if name in _API:
        from mapc import api

        return getattr(api, name)
    if name == "build":  # the pipeline module, callable as mapc.api.build (see mapc/build.py)
        import importlib

        return importlib.import_module("mapc.build")
    raise AttributeError(f"module 'mapc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted((set(globals()) - {"_sys"}) | set(__all__))
