"""`mapc init --from SAMPLE`: a first spec for a trace, from its structure.

If a bundled library spec recognises the sample (its probe accepts it), the
proposal is a short project spec that `extends` it. Otherwise a spec is
drafted from the sample's profile (:mod:`mapc.analysis.profile`: field paths, JSON
types, array lengths, and the values of discriminator fields such as `type`
or `role` only, unless ``values=False``): a probe from keys present in every
record of the probed prefix, the array that looks most like an event log (and
the arrays beside it) as `records.events`, the rollout around it as a case
with one trajectory, rules per discriminator value (:mod:`mapc.tools.init_rules`)
and reward/score/cost/token fields as signals. Every guess is marked `# TODO`.

The draft lists the sample as its fixture, so `mapc build --target rlviz`
validates it on that very sample. Before returning, the draft is compiled and
its probe and mapping are run on the sample; a probe that would reject the
sample is relaxed until it accepts it.
"""

from __future__ import annotations

import io
import json
import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from mapc.core import fieldpath
from mapc.tools.init_rules import RuleDrafter, q
from mapc.analysis.profile import Profile, ProfileError, profile
from mapc.runtime.sniff import parse_prefix

SAMPLE_BYTES = 256 * 1024  # bound of the profile read
SAMPLE_LINES = 200
PROBE_BYTES = 65536  # the generated probe's default prefix
PROBE_LINES = 8
MAX_SIGNALS = 24
MAX_REQUIRE = 3

# Field names that mark an array of events, and the conversational fields inside.
EVENT_KEYS = frozenset({
    "role", "content", "type", "event", "kind", "timestamp", "message", "text", "action", "observation",
    "tool_calls", "source", "message_type", "created_at", "date", "time", "step_id", "thought", "response",
    "input", "output", "startTime", "start_time", "tool_call_id", "parent_id", "turn_idx", "parts",
})
TASK_ID_KEYS = ("task_id", "example_id", "instance_id", "sample_id", "question_id", "problem_id", "prompt_id", "id")
SIGNAL_RE = re.compile(
    r"(reward|score|correct|accuracy|pass(ed)?$|success|resolved|solved|cost|tokens|latency|duration|_ms$|elapsed)",
    re.IGNORECASE,
)
GENERIC_KEYS = frozenset({"id", "type", "name", "data", "metadata", "value", "info", "extra"})
_NAME_BAD = re.compile(r"[^a-z0-9_-]+")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class InitError(ValueError):
    """The sample cannot be drafted from (a one-line reason)."""


@dataclass
class Draft:
    """A proposed spec: its text, and how it was made."""

    text: str
    library: str | None = None  # the library spec it extends, if any
    notes: list[str] = field(default_factory=list)
    schema: Path | None = None  # the schema file its modeline points at (see mapc.tools.editor)
    placement: object = None  # where its fixture is read from (mapc.tools.init_fixture.Placement)


