"""Which spec node emitted a record: read back from the generated code's own mentions.

Generated mapping code names the spec path of what it implements (comments such
as ``# records.events.rules[2] (line 47): when ...`` and strings such as
``'records.trajectory.signals.reward.value'``); ``mapc explain`` reads the same
mentions. A record emitted at a line is attributed to the nearest mention before
that line, in the same function, of a node that makes records of its type.
"""

from __future__ import annotations

import bisect
import re

from mapc.tools.explain import mentions

_RULE = r"records\.events\.rules\[\d+\](?:\.emit\[\d+\])?"
_OWNER = rf"(?:records\.(?:run|case|group|trajectory)|{_RULE})"
_PATTERNS = {
    "event": re.compile(_RULE),
    "signal": re.compile(rf"{_OWNER}\.signals(?:\.[^.\[\]]+|\[\d+\])"),
    "artifact": re.compile(rf"{_OWNER}\.artifacts(?:\.[^.\[\]]+|\[\d+\])"),
}


class Origins:
    """Spec paths by (function, line) of the generated mapping program."""

    def __init__(self, program_text: str):
        self._by_function: dict[str, list[tuple[int, str]]] = {}
        for path, hits in mentions("(mapping)", program_text).items():
            for _, line, function in hits:
                self._by_function.setdefault(function, []).append((line, path))
        for hits in self._by_function.values():
            hits.sort()

    def of(self, record_type: str, function: str, line: int) -> str | None:
        """The spec path (``records.events.rules[1]``) of the node that emitted a record, or None."""
        pattern = _PATTERNS.get(record_type)
        hits = self._by_function.get(function)
        if pattern is None or not hits:
            return None
        i = bisect.bisect_right(hits, (line, "\uffff"))
        while i > 0:
            i -= 1
            m = pattern.match(hits[i][1])
            if m:
                return m.group(0)
        return None
