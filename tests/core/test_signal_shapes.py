"""Every shape of signal, wherever signals may be, compiles and maps the signals it says.

Issue 27's second defect: a `when:` on an event rule's signal gave `internal error
(NameError): name 'tid' is not defined`, because the code generator picks a path per shape
(fused into `events.put`, a table, `event_signal`, `put_signal_with`, the long form) and one
of them named a variable only another path defines. So this test does not trust any path:
it writes specs over the combinations of signal keys (form, name, value, unit, metadata,
`when`, `each`, `as`, `event_id`) x the places signals go (a trajectory; an event from the
`events` shorthand, a rule, an `emit` entry; an event with an artifact; one whose signals
read `$event`) x the containers (json, jsonl), maps a small trace with each, with and
without the semantic views RELAI and cap-evolve read, and compares the signals with what
the spec says, computed here in Python (ids aside). A table gives every key alone at every
place; hypothesis then mixes several signals of any shapes (MAPC_FUZZ_EXAMPLES runs more).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

import mapc
from mapc.pipeline.build import mapping_namespace

FUZZ = os.environ.get("MAPC_FUZZ_EXAMPLES")  # more examples, as the security fuzzers take

#: The elements a signal's context is (json: the document's `rows`; jsonl: the lines).
ROWS = [
    {"i": i, "v": v, "u": "tok", "m": {"k": i}, "nm": "dyn", "first": f"s-{i}-0",
     "items": [{"x": x, "u": "tok", "m": {"k": 10 * x}, "nm": f"it{x}", "first": f"s-{i}-1"} for x in (1, 2)],
     "steps": [{"sid": f"s-{i}-{j}"} for j in (0, 1)]}
    for i, v in enumerate([1, None, 3])
]
PLACES = ("trajectory", "events", "rule", "emit", "with-artifact", "reads-event")
KEYS = {  # every key's choices; the first is "absent" (or the plainest)
    "form": ("full", "short", "list"),
    "name": ("literal", "expression"),
    "value": ("plain", "comparison"),
    "unit": (None, "literal", "expression"),
    "metadata": (None, "object", "expression"),
    "when": (False, True),
    "each": (None, "each", "each-as"),
    "event_id": (None, "last", "expression"),
}


def normalized(shape: dict, place: str) -> dict:
    """``shape`` made writable: a short form has a literal name and a plain value only; a
    computed name and `each` are for the list form; `event_id` only on a trajectory."""
    shape = {key: shape.get(key, KEYS[key][0]) for key in KEYS}
    if shape["form"] == "short":
        shape = {key: KEYS[key][0] for key in KEYS} | {"form": "short"}
    if shape["form"] != "list":  # a mapping's key is the name; `each` makes a list of signals
        shape["name"], shape["each"] = "literal", None
    if place != "trajectory":
        shape["event_id"] = None
    return shape


def signal_yaml(k: int, shape: dict) -> tuple[str, object]:
    """The spec text of signal ``n<k>`` of ``shape``: (its name, its mapping or list entry)."""
    looped = shape["each"] is not None
    on = f"$it{k}." if shape["each"] == "each-as" else ""  # the element, by its `as` name or as @
    value = f"{on}x" if looped else "v"
    body: dict = {"value": f"{value} > `0`" if shape["value"] == "comparison" else value}
    if shape["form"] == "short":
        return f"n{k}", body["value"]
    if looped:
        body["each"] = "items"
        if shape["each"] == "each-as":
            body["as"] = f"it{k}"  # (an `as` name is bound once in a spec)
    if shape["unit"] == "literal":
        body["unit"] = "'tok'"
    elif shape["unit"] == "expression":
        body["unit"] = f"{on}u"
    if shape["metadata"] == "object":
        body["metadata"] = {"k": f"{on}m.k"}
    elif shape["metadata"] == "expression":
        body["metadata"] = f"{on}m"
    if shape["when"]:
        body["when"] = f"{on}x != `1`" if looped else "v != `null`"
    if shape["event_id"] == "last":
        body["event_id"] = "last"
    elif shape["event_id"] == "expression":
        body["event_id"] = f"{on}first"
    if shape["form"] == "list":
        body["name"] = f"'n{k}'" if shape["name"] == "literal" else f"join('-', ['n{k}', {on}nm])"
    return f"n{k}", body


def signals_yaml(shapes: list[dict], place: str):
    entries = [signal_yaml(k, shape) for k, shape in enumerate(shapes)]
    listed = any(shape["form"] == "list" for shape in shapes)
    if place == "reads-event":
        entries.append(("ev", {"name": "'ev'", "value": "$event.id"} if listed else "$event.id"))
    if listed:
        return [body if isinstance(body, dict) and "name" in body else
                {"name": f"'{name}'", **(body if isinstance(body, dict) else {"value": body})}
                for name, body in entries]
    return dict(entries)


def spec_text(shapes: list[dict], place: str, container: str) -> str:
    each = "rows" if container == "json" else "@"
    signals = signals_yaml(shapes, place)
    event_id = "join('-', ['e', to_string(i)])"
    if place == "trajectory":
        records = {"trajectory": {"each": each, "id": "join('-', ['t', to_string(i)])", "signals": signals},
                   "events": {"each": "steps", "id": "sid", "kind": "log"}}
    else:
        event = {"kind": "log", "id": event_id, "signals": signals}
        if place == "with-artifact":
            event["artifacts"] = [{"text": "'a'", "media_type": "'text/plain'"}]
        if place == "rule":
            events = {"each": each, "rules": [{"when": "nm == 'dyn'", **event}, {"kind": "message"}]}
        elif place == "emit":
            first = {"kind": "log", "id": "join('-', ['f', to_string(i)])"}
            events = {"each": each, "rules": [{"emit": [first, event]}]}
        else:
            events = {"each": each, **event}
        records = {"events": events}
    spec = {"mapc": 1, "name": "signal-shapes",
            "source": {"format": "shapes", "container": container, "probe": {"require": ["i"]}},
            "records": records}
    if container == "json":
        spec["source"]["probe"] = {"require": ["rows"]}
    return yaml.safe_dump(spec, sort_keys=False)


def expected(shapes: list[dict], place: str) -> list[tuple]:
    """(owner, event_id, name, value, unit, metadata) of every signal the spec makes."""
    out = []
    for row in ROWS:
        owner = f"t-{row['i']}" if place == "trajectory" else f"e-{row['i']}"
        for k, shape in enumerate(shapes):
            for el in row["items"] if shape["each"] else [row]:
                plain = el["x"] if shape["each"] else el["v"]
                if shape["when"] and (el["x"] == 1 if shape["each"] else el["v"] is None):
                    continue
                value = plain if shape["value"] == "plain" or plain is None else plain > 0
                if value is None:
                    continue
                name = f"n{k}-{el['nm']}" if shape["name"] == "expression" else f"n{k}"
                unit = "tok" if shape["unit"] else None
                metadata = {"k": el["m"]["k"]} if shape["metadata"] else None
                event = {None: None, "last": f"s-{row['i']}-1", "expression": el["first"]}[shape["event_id"]]
                if place != "trajectory":
                    event = owner
                out.append((owner, event, name, value, unit, metadata))
        if place == "reads-event":
            out.append((owner, owner, "ev", owner, None, None))
    return sorted(out, key=repr)


def mapped(records: list[dict], place: str) -> list[tuple]:
    out = []
    for r in records:
        if r["record_type"] == "signal":
            owner = r["trajectory_id"] if place == "trajectory" else r["event_id"]
            out.append((owner, r.get("event_id"), r["name"], r["value"], r.get("unit"), r.get("metadata")))
    return sorted(out, key=repr)


def check(shapes: list[dict], place: str, container: str, folder: Path) -> None:
    shapes = [normalized(shape, place) for shape in shapes]
    spec = folder / "spec.yaml"
    spec.write_text(spec_text(shapes, place, container))
    trace = folder / f"trace.{container}"
    trace.write_text(json.dumps({"rows": ROWS}) if container == "json" else
                     "".join(json.dumps(row) + "\n" for row in ROWS))
    loaded = mapc.load_spec(spec)  # raises SpecError with the diagnostics
    result = mapc.run(loaded, trace)
    assert result.ok and result.error is None and result.warnings == 0, (result.error, result.warning_messages,
                                                                          spec.read_text())
    want = expected(shapes, place)
    assert mapped(result.records, place) == want, spec.read_text()
    # the program RELAI and cap-evolve run: the semantic views besides
    ns = mapping_namespace(loaded.ir, semantics=True)
    src = ns["SourceFile"](str(trace), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
    records, st = ns["collect_records"](ns["map_source"], src)
    assert st.warnings == 0 and mapped(records, place) == want, spec.read_text()


def one_key_at_a_time() -> list[tuple[str, dict]]:
    """Every choice of every key, the other keys at their first choice, in the mapping form
    and in the list form."""
    out = []
    for key, choices in KEYS.items():
        for choice in choices[1:]:
            out.append((f"{key}={choice}", {key: choice}))
            if key != "form":
                out.append((f"list-{key}={choice}", {"form": "list", key: choice}))
    out.append(("when+each-as+metadata+unit", {"when": True, "each": "each-as", "metadata": "object",
                                               "unit": "expression"}))
    return out


@pytest.mark.parametrize("container", ["json", "jsonl"])
@pytest.mark.parametrize("place", PLACES)
def test_every_signal_key_alone_at_every_place(place, container, tmp_path):
    for label, shape in one_key_at_a_time():
        folder = tmp_path / label
        folder.mkdir()
        check([shape], place, container, folder)


def test_the_expected_signals_are_not_trivial():
    """The oracle itself: a `when` drops the null row, `each` makes one signal per item, a
    name expression differs per item (so a test that maps nothing could not pass)."""
    plain = normalized({}, "events")
    assert [s[2:4] for s in expected([plain], "events")] == [("n0", 1), ("n0", 3)]
    looped = normalized({"each": "each-as", "when": True, "form": "list", "name": "expression"}, "rule")
    assert expected([looped], "rule") == [(f"e-{i}", f"e-{i}", "n0-it2", 2, None, None) for i in range(3)]


SHAPE = hs.fixed_dictionaries({key: hs.sampled_from(choices) for key, choices in KEYS.items()})


@settings(max_examples=int(FUZZ) if FUZZ else 40, deadline=None, suppress_health_check=list(HealthCheck))
@given(shapes=hs.lists(SHAPE, min_size=1, max_size=4), place=hs.sampled_from(PLACES),
       container=hs.sampled_from(["json", "jsonl"]))
def test_any_mix_of_signal_shapes_maps_what_it_says(shapes, place, container):
    with tempfile.TemporaryDirectory(prefix="mapc-signal-shapes-") as folder:
        check(shapes, place, container, Path(folder))
