"""Run the mapping of an already-built adapter on traces (``mapc test --against``).

Run as a script in a fresh interpreter: ``python -P adapter_driver.py MODULE STANDIN TRACE...``.
Loads the generated module (never as ``__main__``, so its entry point does not run)
and calls its ``map_source`` on each trace, as the adapter itself does; prints one
line per trace: ``MAPC-TEST {"records": [...], "error": null}`` (the prefix keeps
anything the adapter prints apart). Only the standard
library: it must load adapters built by any mapc version.

The module's folder is never put on ``sys.path`` (``-P`` keeps this script's off too):
its runtime (``mapc_runtime/``, or an older build's ``mapc_runtime.py``) is loaded by
path, so a file planted beside it (``json.py``) cannot stand in for the standard library.
"""

import importlib.util
import json
import os
import sys

PREFIX = "MAPC-TEST "


def main(argv):
    module_path, standin, traces = argv[0], argv[1], argv[2:]
    sys.path.append(standin)  # cap-evolve adapters import cap_evolve; a real one earlier on the path wins
    spec = importlib.util.spec_from_file_location("mapc_trusted_adapter", module_path)
    module = importlib.util.module_from_spec(spec)
    try:
        load_runtime(os.path.dirname(os.path.abspath(module_path)))
        spec.loader.exec_module(module)
        # units the entry file does not import itself are in its runtime package
        runtime = sys.modules.get("mapc_runtime")
        for name in ("MapState", "SourceFile", "one_line"):
            found = runtime_name(runtime, name) if not hasattr(module, name) else None
            if found is not None:
                setattr(module, name, found)
        for name in ("map_source", "MapState", "SourceFile", "MAX_BYTES", "MAX_LINE_BYTES"):
            getattr(module, name)
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        print(PREFIX + json.dumps({"fatal": f"cannot load {module_path}: {type(exc).__name__}: {exc}"}))
        return 0
    for trace in traces:
        records = []
        error = None
        try:
            st = module.MapState()
            src = module.SourceFile(trace, None, module.MAX_BYTES, module.MAX_LINE_BYTES)
            module.map_source(src, st, lambda r: records.append(json.loads(json.dumps(r))))
        except Exception as exc:  # noqa: BLE001
            one_line = getattr(module, "one_line", None)
            error = one_line(exc) if one_line else f"{type(exc).__name__}: {exc}"
        print(PREFIX + json.dumps({"records": records, "error": error}, ensure_ascii=False, allow_nan=False))
    return 0


def runtime_name(runtime, name):
    """``name`` from the runtime package: its attribute (built before its modules were mapc's
    own files), or of the module that defines it (``mapc_runtime.stream.MapState``)."""
    if runtime is None or hasattr(runtime, name):
        return getattr(runtime, name, None)
    for module in ("stream", "mapping_rt"):
        try:
            found = getattr(importlib.import_module(f"mapc_runtime.{module}"), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    return None


def load_runtime(folder):
    """The runtime beside the module, imported by path as ``mapc_runtime`` (if there is one)."""
    package = os.path.join(folder, "mapc_runtime")
    if os.path.isfile(os.path.join(package, "__init__.py")):
        spec = importlib.util.spec_from_file_location("mapc_runtime", os.path.join(package, "__init__.py"),
                                                      submodule_search_locations=[package])
    elif os.path.isfile(package + ".py"):  # built before D72: one file
        spec = importlib.util.spec_from_file_location("mapc_runtime", package + ".py")
    else:
        return
    runtime = importlib.util.module_from_spec(spec)
    sys.modules["mapc_runtime"] = runtime
    spec.loader.exec_module(runtime)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
