"""The JSON Schema of a mapc spec (format version 1).

Built in Python so shared pieces are written once. ``mapc schema`` prints the
schema of spec *files* (:func:`file_schema`) for editors running
yaml-language-server; the repository ships it as ``specs/spec.schema.json`` and
every bundled spec points at it with a relative modeline.
The schema is the first validation layer; everything it cannot say (expression
syntax, variables in scope, host naming rules, ranges) is checked by
``mapc.spec.semantic``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any

#: An identifier, not a location: editors find the schema through a file path (a modeline).
SCHEMA_ID = "urn:mapc:spec:v1"
#: Where the repository keeps the schema of spec files, relative to the repository root.
SCHEMA_FILE = "specs/spec.schema.json"

EVENT_KINDS = [
    "message",
    "generation",
    "tool",
    "environment_action",
    "observation",
    "state",
    "reward",
    "grader",
    "artifact",
    "error",
    "log",
]
TRAJECTORY_STATUSES = ["running", "completed", "failed", "cancelled"]

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
SEMVER_PATTERN = (
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)
#: A spec names a few fixtures; each is resolved, hashed and copied.
MAX_FIXTURES = 100
VARIABLE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _expr(description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "description": description}


def _value(description: str) -> dict[str, Any]:
    # A value template: a string is a JMESPath expression, a mapping builds an
    # object (null members dropped), a list builds an array, other scalars are
    # literals. Anything is structurally valid; the semantic layer compiles it.
    return {"description": description}


def _obj(properties: dict[str, Any], *, required: list[str] | None = None, description: str = "") -> dict:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    if description:
        schema["description"] = description
    return schema


#: At most this many `carry` names on one loop: one value each is kept while a loop runs.
MAX_CARRY_NAMES = 64
#: At most this many `merge` groups open at once on one loop.
MAX_MERGE_OPEN = 256


def _loop_props() -> dict[str, Any]:
    return {
        "each": {"$ref": "#/$defs/loop_each"},
        "merge": {"$ref": "#/$defs/merge"},
        "carry": {"$ref": "#/$defs/carry"},
        "as": {
            "type": "string",
            "pattern": VARIABLE_PATTERN,
            "description": "Bind the current element to $<as> (and its index to $<as>_index).",
        },
        "where": _expr("Keep only elements for which this expression is truthy."),
        "let": {"$ref": "#/$defs/let"},
        "ordinal_by": _expr(
            "Bind $ordinal: how many earlier elements at this level had the same value "
            "of this expression (0 for the first)."
        ),
    }


def build_schema() -> dict[str, Any]:
    event_id = _value(
        "Trajectory signals and artifacts: the event they belong to: `last` (the trajectory's "
        "last event) or an expression giving the id of one of its events."
    )
    signal_obj = _obj(
        {
            "name": _value("Signal name (expression, or a literal with `'quotes'`)."),
            "value": _value("Signal value: number, string or boolean; null skips the signal."),
            "unit": _value("Optional unit, e.g. 'tokens', 'usd', 'points'."),
            "metadata": _value("Optional metadata object."),
            "each": {"$ref": "#/$defs/each"},
            "as": {"type": "string", "pattern": VARIABLE_PATTERN},
            "when": _expr("Emit the signal only when this is truthy."),
            "event_id": event_id,
            **_counter_props(),
        },
        required=["value"],
        description="One signal, or one per element when `each` is given.",
    )
    signals = {
        "description": (
            "Signals (rewards, grades, pass/fail, cost, tokens, latency). A mapping "
            "`name: value` for the common case, or a list of signal objects."
        ),
        "anyOf": [
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/signal_value"}},
            {"type": "array", "items": {"$ref": "#/$defs/signal"}},
        ],
    }
    artifact = _obj(
        {
            "name": _value("Artifact name."),
            "media_type": _value("Media type, e.g. 'text/x-diff'."),
            "text": _value("Inline text content."),
            "json": _value("Inline JSON content."),
            "path": _value("Source-relative path (never absolute, never `..`)."),
            "sha256": _value("Optional SHA-256 of the content (64 lowercase hex)."),
            "metadata": _value("Optional metadata object."),
            "each": {"$ref": "#/$defs/each"},
            "as": {"type": "string", "pattern": VARIABLE_PATTERN},
            "when": _expr("Emit the artifact only when this is truthy."),
            "event_id": event_id,
        },
        required=["media_type"],
        description="An artifact: exactly one of text, json or path.",
    )
    semantic_fields = {
        "role": _value("Message role (system, user, assistant, tool, ...)."),
        "content": _value("Message text or content parts."),
        "reasoning": _value("Reasoning text of an agent turn."),
        "model": _value("Model that produced this turn."),
        "tool_calls": _value(
            "Array of tool calls, each an object {id, name, arguments}; e.g. "
            "\"tool_calls[].{id: id, name: function.name, arguments: parse_json(function.arguments)}\"."
        ),
        "tool_call_id": _value("For a tool result: the id of the call it answers."),
        "tool_name": _value("For a single tool call event: the tool's name."),
        "arguments": _value("For a single tool call event: its arguments object."),
        "result": _value("For a tool event: its result/output."),
    }
    canonical_event_fields = {
        "id": _value("Native event id; null falls back to a derived stable id."),
        "timestamp": _value("RFC 3339 timestamp (use iso8601() to convert epochs)."),
        "parent": _value("parent_id: `previous` chains to the previous event; else an expression."),
        "input": _value("Canonical `input` (overrides the layout derived from role/content/...)."),
        "output": _value("Canonical `output` (overrides the derived layout)."),
        "data": _value("Canonical `data`."),
        "metadata": _value("Canonical `metadata` object."),
        "context": _value("Canonical `context` object (see the RLViz schema)."),
        "alignment_key": _value("alignment_key (only when the source gives it real meaning)."),
        "state_hash": _value("state_hash."),
        "branch_id": _value("branch_id."),
        "raw": {"type": "boolean", "description": "Copy the source element into `raw`."},
        "signals": signals,
        "artifacts": {"type": "array", "items": {"$ref": "#/$defs/artifact"}},
        "subtrajectory": _obj(
            {"path": _expr("The file, relative to the source's folder (e.g. a subagent's "
                           "transcript); null: none for this event.")},
            required=["path"],
            description="Map the file `path` names as a child trajectory of this event's trajectory "
            "(this spec's trajectory level and events), before this event, linked both ways.",
        ),
    }
    rule = _obj(
        {
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "The rule's name: a spec that extends this one changes, moves or removes "
                "the rule by it (rules merge by name). Not the event id (that is `id`).",
            },
            "before": {"type": "string", "minLength": 1,
                       "description": "extends: put this rule before the inherited rule of this name."},
            "after": {"type": "string", "minLength": 1,
                      "description": "extends: put this rule after the inherited rule of this name."},
            "remove": {"const": True, "description": "extends: remove the inherited rule named by `name`."},
            "when": _expr("Condition; the first rule whose condition holds maps the element."),
            "kind": {"enum": EVENT_KINDS, "description": "Canonical event kind."},
            "skip": {"type": "boolean", "description": "Drop matching elements (no event)."},
            "emit": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/emit"},
                "description": "Several events from one element, in order.",
            },
            **semantic_fields,
            **canonical_event_fields,
        },
        description="A mapping rule: `when` + `kind` + fields, or `skip: true`, or `emit: [...]`.",
    )
    emit = _obj(
        {
            "when": _expr("Emit this event only when this is truthy."),
            "kind": {"enum": EVENT_KINDS},
            **semantic_fields,
            **canonical_event_fields,
        },
        required=["kind"],
    )
    level_common = {
        **_loop_props(),
        "id": _value("Record id: a native id expression; null or absent derives a stable id."),
        "name": _value("Display name."),
        "metadata": _value("Metadata object."),
    }
    events = _obj(
        {
            **_loop_props(),
            "parent": _value("Default parent for all rules: `previous`, or an expression."),
            "raw": {"type": "boolean", "description": "Copy source elements into `raw`."},
            "rules": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/rule"}},
            # single-rule shorthand: the rule fields directly on `events`
            "when": _expr("Shorthand single rule: condition."),
            "kind": {"enum": EVENT_KINDS},
            "skip": {"type": "boolean"},
            "emit": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/emit"}},
            **semantic_fields,
            **{k: v for k, v in canonical_event_fields.items() if k not in ("parent", "raw")},
        },
        description=(
            "Events of each trajectory: iterate `each`, map every element with the first "
            "matching rule. Without `rules`, the fields here form one rule."
        ),
    )
    probe = _obj(
        {
            "bytes": {
                "type": "integer",
                "minimum": 64,
                "maximum": 16777216,
                "description": "Read at most this many bytes (default 65536).",
            },
            "lines": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "description": "jsonl: look at most at this many lines (default 8).",
            },
            "require": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "Field paths that must be present (non-null), e.g. `eval.task`.",
            },
            "when": _expr("Expression that must be truthy on the document (json) or each line (jsonl)."),
            "confidence": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "Confidence reported when the probe matches (default 0.9).",
            },
        },
        description="Bounded recognition rules for `probe`.",
    )
    source = _obj(
        {
            "format": {
                "type": "string",
                "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
                "description": "Format id this adapter reports, e.g. `inspect-ai-eval-log`.",
            },
            "container": {
                "enum": ["json", "jsonl", "csv"],
                "description": (
                    "`json`: one document; `jsonl`: one JSON value per line, streamed; `csv`: a header row, "
                    "then one object per row, streamed. Any of them may be gzipped (read by its magic bytes)."
                ),
            },
            "columns": {
                "type": "object",
                "propertyNames": {"minLength": 1},
                "additionalProperties": {"enum": ["string", "number", "integer", "boolean", "json"]},
                "description": (
                    "csv: the type of a column, by its header name (default `string`); an empty cell of a typed "
                    "column is null, e.g. `{reward: number, done: boolean}`."
                ),
            },
            "delimiter": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1,
                "description": "csv: the field separator (default `,`; `\t` for TSV).",
            },
            "probe": probe,
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "description": "refuse a source larger than this, counted after decompression for a gzip file (default 1 GiB).",
            },
            "max_line_bytes": {
                "type": "integer",
                "minimum": 1,
                "description": "jsonl, csv: refuse lines (csv: rows) longer than this; json: refuse an element of the streamed array, or a member the mapping reads, of more characters (default 64 MiB).",
            },
            "invalid_lines": {
                "enum": ["error", "skip"],
                "description": "jsonl, csv: an undecodable line (csv: a ragged row or a bad typed cell) is an `error` (default) or skipped with a warning.",
            },
            "siblings": {
                "type": "object",
                "propertyNames": {"pattern": VARIABLE_PATTERN},
                "additionalProperties": {"$ref": "#/$defs/sibling"},
                "description": "JSON files next to the source, available as $siblings.<name>.",
            },
        },
        required=["format", "container"],
    )
    sibling = {
        "description": (
            "A sibling file name, or a list of candidates (first existing wins). "
            "`{stem}` is the source name without its last extension, `{prefix}` the part before its first dot, `{name}` the full name."
        ),
        "anyOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        ],
    }
    records = _obj(
        {
            "run": _obj({**level_common, "started_at": _value("RFC 3339 start time.")}),
            "case": _obj({**level_common, "input": _value("The case input (any JSON).")}),
            "group": _obj(level_common),
            "trajectory": _obj(
                {
                    **level_common,
                    "status": _value("One of running, completed, failed, cancelled."),
                    "termination": _value("Why the trajectory ended (string)."),
                    "parent": _value("parent_id: id of an earlier trajectory in the same group."),
                    "branch_id": _value("branch_id."),
                    "final_output": _value("The agent's final answer (RELAI final_output, Rollout.output)."),
                    "signals": signals,
                    "artifacts": {"type": "array", "items": {"$ref": "#/$defs/artifact"}},
                }
            ),
            "events": events,
        },
        description="How source values become canonical records: run > case > group > trajectory > events.",
    )
    feedback_rule = _obj(
        {"when": _expr("Use this text when truthy."), "text": {"type": "string", "minLength": 1}},
        required=["text"],
    )
    evaluator = _obj(
        {
            "id": {"type": "string", "minLength": 1, "description": "Evaluator id (unique)."},
            "description": {"type": "string", "minLength": 1, "description": "What it checks."},
            "range": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 2,
                "maxItems": 2,
                "description": "[min, max] score range (default [0, 1]).",
            },
            "score": _expr("Score expression over the evaluation scope (signals, output, events, task)."),
            "feedback": {
                "description": "Feedback template (`{expr}` placeholders), or a list of {when, text}.",
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "minItems": 1, "items": feedback_rule},
                ],
            },
            "primary": {"type": "boolean", "description": "The headline evaluator."},
            "direction": {"enum": ["higher", "lower"], "description": "Which way is better (default higher)."},
            "weight": {"type": "number", "minimum": 0, "description": "Weight for `reward.combine: weighted`."},
        },
        required=["id", "description", "score"],
    )
    task_item = _obj(
        {
            "id": {"type": ["string", "integer"], "description": "Task id."},
            "description": {"type": "string"},
            "input": {"description": "Task input (any JSON)."},
            "target": {"description": "Gold answer; never shown in feedback."},
            "tags": {"type": "array", "items": {"type": "string"}},
            "split": {"enum": ["train", "val", "test"]},
            "metadata": {"type": "object"},
        },
        required=["id"],
    )
    tasks = {
        "description": "Tasks: an inline list, or {items|from, field expressions, suite_tags}.",
        "anyOf": [
            {"type": "array", "minItems": 1, "items": task_item},
            _obj(
                {
                    "items": {"type": "array", "minItems": 1, "items": task_item},
                    "from": {"type": "string", "minLength": 1, "description": "tasks file (.json array or .jsonl), relative to the spec"},
                    "id": _expr("Task id expression per item (default `id`)."),
                    "input": _expr("Input expression (default `input`)."),
                    "target": _expr("Target expression (default `target`)."),
                    "tags": _expr("Tags expression: array of strings (default `tags`)."),
                    "description": _expr("Description expression (default `description`)."),
                    "split": _expr("Split expression: train, val or test (default `split`)."),
                    "metadata": _expr("Metadata expression (default `metadata`)."),
                    "suite_tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Shared tags added to every task.",
                    },
                }
            ),
        ],
    }
    argv = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}
    agent = _obj(
        {
            "command": {
                **argv,
                "description": "argv run per task (no shell). Placeholders: {task_id} {seed} {candidate} {trace} {input_file} {project_root}.",
            },
            "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds (default 600)."},
            "trace": {"type": "string", "minLength": 1, "description": "Where the run leaves its trace (path template, relative to the project root)."},
            "replay": {"type": "string", "minLength": 1, "description": "A recorded trace per task (path template) instead of running a command."},
            "env": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Extra environment variables (values may use placeholders).",
            },
            "seed_env": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$", "description": "Also pass the seed in this environment variable."},
            "prepare": {**argv, "description": "RELAI: argv run once before the tasks."},
            "requires": _obj(
                {
                    "env": {
                        "type": "array",
                        "items": _obj(
                            {
                                "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
                                "required": {"type": "boolean"},
                                "sensitive": {"type": "boolean"},
                                "reason": {"type": "string", "minLength": 1},
                            },
                            required=["name", "reason"],
                        ),
                    },
                    "files": {
                        "type": "array",
                        "items": _obj(
                            {
                                "path_env": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
                                "required": {"type": "boolean"},
                                "reason": {"type": "string", "minLength": 1},
                            },
                            required=["path_env", "reason"],
                        ),
                    },
                }
            ),
        },
        description="How a task is run: `command` + `trace`, or `replay` of a recorded trace.",
    )
    fixture = {
        "anyOf": [
            {"type": "string", "minLength": 1},
            _obj(
                {
                    "path": {"type": "string", "minLength": 1},
                    "min_records": {"type": "integer", "minimum": 1},
                },
                required=["path"],
            ),
        ]
    }
    test_case = _test_case_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "mapc spec",
        "description": "One mapping spec: source trace format -> canonical records and evaluators.",
        "type": "object",
        "required": ["mapc", "name", "source"],
        "additionalProperties": False,
        "properties": {
            "$schema": {"type": "string"},
            "mapc": {"const": 1, "description": "Spec format version (1)."},
            "name": {
                "type": "string",
                "pattern": NAME_PATTERN,
                "description": "Adapter name: lowercase a-z, 0-9, `-`, `_`; starts with a letter or digit.",
            },
            "version": {"type": "string", "pattern": SEMVER_PATTERN, "description": "Semver, e.g. 0.1.0."},
            "description": {"type": "string", "description": "One or two sentences for reviewers."},
            "extends": {"type": "string", "minLength": 1, "description": "A library spec name or a path to a spec to build on."},
            "source": source,
            "tables": {
                "type": "object",
                "propertyNames": {"pattern": VARIABLE_PATTERN},
                "additionalProperties": {"type": "object"},
                "description": "Lookup tables, available as $tables.<name>.",
            },
            "records": records,
            "evaluators": {"type": "array", "items": evaluator},
            "reward": _obj(
                {
                    "combine": {"enum": ["mean", "primary", "min", "weighted"], "description": "How normalized evaluator scores combine (default mean)."},
                },
                description="cap-evolve: how evaluators combine into one reward in [0, 1].",
            ),
            "usage": _obj(
                {
                    "cost_usd": _expr("Cost in USD over the evaluation scope, e.g. signals.cost_usd."),
                    "tokens": _expr("Token count over the evaluation scope, e.g. signals.total_tokens."),
                },
                description="Where cost and tokens come from (cap-evolve Rollout).",
            ),
            "tasks": tasks,
            "agent": agent,
            "fixtures": {"type": "array", "items": fixture, "maxItems": MAX_FIXTURES, "description": "Small sample traces (relative to the spec) used to test the adapter."},
            "tests": {
                "type": "array",
                "items": test_case,
                "description": "`mapc test` cases besides the fixtures: a trace and its expected records, or a "
                "task's recorded trace and its expected evaluation.",
            },
            "targets": {
                **_obj(
                    {
                        "rlviz": _obj({"raw": {"type": "boolean", "description": "Copy source elements into every event's `raw`."}}),
                        "relai": _obj({"task_tag_prefix": {"type": "string", "description": "Prefix of each task-specific tag."}}),
                        "cap-evolve": _obj({}),
                        "atif": _obj({
                            "agent_name": {"type": "string", "minLength": 1, "description": "ATIF's agent.name (default: the spec's name)."},
                            "agent_version": {"type": "string", "minLength": 1, "description": "ATIF's agent.version (default: the spec's version)."},
                        }),
                    },
                    description="Per-target options.",
                ),
                "additionalProperties": {
                    "type": "object",
                    "description": "Options of a target installed from another package (see docs/targets.md).",
                },
            },
        },
        "$defs": {
            "each": _each(),
            **_stream_defs(),
            "let": {
                "type": "object",
                "propertyNames": {"pattern": VARIABLE_PATTERN},
                "additionalProperties": _value("Expression bound to $<name> for this level and below."),
                "description": "Variables computed once per element of this level.",
            },
            "signal_value": {
                "description": "A value expression, or {value, unit, metadata, when}.",
                "anyOf": [
                    {"type": ["string", "number", "boolean"]},
                    _obj(
                        {
                            "value": _value("Signal value."),
                            "unit": _value("Unit."),
                            "metadata": _value("Metadata."),
                            "when": _expr("Condition."),
                            "event_id": event_id,
                            **_counter_props(),
                        },
                        required=["value"],
                    ),
                ],
            },
            "signal": signal_obj,
            "artifact": artifact,
            "rule": rule,
            "emit": emit,
            "sibling": sibling,
        },
    }



def _counter_props() -> dict[str, Any]:
    """`counter` and `total` of an event rule's signal (issue 27: counters without double counting)."""
    return {
        "counter": {
            "enum": ["per_step", "cumulative"],
            "description": "What the value is: `per_step` (default) this event's own, or `cumulative` a running "
            "total: the signal is then its increase since this signal's last value in the trajectory.",
        },
        "total": {
            "type": "boolean",
            "description": "No signal per event: one signal of this name on the trajectory, after its events, "
            "the sum of the per-event values.",
        },
    }


