#!/usr/bin/env python3
"""Run a generated RLViz adapter without RLViz's output limits: benchmarks only.

``python bench/uncapped.py PLUGIN/adapter.py stream --request REQ`` runs the adapter's own
entry code, as RLViz runs it, with one change: its runtime's ``RLVIZ_OUTPUT_LIMITS`` is
lifted. A generated adapter stops before it passes the 32 MiB of stdout RLViz reads (D96),
and the benchmarks measure throughput and memory on traces that map to far more than that;
through this driver they run the same mapping code to the end.
"""

import os
import runpy
import sys

adapter = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(adapter))
import mapc_runtime.rlviz_rt  # noqa: E402 - the plugin's own runtime package, found next to it

mapc_runtime.rlviz_rt.RLVIZ_OUTPUT_LIMITS = None  # rlviz_stream: unbounded
runpy.run_path(adapter, run_name="__main__")
