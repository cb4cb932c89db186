"""Run the mapping of an already-built adapter on traces (``mapc test --against``).

Run as a script in a fresh interpreter: ``python adapter_driver.py MODULE STANDIN TRACE...``.
Loads the generated module (never as ``__main__``, so its entry point does not run)
and calls its ``map_source`` on each trace, as the adapter itself does; prints one
line per trace: ``MAPC-TEST {"records": [...], "error": null}`` (the prefix keeps
anything the adapter prints apart). Only the standard
library: it must load adapters built by any mapc version.
"""

import importlib.util
import json
import os
import sys

PREFIX = "MAPC-TEST "


def main(argv):
    module_path, standin, traces = argv[0], argv[1], argv[2:]
    sys.path.append(standin)  # cap-evolve adapters import cap_evolve; a real one earlier on the path wins
    sys.path.insert(0, os.path.dirname(os.path.abspath(module_path)))  # its mapc_runtime/, if any
    spec = importlib.util.spec_from_file_location("mapc_trusted_adapter", module_path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        # units the entry file does not import itself are in its runtime package
        runtime = sys.modules.get("mapc_runtime")
        for name in ("MapState", "SourceFile", "one_line"):
            if not hasattr(module, name) and hasattr(runtime, name):
                setattr(module, name, getattr(runtime, name))
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