def _each(item_keys: dict[str, Any] | None = None) -> dict[str, Any]:
    """`each`: an expression, or a list of loops whose items may take ``item_keys`` too."""
    item = {"each": {"type": "string", "minLength": 1}, "as": {"type": "string", "pattern": VARIABLE_PATTERN}}
    return {
        "description": "Iterate: an expression giving an array, or a list of nested loops [{each, as}].",
        "anyOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "minItems": 1, "items": _obj({**item, **(item_keys or {})}, required=["each"])},
        ],
    }


def _stream_defs() -> dict[str, Any]:
    """`$defs` of a level's loops: `each` (a list item may `merge` and `carry`), `merge`, `carry`."""
    carry_value = {
        "description": "An expression, or {value, when}: $carry.<name> is its latest non-null value.",
        "anyOf": [
            {"type": "string", "minLength": 1},
            _obj({"value": {"type": "string", "minLength": 1, "description": "The value to carry."},
                  "when": _expr("Take the value only from the elements for which this is truthy.")},
                 required=["value"]),
        ],
    }
    return {
        "loop_each": _each({"merge": {"$ref": "#/$defs/merge"}, "carry": {"$ref": "#/$defs/carry"}}),
        "merge": _obj(
            {
                "by": _expr("The key: elements with the same key are one element; null: the element stands alone. "
                            "Without it, each run of consecutive elements `when` takes is one element."),
                "when": _expr("Which elements merge (default: every element whose key is not null)."),
                "until": _expr("Without `by`: an element `when` does not take and this does ends the run and "
                               "stands alone; the others wait behind the run (default: every element `when` "
                               "does not take ends it)."),
                "fields": {
                    "type": "object",
                    "propertyNames": {"minLength": 1},
                    "additionalProperties": {"enum": ["first", "last", "max", "min", "sum", "concat", "collect"]},
                    "description": "Field path -> how it combines over the elements: first (non-null), last "
                    "(non-null), max, min, sum (numbers; objects member by member), concat (arrays, texts), "
                    "collect (an array of the values). Other fields are the first element's.",
                },
                "open": {"type": "integer", "minimum": 1, "maximum": MAX_MERGE_OPEN,
                         "description": "How many keys may be open at once (default 1)."},
            },
            description="One element from several: the first one's object with `fields` combined over all.",
        ),
        "carry": {
            "type": "object",
            "propertyNames": {"pattern": VARIABLE_PATTERN},
            "maxProperties": MAX_CARRY_NAMES,
            "additionalProperties": carry_value,
            "description": "$carry.<name>: the latest non-null value up to the current element (model, session "
            "id, turn context seen on an earlier line).",
        },
    }


