"""Where the third-party test data (host fixtures, trace corpus, JMESPath suite) is.

It is vendored in ``tests/data/`` (provenance and licences in
``tests/data/README.md``), so a clone with nothing beside it runs the whole
suite. Only the real hosts of the conformance tests live outside the
repository; ``tests/hosts.py`` finds those.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SHARED = ROOT / "tests" / "data"
CORPUS = SHARED / "corpus"
UPSTREAM = SHARED / "upstream"
RLVIZ_FIXTURES = UPSTREAM / "rlviz" / "fixtures"
