"""The compile-time state of the code being written, passed along as an object.

jinja2's code generator passes a ``Frame`` to each ``visit_*`` method instead of keeping
what the current block knows on ``self``; the mapping generator does the same. A frame
says, for the level function or rule being written, which variable holds the element,
which its location, how deep its loops are, and what the code above proved. A level
hands the frame of the level below to :meth:`MappingGenerator.generate` (what it proved
of the element it passes down, whether a loop above carries values); a rule gets a copy
with the field its condition tested.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class Frame:
    """Where the code being written stands (one level function, or one rule of the events)."""

    #: the variable that holds the element being mapped, and the one with its location
    el: str = "element"
    loc: str = "location"
    #: loops open in this function: 0 means `return` leaves it, else `continue`
    depth: int = 0
    #: the level above proved the element an object (its required-field test)
    known_object: bool = False
    #: a loop above (or outside) the one being written carries values (``s["carry"]``)
    carrying: bool = False
    #: level_events: the source of the trajectory's id (a variable, or ``traj["id"]``)
    tid: str = "tid"
    #: the field the current rule's condition compared with a text (held in ``tested``)
    matched: tuple | None = None

    @property
    def looped(self) -> bool:
        return self.depth > 0

    def but(self, **changes) -> Frame:
        """This frame with ``changes`` (a frame is never changed in place)."""
        return dataclasses.replace(self, **changes)
