"""Which spec node, and so which spec line, produced a field of a canonical record.

The record's spec node comes from ``origins`` (the rule, signal or artifact that
emitted it) or, for a record only the expected side has, from its type and kind
or name. Within the node the field is looked up in the IR: level fields, an
event's canonical fields, or the semantic field that the layout put at that place
(``output.content`` of a generation is the rule's ``content``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mapc.core.diagnostics import format_path
from mapc.spec import ir

LEVELS = ("run", "case", "group", "trajectory")


@dataclass(frozen=True)
class Place:
    path: str  # spec path, e.g. records.events.rules[0].content
    file: str
    line: int

    def to_dict(self) -> dict:
        return {"spec_path": self.path, "file": self.file, "line": self.line}


class Locator:
    def __init__(self, spec: ir.Spec):
        self.spec = spec
        self._templates = {format_path(t.path): t for r in spec.events.rules for t in r.emits}
        self._signals: dict[str, tuple[ir.SignalSpec, tuple]] = {}
        self._artifacts: dict[str, ir.ArtifactSpec] = {}
        owners = [lv for lv in spec.levels] + list(self._templates.values())
        for owner in owners:
            for sig in owner.signals:
                self._signals[format_path(sig.path)] = sig
            for art in owner.artifacts:
                self._artifacts[format_path(art.path)] = art

    # -- entry ------------------------------------------------------------------------
    def place(self, record: dict, field: tuple = (), origin: str | None = None) -> Place | None:
        """Where ``field`` of ``record`` was made (the record's node for ``()``)."""
        path = self._path(record, tuple(field), origin)
        return place_of(self.spec, path) if path is not None else None

    def _path(self, record: dict, field: tuple, origin: str | None):
        rt = record.get("record_type")
        if rt in LEVELS:
            return self._level_path(self.spec.level(rt), field)
        if rt == "event":
            tpl = self._templates.get(origin) if origin else None
            tpl = tpl or self._template_by_kind(record.get("kind"))
            return self._event_path(tpl, field) if tpl else self.spec.events.path
        if rt == "signal":
            sig = self._signals.get(origin) if origin else None
            sig = sig or next((s for s in self._signals.values() if _literal(s.name) == record.get("name")), None)
            return self._signal_path(sig, field) if sig else None
        if rt == "artifact":
            art = self._artifacts.get(origin) if origin else None
            art = art or next((a for a in self._artifacts.values()
                               if _literal(dict(a.fields).get("name")) == record.get("name")), None)
            return _in_fields(art.fields, field, art.path) if art else None
        return None

    # -- per record type --------------------------------------------------------------
    def _level_path(self, lv: ir.Level, field: tuple):
        if not lv.declared:
            return ("records",) if lv.name != "run" else None
        if field[:1] == ("id",):
            if lv.id is not None:
                return _value_path(lv.id, ())
            return lv.scope.loops[0].each.path if lv.scope.loops else lv.path
        return _in_fields(lv.fields, field, lv.path)

    def _template_by_kind(self, kind) -> ir.EventTemplate | None:
        return next((t for t in self._templates.values() if t.kind == kind), None)

    def _event_path(self, tpl: ir.EventTemplate, field: tuple):
        ev = self.spec.events
        head = field[:1]
        if not field:
            return tpl.path
        if head == ("kind",):
            return tpl.path + ("kind",)
        if head == ("id",):
            if tpl.id is not None:
                return _value_path(tpl.id, ())
            return ev.scope.loops[0].each.path if ev.scope.loops else ev.path
        if head == ("parent_id",):
            parent = tpl.parent if tpl.parent is not None else ev.parent
            if isinstance(parent, (ir.Expr, ir.Literal, ir.ObjectTemplate, ir.ArrayTemplate)):
                return parent.path
            return (tpl.path if tpl.parent is not None else ev.path) + ("parent",)
        if head == ("timestamp",) and tpl.timestamp is not None:
            return _value_path(tpl.timestamp, ())
        canonical = dict(tpl.canonical)
        if field[0] in canonical:
            return _value_path(canonical[field[0]], field[1:])
        semantic = self._semantic_field(tpl, field)
        if semantic is not None:
            return _value_path(dict(tpl.semantic)[semantic], field[2:])
        if head in (("sequence",), ("trajectory_id",), ("source",), ("raw",)):
            return ev.scope.loops[0].each.path if ev.scope.loops else ev.path
        return tpl.path

    @staticmethod
    def _semantic_field(tpl: ir.EventTemplate, field: tuple) -> str | None:
        """The semantic field (role, content, ...) the default layout put at ``field``."""
        from mapc.codegen.mapping import MappingGenerator

        sem = dict(tpl.semantic)
        layout = MappingGenerator._layout(tpl.kind, sem)
        where = layout.get(field[0])
        if isinstance(where, str):  # the whole member is one field: output = result
            var = where
        elif isinstance(where, tuple) and len(field) > 1:
            var = dict(where).get(field[1])
        else:
            return None
        name = var[2:] if var else None
        return name if name in sem else None

    @staticmethod
    def _signal_path(sig: ir.SignalSpec, field: tuple):
        head = field[0] if field else None
        value = {"value": sig.value, "unit": sig.unit, "metadata": sig.metadata, "name": sig.name,
                 "event_id": sig.event_id if not isinstance(sig.event_id, str) else None}.get(head)
        if value is not None:
            return _value_path(value, field[1:])
        return sig.path


def written(spec: ir.Spec, path: tuple) -> bool:
    """Whether the spec (or a spec it extends) writes ``path`` itself."""
    loaded = getattr(spec.locate, "__self__", None)
    return loaded is not None and (tuple(path) in loaded.values or tuple(path) in loaded.keys)


def place_of(spec: ir.Spec, path: tuple) -> Place | None:
    """The spec line of ``path``, or of its nearest ancestor the spec file writes (a default
    that the spec leaves out has no line of its own); None for the document itself."""
    path = tuple(path)
    while path and not written(spec, path):
        path = path[:-1]
    if not path or spec.locate is None:
        return None
    mark = spec.locate(path)
    return Place(format_path(path), mark.file, mark.line)


def _literal(value) -> object:
    return value.value if isinstance(value, ir.Literal) else None


def _value_path(value, rest: tuple) -> tuple:
    """The path of ``value``, or of its member at ``rest`` when it is an object template."""
    path = value.path
    while rest and isinstance(value, ir.ObjectTemplate):
        sub = dict(value.items).get(rest[0])
        if sub is None:
            break
        value, path, rest = sub, sub.path, rest[1:]
    return path


def _in_fields(fields, field: tuple, default: tuple) -> tuple:
    if field:
        value = dict(fields).get(field[0])
        if value is not None:
            return _value_path(value, field[1:])
    return default