def _test_case_schema() -> dict[str, Any]:
    """One `tests:` entry (docs/spec-reference.md, "tests"); `mapc.spec.semantic` checks that it
    names exactly one of `source` and `task`, and not both `expected` and `expect`."""
    path = {"type": "string", "minLength": 1}
    counts = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
    kinds = {"type": "array", "items": {"enum": EVENT_KINDS}}
    expect = _obj(
        {
            "counts": {**counts, "propertyNames": {"enum": ["run", "case", "group", "trajectory", "event",
                                                            "signal", "artifact"]},
                       "description": "Number of records per record type."},
            "kinds": {
                "description": "Event kinds in stream order: a list, or trajectory id -> list.",
                "anyOf": [kinds, {"type": "object", "additionalProperties": kinds}],
            },
            "records": {
                "type": "object",
                "additionalProperties": {"type": "object"},
                "description": "Record id -> {field: value}; a field may be a dotted path (output.content).",
            },
            "warnings": {"type": "integer", "minimum": 0, "description": "Number of mapping warnings."},
            "scores": {"type": "object", "additionalProperties": {"type": ["number", "null"]},
                       "description": "Evaluator id -> score (null: the evaluator could not score)."},
            "feedback": {"type": "object", "additionalProperties": {"type": "string"},
                         "description": "Evaluator id -> feedback text."},
            "reward": {"type": "number", "description": "The combined reward in [0, 1] (reward.combine)."},
            "metrics": {"type": "object", "additionalProperties": {"type": "number"},
                        "description": "Metric name -> value (reward, evaluator scores, usage)."},
            "output": {"description": "The trajectory's final output."},
        },
        description="A partial expectation: only what it names is checked.",
    )
    return _obj(
        {
            "name": {"type": "string", "minLength": 1, "description": "How the case is reported."},
            "source": {**path, "description": "A trace to map (relative to the spec)."},
            "task": {"type": ["string", "integer"], "description": "A task id: score its recorded trace."},
            "trace": {**path, "description": "The task's recorded trace (default: agent.replay for the task)."},
            "expected": {**path, "description": "Expected output file (default: <source>.expected.ndjson, "
                         "or <spec stem>.<task>.expected.json); written by `mapc test --update`."},
            "expect": expect,
        },
        description="A `mapc test` case: `source` (records) or `task` (evaluation).",
    )


SCHEMA = build_schema()


def file_schema() -> dict[str, Any]:
    """The schema of a spec *file*, as an editor sees it (``mapc schema``).

    mapc checks the composed spec against :data:`SCHEMA`; a file that ``extends``
    another spec may leave ``source`` to its base, so here ``source`` is required
    only without ``extends``.
    """
    schema = dict(SCHEMA)
    schema["required"] = [key for key in SCHEMA["required"] if key != "source"]
    schema["if"] = {"required": ["extends"]}
    schema["else"] = {"required": ["source"]}
    return schema


def schema_json() -> str:
    """The schema of spec files as pretty, stable JSON text."""
    return json.dumps(file_schema(), indent=2, ensure_ascii=False) + "\n"


def modeline(spec_dir: str | Path, schema_file: str | Path) -> str:
    """The yaml-language-server comment pointing a spec in ``spec_dir`` at ``schema_file``.

    The path is relative to the spec's folder (how yaml-language-server resolves
    it), with forward slashes, so the project can move as a whole.
    """
    rel = os.path.relpath(os.path.abspath(schema_file), os.path.abspath(spec_dir))
    return f"# yaml-language-server: $schema={PurePosixPath(*Path(rel).parts).as_posix()}"
