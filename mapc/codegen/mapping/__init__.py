"""Lower the records part of the IR to plain Python mapping functions.

The output reads like the spec: one function per level (run, case, group,
trajectory, events), loops where the spec says ``each``, an if/elif chain for
the event rules, and a comment naming the spec path (and line) above each
piece. Records are handed to an ``emit`` callable as soon as they are built,
so a JSONL source streams with flat memory.

Ids that the spec does not give natively are derived from the source
location (``evt@L12.3`` = line 12, element 3): stable, unique by
construction, and cheap.

The parts: generator.py (the whole spec's facts, ``generate``), levels.py
(``map_source`` and the level functions), loops.py (`each`, `merge`, `carry`),
events.py (the event rules), signals.py (signals and artifacts), fields.py
(values and fields), frame.py (the state passed from call to call).
"""

from mapc.codegen.mapping.fields import json_path_step
from mapc.codegen.mapping.frame import Frame
from mapc.codegen.mapping.generator import MappingGenerator

__all__ = ["Frame", "MappingGenerator", "json_path_step"]
