"""Print the agreement table: ``python -m tests.conformance.rlviz_mutants [GLOB]`` from the repository root.

Builds the base plugin, judges every mutant (or those whose name matches GLOB)
with the real RLViz (``MAPC_RLVIZ_BIN``, default the vendored one: ``tests/hosts.py``) and with
mapc, and prints cases and agreement per category, then any disagreement and
any mutant whose real verdict is not the expected one. Exit 1 on either.
"""

from __future__ import annotations

import fnmatch
import shutil
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TESTS / "conformance"), str(TESTS)]

import hosts  # noqa: E402
from rlviz_mutants import agree, agreement_table, build_base, fast_python_env, judge  # noqa: E402
from rlviz_mutants.table import MUTANTS  # noqa: E402


def main(argv: list[str]) -> int:
    pattern = argv[0] if argv else "*"
    chosen = [m for m in MUTANTS if fnmatch.fnmatch(m.name, pattern)]
    try:
        binary = hosts.rlviz_bin()
    except hosts.HostUnavailable as exc:
        print(f"the real RLViz validator is not available: {exc}", file=sys.stderr)
        return 2
    env = fast_python_env()
    work = Path(tempfile.mkdtemp(prefix="mapc-rlviz-mutants-"))
    try:
        start = time.monotonic()
        results = judge(chosen, build_base(work, env), binary, work, env)
        print(agreement_table(chosen, results))
        wrong = [m for m in chosen if results[m.name][0].label() != m.expect]
        for m in wrong:
            print(f"- UNEXPECTED {m.name}: real RLViz {results[m.name][0].label()}, table says {m.expect}")
        print(f"{len(chosen)} mutants in {time.monotonic() - start:.1f} s")
        return 1 if wrong or not all(agree(*results[m.name]) for m in chosen) else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
