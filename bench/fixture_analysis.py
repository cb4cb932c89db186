#!/usr/bin/env python3
"""What `mapc check` pays for coverage and the traps: one mapping of the fixtures, watched.

Usage::

    python bench/fixture_analysis.py            # every library and example spec
    python bench/fixture_analysis.py --repeat 5 # best of 5 per spec

Per spec: the time `load_checked` takes (the spec, its fixture checks) and the time
`analyse_fixtures` adds (mapc.tools.coverage: the Observer compiles the mapping, maps each
fixture, then mapc.tools.traps evaluates each rule's parts on the elements). Nothing is
asserted; the numbers are printed (best of ``--repeat``, wall-clock seconds).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from mapc.pipeline.build import load_checked
    from mapc.tools.coverage import analyse_fixtures

    specs = sorted(ROOT.glob("specs/*.yaml")) + sorted(ROOT.glob("examples/**/spec*.yaml"))
    print("| spec | fixture bytes | load_checked (s) | analyse_fixtures (s) | warnings |")
    print("|---|---:|---:|---:|---:|")
    for spec in specs:
        load = analyse = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            loaded, diags = load_checked(spec)
            t1 = time.perf_counter()
            if loaded is None:
                break
            _, found = analyse_fixtures(loaded, list(diags))
            t2 = time.perf_counter()
            load, analyse = min(load, t1 - t0), min(analyse, t2 - t1)
        if loaded is None:
            continue
        size = sum(Path(fx.resolved).stat().st_size for fx in loaded.fixtures)
        print(f"| `{spec.relative_to(ROOT)}` | {size} | {load:.3f} | {analyse:.3f} | {len(found)} |")


if __name__ == "__main__":
    main()