# -- entry ---------------------------------------------------------------------------
def init_spec(sample: str | Path, *, spec_dir: str | Path = ".", name: str | None = None,
              use_library: bool = True, schema_file: str | Path | None = None, values: bool = True,
              copy_sample: bool = False) -> Draft:
    """Propose a spec for ``sample``; fixture paths are relative to ``spec_dir``.

    Its first line points editors at ``schema_file`` (default: the project's
    ``.mapc/spec.schema.json``, see :func:`mapc.tools.editor.schema_location`).
    ``values`` lets the draft read the values of discriminator fields (``type``,
    ``role``: a few short names) to write one rule per value; without it the
    rules come from the structure alone. ``copy_sample``: the spec will be written, so a sample
    outside ``spec_dir`` is to be copied there (:mod:`mapc.tools.init_fixture`; ``Draft.placement``).
    """
    from mapc.tools.editor import modeline, schema_location

    sample = Path(sample)
    if not sample.exists():
        raise InitError(f"sample not found: {sample}")
    if sample.is_dir():
        raise InitError(f"{sample} is a directory; give one trace file")
    try:
        prof = profile(sample, max_bytes=SAMPLE_BYTES, max_lines=SAMPLE_LINES, values=values)
    except ProfileError as exc:
        raise InitError(str(exc)) from None
    except OSError as exc:
        raise InitError(f"cannot read {sample}: {exc.strerror or exc}") from None
    from mapc.tools.init_fixture import FixtureError, place

    try:
        placement = place(sample, Path(spec_dir), copy=copy_sample)
    except FixtureError as exc:
        raise InitError(str(exc)) from None
    fixture = placement.fixture
    # the draft is checked where its fixture will be: beside a copy of the sample, that is the sample's folder
    check_dir = sample.resolve().parent if placement.copies else Path(spec_dir)
    name = _adapter_name(name or sample.name)
    schema = Path(schema_file) if schema_file is not None else schema_location(spec_dir)
    hint = modeline(spec_dir, schema)
    notes = [placement.note] if placement.note else []
    if use_library:
        from mapc.tools.init_match import match_library

        found = match_library(sample)
        if found is not None:
            return Draft(_extends_text(name, found[0], fixture, sample, hint), library=found[0],
                         notes=[f"the library spec {found[0]!r} recognises this sample"] + notes, schema=schema,
                         placement=placement)
    drafter = _Drafter(sample, prof, name, fixture, check_dir, hint, values)
    draft = drafter.draft()
    draft.schema, draft.placement = schema, placement
    draft.notes += notes
    if prof.invalid_lines:
        draft.notes.append(f"{prof.invalid_lines} line(s) of {sample.name} are not JSON: the adapter skips them "
                           "when mapping, but its probe rejects a file whose first lines are not JSON")
    return draft


def write_spec(text: str, out: Path, *, force: bool = False) -> None:
    """Write ``text`` to ``out`` atomically; never overwrite unless ``force``."""
    out = Path(out)
    if out.is_dir():
        raise InitError(f"{out} is a directory; give a file name such as {out / 'spec.yaml'}")
    if out.exists() and not force:
        raise InitError(f"{out} already exists; choose another name or pass --force to overwrite it")
    from mapc.core import safeio

    safeio.write_text_atomic(text, out)


def next_commands(out: Path | None, placement) -> list[tuple[str, str]]:
    """The commands after `mapc init`, as the user types them from here: (command, why). The
    draft's records become the expected ones only when the user accepts them (`--update`)."""
    import shlex

    spec = Path(out) if out is not None else Path("spec.yaml")
    fixture = os.path.normpath(spec.parent / placement.fixture)
    # a fixture left outside the spec's folder is read when the command allows its folder
    # (`mapc run` has no --allow-read: the variable serves every command alike)
    allow = f"MAPC_ALLOW_READ={shlex.quote(str(placement.allow_read))} " if placement.allow_read else ""
    return [
        (allow + shlex.join(["mapc", "run", str(spec), fixture]), "what the draft maps from the sample: review it"),
        (allow + shlex.join(["mapc", "test", "--update", str(spec)]),
         "accept those records as the expected ones (`mapc test` compares with them after each change)"),
        (allow + shlex.join(["mapc", "build", str(spec), "--target", "rlviz", "-o", "out"]),
         "the RLViz plugin, validated on the sample"),
    ]


# -- text helpers ------------------------------------------------------------------------


