"""Where the shared materials (host fixtures, trace corpus, JMESPath suite) are.

They live next to the repository as ``../shared``. A clone elsewhere can point
at them with ``MAPC_SHARED_DIR``; this machine's copy at /work/shared is the
last resort. Tests fail (never skip) when none is found.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _locate() -> Path:
    candidates = []
    if os.environ.get("MAPC_SHARED_DIR"):
        candidates.append(Path(os.environ["MAPC_SHARED_DIR"]))
    candidates += [ROOT.parent / "shared", Path("/work/shared")]
    for candidate in candidates:
        if (candidate / "corpus").is_dir() and (candidate / "upstream").is_dir():
            return candidate.resolve()
    return candidates[0]


SHARED = _locate()
CORPUS = SHARED / "corpus"
UPSTREAM = SHARED / "upstream"
RLVIZ_FIXTURES = UPSTREAM / "rlviz" / "fixtures"
