"""Every runtime module's names as one object (``rt.MapState``, ``rt.csv_rows``), for tests that
reach the runtime's units wherever ``mapc/runtime/`` keeps them."""

import types

from mapc.core.runtime_files import namespace

rt = types.SimpleNamespace(**namespace())