def _adapter_name(raw: str) -> str:
    stem = raw.lower()
    stem = stem.removesuffix(".gz")
    for suffix in (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".traj", ".af", ".txt"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    stem = _NAME_BAD.sub("-", stem).strip("-_")
    stem = re.sub(r"-{2,}", "-", stem)[:64].strip("-_")
    return stem or "my-traces"


def _extends_text(name: str, library: str, fixture: str, sample: Path, hint: str) -> str:
    from mapc.spec.library import library_specs
    from mapc.spec.loader import load_file

    loaded, _ = load_file(library_specs()[library])
    description = (loaded.data or {}).get("description", "") if isinstance(loaded.data, dict) else ""
    lines = [
        hint,
        f"# Drafted by `mapc init --from {sample.name}`: the library spec {library!r}",
        "# recognises this sample, so this spec builds on it. Everything it maps is",
        "# inherited (see `mapc specs`); add or override keys here.",
        "mapc: 1",
        f"name: {name}",
        "version: 0.1.0",
        f"description: {q('Traces of ' + name + ', read with the ' + library + ' library spec.')}",
        f"extends: {library}",
        "",
        *textwrap.wrap(f"{library}: {' '.join(str(description).split())}", 76,
                       initial_indent="# ", subsequent_indent="#   "),
        "# Override any part of it here; mappings merge key by key, `key: null`",
        "# removes an inherited key, and evaluators merge by id. For example:",
        "#",
        "# records:",
        "#   trajectory:",
        "#     metadata: {team: \"'my-team'\"}",
        "# evaluators:",
        "#   - id: reward",
        "#     description: The trace's reward",
        "#     score: \"signals.reward\"",
        "",
        "fixtures:",
        f"  - {q(fixture)}    # TODO: replace with a small synthetic sample before sharing",
        "",
    ]
    return "\n".join(lines)


# -- drafting ------------------------------------------------------------------------
def _children(prof: Profile, path: str) -> list[str]:
    return prof.children(path)


def _segment(name: str) -> str:
    """A member name as an expression field (quoted unless a plain identifier)."""
    return fieldpath.key(name)


def _main_type(prof: Profile, path: str) -> str | None:
    shape = prof.fields.get(path)
    if shape is None:
        return None
    ranked = sorted(shape.types.items(), key=lambda kv: (kv[0] == "null", -kv[1], kv[0]))
    return ranked[0][0] if ranked and ranked[0][0] != "null" else None


def _objects_at(prof: Profile, path: str) -> int:
    shape = prof.fields.get(path)
    return shape.types.get("object", 0) if shape else 0


def _always_present(prof: Profile, parent: str, key: str) -> bool:
    """``key`` is present and non-null in every object at ``parent``."""
    shape = prof.fields.get(fieldpath.child(parent, key))
    owners = _objects_at(prof, parent)
    return bool(shape and owners and shape.count - shape.types.get("null", 0) >= owners)


def _hops(array_path: str) -> list[str]:
    """``samples[].events[]`` -> [``samples``, ``events``]; ``a[][]`` -> [``a``, ``@``]."""
    parts = array_path.split("[]")[:-1]
    return [p.lstrip(".") or "@" for p in parts]


class _Drafter:
    def __init__(self, sample: Path, prof: Profile, name: str, fixture: str, spec_dir: Path, hint: str,
                 values: bool = True):
        self.sample, self.prof, self.name, self.fixture, self.spec_dir = sample, prof, name, fixture, spec_dir
        self.hint = hint  # the yaml-language-server modeline
        self.values = values
        self.notes: list[str] = []
        self.stream = self._stream()

    def _stream(self):
        """The reading of an event stream (JSON Lines whose lines say what they are), or None."""
        from mapc.tools.init_stream import StreamDrafter, detect

        if self.prof.container != "jsonl" or not self.values:
            return None
        docs = self.docs()
        key = detect(docs)
        stream = StreamDrafter(docs, key) if key else None
        return stream if stream is not None and stream.nested() else None

    def docs(self) -> list:
        """The sample's documents (json) or lines (jsonl), as far as the profile read them."""
        if self.prof.container == "csv":  # the rows, with the column types the draft declares
            from mapc.analysis.profile import _read
            from mapc.runtime.csv import csv_probe_values

            data, cut = _read(self.sample, SAMPLE_BYTES)
            rows = csv_probe_values(data.decode("utf-8", "ignore"), cut, SAMPLE_LINES, (self.prof.columns, ","))
            return [] if isinstance(rows, str) else rows
        text = self.sample.read_bytes()[:SAMPLE_BYTES].decode("utf-8", "ignore")
        if self.prof.container == "jsonl":
            out = []
            for line in text.split("\n")[:SAMPLE_LINES]:
                try:
                    out.append(json.loads(line))
                except (ValueError, RecursionError):
                    continue
            return out
        try:
            return [parse_prefix(text)[0]]
        except (ValueError, RecursionError):
            return []

    def siblings(self, path: str) -> list[str]:
        """Element paths of ``path`` and of the arrays beside it in the same rollout whose
        elements look alike (``prompt[]`` and ``completion[]``), in conversation order."""
        inner = path[:-2]
        base = inner.rsplit("[]", 1)[0] + "[]" if "[]" in inner else ""
        keys = set(_children(self.prof, path)) & {"role", "content", "type"}
        found = []
        for other, shape in self.prof.fields.items():
            rel = other[len(base):] if other.startswith(base) else None
            if other == path or rel is None or not other.endswith("[]") or "[]" in rel[:-2]:
                continue
            if _objects_at(self.prof, other) and len(keys & set(_children(self.prof, other))) >= 2:
                found.append(other)
        if not found:
            return [path]
        return sorted([path] + found, key=lambda p: (
            not re.search(r"(prompt|input|context|history|question)[^.\[]*\[\]$", p), p))

    # -- structure ---------------------------------------------------------------
    def event_array(self) -> str | None:
        """The array of objects that looks most like an event log, or None."""
        best, best_score = None, 0.0
        for path, shape in self.prof.fields.items():
            if not path.endswith("[]") or not shape.types.get("object"):
                continue
            keys = set(_children(self.prof, path))
            overlap = len(keys & EVENT_KEYS)
            if overlap < 2:
                continue
            parent = self.prof.fields.get(path[:-2])
            length = parent.max_length if parent and parent.max_length else 1
            score = overlap * 10 + min(length, 50) / 10 - path.count("[]") * 3
            if {"action", "observation"} <= keys:
                score += 25  # steps that pair an action with what it observed: the trajectory itself
            if score > best_score:
                best, best_score = path, score
        return best

    # -- pieces -------------------------------------------------------------------
    def probe_lines(self) -> list[str]:
        pre = profile(self.sample, container=self.prof.container, max_bytes=PROBE_BYTES, max_lines=PROBE_LINES,
                      columns=self.prof.columns if self.prof.container == "csv" else None)
        text = self.sample.read_bytes()[:PROBE_BYTES].decode("utf-8", "ignore")
        root_type = _main_type(pre, "")
        if root_type == "object":
            keys = [k for k in _children(pre, "") if _always_present(pre, "", k) and _always_present(self.prof, "", k)]
            specific = [k for k in keys if k not in GENERIC_KEYS] or keys
            specific.sort(key=lambda k: (text.find(json.dumps(k)) if json.dumps(k) in text else len(text), k))
            chosen = specific[:MAX_REQUIRE]
            typed = [(k, _main_type(pre, _segment(k))) for k in chosen]
            when = " && ".join(f"type({_segment(k)}) == '{t}'" for k, t in typed
                               if t and len([x for x in pre.fields[_segment(k)].types if x != "null"]) == 1)
            lines = ["  probe:", "    # TODO: keys present in every record of the sample's first 64 KiB;"
                     " keep the most specific ones"]
            if chosen:
                lines.append(f"    require: [{', '.join(q(_segment(k)) if _segment(k) != k else k for k in chosen)}]")
            else:  # no key common to every record: each record's own kind of key
                when = self.shapes_when()
                lines[1] = "    # TODO: no key is common to every record: each has one of these; make it more specific"
            if when:
                lines.append(f"    when: {q(when)}")
            self.require, self.when = chosen, when
            return lines
        if root_type == "array":
            keys = [k for k in _children(pre, "[]") if _always_present(pre, "[]", k)]
            specific = [k for k in keys if k not in GENERIC_KEYS] or keys
            specific.sort(key=lambda k: (text.find(json.dumps(k)) if json.dumps(k) in text else len(text), k))
            conds = ["type(@) == 'array'"] + [
                f"type([0].{_segment(k)}) == '{_main_type(pre, fieldpath.child('[]', k))}'"
                for k in specific[:MAX_REQUIRE] if _main_type(pre, fieldpath.child("[]", k))
            ]
            self.require, self.when = [], " && ".join(conds)
            return ["  probe:", "    # TODO: an array whose first element has these fields; make it more specific",
                    f"    when: {q(self.when)}"]
        self.require, self.when = [], f"type(@) == '{root_type}'"
        return ["  probe:", "    # TODO: a weak probe: it accepts any value of this type",
                f"    when: {q(self.when)}"]

    def shapes_when(self) -> str:
        """A probe condition for records that share no key: the discriminating field (``type``)
        where a record has one, else the record's first specific key, one alternative each."""
        from mapc.tools.init_rules import TYPE_KEYS

        docs = [d for d in self.docs()[:PROBE_LINES] if isinstance(d, dict)]
        field_ = next((k for k in TYPE_KEYS if sum(isinstance(d.get(k), str) for d in docs) >= 2), None)
        conds: list[str] = [f"type({_segment(field_)}) == 'string'"] if field_ else []
        for doc in docs:
            if field_ and isinstance(doc.get(field_), str):
                continue
            keys = [k for k in doc if doc[k] is not None]
            specific = [k for k in keys if k not in GENERIC_KEYS] or keys
            if specific and f"type({_segment(specific[0])}) != 'null'" not in conds:
                conds.append(f"type({_segment(specific[0])}) != 'null'")
        return " || ".join(conds) or "type(@) == 'object'"

    def signals(self, base: str, exclude: str | None) -> list[str]:
        """Numeric/boolean fields under ``base`` (not inside arrays) whose names look like outcomes."""
        prefix = f"{base}." if base else ""
        out = []
        for path, shape in self.prof.fields.items():
            if not path.startswith(prefix) or path == base:
                continue
            rel = path[len(prefix):]
            if "[" in rel or (exclude and path.startswith(exclude)) or rel.count(".") > 3:
                continue
            names = fieldpath.segments(rel)
            if not all(_IDENT.match(part) for name in names for part in name.split(".")):
                continue  # keys such as model names are data, not fields (`gen_ai.usage.x` is one)
            kind = _main_type(self.prof, path)
            last = names[-1].rsplit(".", 1)[-1]
            if kind in ("number", "boolean") and SIGNAL_RE.search(rel):
                out.append(rel)
            elif kind == "string" and last in ("score", "grade", "value") and SIGNAL_RE.search(rel):
                out.append(rel)  # letter grades and labels are string signals
        return out[:MAX_SIGNALS]

    def event_rules(self, paths: list[str] | None, simple: bool = False, line_sigs: list[str] = ()) -> list[str]:
        """Rules for the elements at ``paths``; without an event array, the line or the document
        is the event (``simple``: one log event per record, the draft of last resort)."""
        if simple:
            return ["    kind: log", "    data: \"@\"          # TODO: the whole record as one event"]
        if paths is None and self.prof.container == "jsonl":
            drafter = RuleDrafter(self.prof, [""], self.docs(), self.values, self._signal_exprs(line_sigs))
            rules = drafter.rules()  # each line is an event
            self.uncarried = [s for s in line_sigs if s.replace('"', "") not in drafter.carried]
            return rules
        if paths is None:
            rewards = [r for r in self.signals("", None) if re.search(r"reward|score", fieldpath.last(r), re.I)]
            if rewards:
                expr = self._field_expr(rewards[0])
                return ["    kind: reward    # TODO: the document holds one outcome, not a list of events",
                        f"    signals: {{reward: {q(expr)}}}"]
            return ["    kind: log",
                    "    data: \"@\"          # TODO: no event array found: the whole record as one event"]
        return RuleDrafter(self.prof, paths, self.docs(), self.values).rules()

    def _field_expr(self, path: str) -> str:
        """The expression reading profile path ``path`` (profile paths are expressions already:
        a key with dots, a csv column's too, is quoted there)."""
        return path

    def task_id(self, base: str) -> str | None:
        """A field naming the task a rollout belongs to, present in every rollout."""
        for key in TASK_ID_KEYS:
            if _always_present(self.prof, base, key) and _main_type(self.prof, fieldpath.child(base, key)) in (
                    "string", "number"):
                return key
        return None

    # -- whole spec ----------------------------------------------------------------
    def draft(self) -> Draft:
        """The fullest draft that works on the sample: with events and signals,
        else without signals, else one event per record."""
        first = None
        for events, signals in ((True, True), (True, False), (False, False)):
            text = self._compose(self.event_array(), signals, simple=not events)
            text, ok, mapping_failed = self._self_check(text)
            first = first or text
            if ok:
                if events and self.stream is not None:
                    self.notes.insert(0, "read as an event stream: " + "; ".join(self.stream.found))
                return Draft(text, None, self.notes)
            if not mapping_failed:
                break  # the probe cannot accept this sample: simpler records would not help
            self.notes.append("simplified: " + ("without signals" if signals else "one event per record"))
        return Draft(first, None, self.notes)

    def _compose(self, events_path: str | None, with_signals: bool, simple: bool = False) -> str:
        prof = self.prof
        if simple:
            events_path = None
        hops = _hops(events_path) if events_path else []
        elem_paths = self.siblings(events_path) if events_path else None
        jsonl = prof.container in ("jsonl", "csv")  # one record per line / row
        lines = [
            self.hint,
            f"# Drafted by `mapc init --from {self.sample.name}` from the sample's structure",
            "# (field paths and types; values only of fields like `type` and `role`, to write",
            "# a rule per value). Lines marked TODO are guesses: check what it maps (`mapc run`),",
            "# accept it (`mapc test --update`), then `mapc build ... --target rlviz -o out`.",
            "mapc: 1",
            f"name: {self.name}",
            "version: 0.1.0",
            f"description: {q('Traces like ' + self.sample.name + ' (drafted by mapc init; TODO: describe them).')}",
            "",
            "source:",
            f"  format: {self.name}",
            f"  container: {prof.container}",
        ]
        if prof.columns:
            lines.append("  columns:    # TODO: the types the sample's cells show; other columns are text")
            lines += [f"    {k if _segment(k) == k else q(k)}: {t}" for k, t in prof.columns.items()]
        if prof.invalid_lines:
            lines.append(f"  invalid_lines: skip    # TODO: {prof.invalid_lines} line(s) of the sample are not JSON")
        lines += self.probe_lines()
        lines += ["", "records:"]
        if self.stream is not None and not simple:  # an event stream: its own reading (mapc.tools.init_stream)
            lines += self.stream.records()
            return "\n".join(lines + self._tail())
        # loops: the line (jsonl), outer arrays (case, trajectory), the event array
        case_loops: list[str] = []
        traj_loop: str | None = None
        if prof.container == "csv":  # a table: each row is an episode with its outcome columns
            traj_loop, event_loops = "@", []
        elif jsonl:
            traj_loop = "@" if hops else None
            event_loops = hops if hops else ["@"]
        else:
            event_loops = hops[-1:] if hops else []
            outer = hops[:-1]
            if outer:
                traj_loop = outer[-1]
                case_loops = outer[:-1]
        line_sigs: list[str] = []  # jsonl, each line an event: signals on the lines that carry them
        if prof.container == "jsonl" and not hops and with_signals:
            found = self.signals("", None)
            if found and all(_always_present(prof, "", rel) for rel in found):
                traj_loop, event_loops = "@", []  # every line has its outcome: a line is a rollout
            else:
                line_sigs = found  # the trajectory sees no line: a reward rule maps them
        # profile path of the trajectory element: "" (the document or line), else
        # the array just outside the event array ("samples[]" for samples[].events[])
        traj_base = ""
        if not jsonl and len(hops) > 1:
            traj_base = events_path.rsplit("[]", 2)[0] + "[]"
        if elem_paths and len(elem_paths) > 1:  # arrays side by side: one conversation
            inner = events_path[:-2]
            prefix = inner.rsplit("[]", 1)[0] + "[]" if "[]" in inner else ""
            names = [p[len(prefix):-2].lstrip(".") for p in elem_paths]
            event_loops = event_loops[:-1] + [f"concat({', '.join(names)})"]
        rollouts = traj_loop is not None and not case_loops  # one case per rollout, as the library does
        if rollouts:
            unit = {"jsonl": "line", "csv": "row"}.get(prof.container, "element")
            lines += ["  case:", f"    each: {q(traj_loop)}    # one case per {unit}; its trajectory below"]
            task = self.task_id(traj_base)
            if task:
                lines.append(f"    id: {_segment(task)}    # TODO: rollouts of the same task share a case")
            traj_loop = None
        if case_loops:
            if len(case_loops) == 1:
                lines += ["  case:", f"    each: {q(case_loops[0])}    # TODO: one case per element?"]
            else:
                lines += ["  case:", "    each:    # TODO: one case per innermost element?"]
                lines += [f"      - {{each: {q(h)}}}" for h in case_loops]
        sigs = self.signals(traj_base, events_path) if with_signals and not line_sigs else []
        if traj_loop or sigs or rollouts:
            lines.append("  trajectory:")
            if traj_loop:
                note = "one trajectory per line" if jsonl else "one trajectory per element"
                lines.append(f"    each: {q(traj_loop)}    # {note}")
            lines.append("    status: \"'completed'\"    # TODO: map the real status if the source has one")
            if sigs:
                lines.append("    signals:    # TODO: fields that look like rewards, scores, costs or tokens")
                used = set()
                for rel in sigs:
                    sname = rel.replace('"', "")
                    if sname in used:
                        continue
                    used.add(sname)
                    expr = self._field_expr(rel)
                    key = sname if re.match(r"^[A-Za-z_][A-Za-z0-9_.]*$", sname) else q(sname)
                    lines.append(f"      {key}: {q(expr)}")
        lines.append("  events:")
        if len(event_loops) == 1:
            lines.append(f"    each: {q(event_loops[0])}")
        elif event_loops:
            lines.append("    each:    # nested arrays: one loop per level")
            lines += [f"      - {{each: {q(h)}, as: level{i}}}" for i, h in enumerate(event_loops)]
        if events_path:
            lines.append("    parent: previous    # TODO: or the field that names each event's parent")
        self.uncarried = line_sigs
        rules = self.event_rules(elem_paths, simple, line_sigs)
        lines += self._with_outcome_rule(rules, self.uncarried)
        return "\n".join(lines + self._tail())

    def _tail(self) -> list[str]:
        """The end of every draft: evaluators to write, the fixture."""
        return [
            "",
            "# TODO: evaluators score one mapped trajectory (RELAI, cap-evolve), e.g.",
            "# evaluators:",
            "#   - id: reward",
            "#     description: The trajectory's reward",
            "#     score: \"signals.reward\"",
            "",
            "fixtures:",
            f"  - {q(self.fixture)}    # TODO: replace with a small synthetic sample before sharing",
            "",
        ]

    def _signal_exprs(self, sigs: list[str]) -> dict[str, str]:
        """Signal name -> expression for the outcome fields ``sigs``."""
        return {rel.replace('"', ""): self._field_expr(rel) for rel in sigs}

    def _with_outcome_rule(self, rules: list[str], sigs: list[str]) -> list[str]:
        """``rules`` with a reward rule for the lines that carry the signal fields ``sigs`` and that
        no rule of a discriminator value takes: just before the last rule when that one matches
        everything (it would hide nothing but the catch-all), else at the end."""
        if not sigs or rules[:1] != ["    rules:"]:
            return rules
        exprs = self._signal_exprs(sigs)
        first = next(iter(exprs.values()))
        body = ", ".join(f"{k if re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', k) else q(k)}: {q(e)}"
                         for k, e in exprs.items())
        when = f"type({first}) != 'null'"
        rule = [f"      - when: {q(when)}    # TODO: other lines that carry the outcome",
                "        kind: reward",
                f"        signals: {{{body}}}"]
        starts = [i for i, line in enumerate(rules) if line.startswith("      - ")]
        last = starts[-1] if starts else len(rules)
        if starts and rules[last].startswith("      - when:"):
            last = len(rules)  # the last rule has a condition: the outcome rule hides nothing after it
        return rules[:last] + rule + rules[last:]

    # -- checking the draft on the sample -------------------------------------------------
    def _self_check(self, text: str) -> tuple[str, bool, bool]:
        """Relax the probe until it accepts the sample: (text, works, failed while mapping)."""
        for _ in range(MAX_REQUIRE + 2):
            ok, problem, probe_ok = _check_draft(text, self.sample, self.spec_dir)
            if ok:
                return text, True, False
            missing = re.search(r"missing required field (.+?) \((?:not|by)", problem or "")
            if missing:  # a later record lacks a key the prefix always had
                relaxed = _ensure_probe(_drop_required(text, missing.group(1)))
            else:
                relaxed = _relax_probe(text) if not probe_ok else text
            if relaxed == text:
                return text, False, probe_ok
            self.notes.append(f"probe relaxed: {problem}")
            text = relaxed
        return text, False, True


def _check_draft(text: str, sample: Path, spec_dir: Path) -> tuple[bool, str | None, bool]:
    """Compile the draft, run its probe and mapping on the sample: (ok, problem, probe ok)."""
    from mapc.core import safeio
    from mapc.pipeline.build import mapping_namespace
    from mapc.spec import load_spec_text

    with safeio.allowing([sample.resolve().parent]):  # the sample the user named
        spec, diags = load_spec_text(text, "<draft>", base_dir=spec_dir)
    if spec is None:
        return False, "; ".join(d.message for d in diags.errors), True
    ns = mapping_namespace(spec)
    answer = ns["probe"](str(sample))
    if not answer.get("supported"):
        return False, answer.get("reason"), False
    out = io.BytesIO()
    try:
        src = ns["SourceFile"](str(sample), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
        ns["write_canonical"](ns["map_source"], src, out, ns["MapState"]())
    except Exception as exc:  # an expression that fails on this data: simplify the draft
        return False, ns["one_line"](exc), True
    return True, None, True


def _drop_required(text: str, key: str) -> str:
    """Remove one key (and its type test) from the probe."""
    out = []
    for line in text.split("\n"):
        if line.startswith("    require: ["):
            keys = [k.strip() for k in line[len("    require: ["):-1].split(",") if k.strip()]
            keys = [k for k in keys if (json.loads(k) if k.startswith('"') else k) != key]
            if not keys:
                continue
            line = f"    require: [{', '.join(keys)}]"
        elif line.startswith("    when: ") and f"type({key})" in line:
            continue
        out.append(line)
    return "\n".join(out)


def _ensure_probe(text: str) -> str:
    """A probe left with nothing to check (its last key dropped) is null, which does not load:
    give it the weakest condition, said as such."""
    lines = text.split("\n")
    if "  probe:" not in lines:
        return text
    at = lines.index("  probe:") + 1
    body = at
    while body < len(lines) and lines[body].startswith("    "):
        body += 1
    if any(ln.startswith(("    require:", "    when:")) for ln in lines[at:body]):
        return text
    return "\n".join(lines[:body] + ["    when: \"type(@) == 'object'\"    # TODO: a weak probe: no key is "
                                    "common to every record"] + lines[body:])


def _relax_probe(text: str) -> str:
    """Drop the probe's `when`, then its last required key."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("    when: ") and i > 0 and any(ln.startswith("  probe:") for ln in lines[:i]):
            if any(ln.startswith("    require: ") for ln in lines):
                return "\n".join(lines[:i] + lines[i + 1:])
    for i, line in enumerate(lines):
        if line.startswith("    require: [") and "," in line:
            inner = line[len("    require: ["):-1].rsplit(",", 1)[0]
            return "\n".join(lines[:i] + [f"    require: [{inner}]"] + lines[i + 1:])
    return text
