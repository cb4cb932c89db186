"""The typed intermediate form of a validated spec.

Everything downstream (code generation, targets, review) reads these frozen
dataclasses, never YAML. Each node keeps its spec ``path`` so generated code
can say, in a comment, which spec line it implements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from mapc.core.diagnostics import format_path

PathT = tuple


@dataclass(frozen=True)
class Expr:
    """A JMESPath expression from the spec, compiled."""

    text: str
    path: PathT
    compiled: Any = field(compare=False, repr=False)  # mapc.expressions.CompiledExpression
    line: int = 0  # where the expression starts in its spec file (for comments)
    file: str = ""

    @property
    def where(self) -> str:
        return format_path(self.path)


@dataclass(frozen=True)
class Literal:
    value: Any
    path: PathT


@dataclass(frozen=True)
class ObjectTemplate:
    """A YAML mapping used as a value: builds an object; null members are dropped, except those
    named in ``keep`` (`!keep_nulls`)."""

    items: tuple[tuple[str, "Value"], ...]
    path: PathT
    keep: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArrayTemplate:
    items: tuple["Value", ...]
    path: PathT


Value = Union[Expr, Literal, ObjectTemplate, ArrayTemplate]


#: How ``merge.fields`` combines a field over the lines of one element (docs/spec-reference.md).
MERGE_STRATEGIES = ("first", "last", "max", "min", "sum", "concat", "collect")


@dataclass(frozen=True)
class Merge:
    """`merge` on a loop: the elements that share the key ``by`` (among those ``when`` takes)
    are one element, the first one's object with ``fields`` combined over all of them. Without
    ``by``, a run of consecutive elements ``when`` takes is one element, ended by an element
    ``until`` takes (default: by any element ``when`` does not take)."""

    by: Expr | None
    when: Expr | None
    fields: tuple[tuple[tuple[str, ...], str], ...]  # (field path keys, strategy)
    open: int  # groups open at once
    path: PathT
    until: Expr | None = None


@dataclass(frozen=True)
class CarryValue:
    """One name of `carry` on a loop: ``$carry.<name>`` is the latest non-null ``value`` (of
    the elements ``when`` takes) up to the current element."""

    name: str
    value: Value
    when: Expr | None
    path: PathT


@dataclass(frozen=True)
class Loop:
    each: Expr
    as_name: str | None
    path: PathT
    merge: Merge | None = None
    carry: tuple[CarryValue, ...] = ()


@dataclass(frozen=True)
class SignalSpec:
    name: Value
    value: Value
    unit: Value | None
    metadata: Value | None
    loops: tuple[Loop, ...]
    when: Expr | None
    path: PathT
    event_id: Value | str | None = None  # a trajectory's signal: its event ("last" or a value)
    counter: str = "per_step"  # an event rule's signal: the value is per_step, or cumulative
    total: bool = False  # an event rule's signal: one sum on the trajectory instead


@dataclass(frozen=True)
class ArtifactSpec:
    fields: tuple[tuple[str, Value], ...]  # name, media_type, text/json/path, sha256, metadata
    loops: tuple[Loop, ...]
    when: Expr | None
    path: PathT
    event_id: Value | str | None = None  # a trajectory's artifact: its event ("last" or a value)


#: Semantic event fields: the conversational view RELAI and cap-evolve need.
SEMANTIC_FIELDS = (
    "role",
    "content",
    "reasoning",
    "model",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "arguments",
    "result",
)
#: Canonical event fields a rule may set directly.
CANONICAL_EVENT_FIELDS = (
    "input",
    "output",
    "data",
    "metadata",
    "context",
    "alignment_key",
    "state_hash",
    "branch_id",
)


@dataclass(frozen=True)
class Subtrajectory:
    """`subtrajectory` on an event rule: the file ``path`` names (relative to the source's
    folder), mapped with this spec's trajectory level and events as a child trajectory of the
    event's trajectory, linked to the event (D109)."""

    path: Expr
    at: PathT  # the `subtrajectory` key's spec path


@dataclass(frozen=True)
class EventTemplate:
    kind: str
    when: Expr | None
    id: Value | None
    timestamp: Value | None
    parent: Value | str | None  # "previous", an expression/value, or None (inherit)
    raw: bool | None  # None: inherit from events / targets
    semantic: tuple[tuple[str, Value], ...]
    canonical: tuple[tuple[str, Value], ...]
    signals: tuple[SignalSpec, ...]
    artifacts: tuple[ArtifactSpec, ...]
    path: PathT
    subtrajectory: Subtrajectory | None = None


@dataclass(frozen=True)
class Rule:
    when: Expr | None
    skip: bool
    emits: tuple[EventTemplate, ...]
    path: PathT


@dataclass(frozen=True)
class Scope:
    """What a level iterates and binds."""

    loops: tuple[Loop, ...]
    where: Expr | None
    lets: tuple[tuple[str, Value], ...]
    ordinal_by: Expr | None


@dataclass(frozen=True)
class Level:
    name: str  # run | case | group | trajectory
    scope: Scope
    id: Value | None
    fields: tuple[tuple[str, Value], ...]  # canonical fields other than id
    signals: tuple[SignalSpec, ...]
    artifacts: tuple[ArtifactSpec, ...]
    final_output: Value | None
    declared: bool  # False when the spec omitted the level (defaults apply)
    path: PathT


@dataclass(frozen=True)
class Events:
    scope: Scope
    parent: Value | str | None
    raw: bool
    rules: tuple[Rule, ...]
    path: PathT


@dataclass(frozen=True)
class Probe:
    bytes: int
    lines: int
    require: tuple[tuple[str, ...], ...]  # field paths split into keys
    require_text: tuple[str, ...]
    when: Expr | None
    confidence: float


@dataclass(frozen=True)
class Source:
    format: str
    container: str  # json | jsonl | csv
    probe: Probe
    max_bytes: int
    max_line_bytes: int
    invalid_lines: str
    siblings: tuple[tuple[str, tuple[str, ...]], ...]
    columns: tuple[tuple[str, str], ...] = ()  # csv: typed columns (name, type)
    delimiter: str = ","  # csv

    @property
    def streams_lines(self) -> bool:
        """One value per line (jsonl) or per row (csv), read at the level with `each: "@"`."""
        return self.container in ("jsonl", "csv")


@dataclass(frozen=True)
class FeedbackRule:
    when: Expr | None
    parts: tuple[Union[str, Expr], ...]  # template: text and expressions
    path: PathT


@dataclass(frozen=True)
class Evaluator:
    id: str
    description: str
    low: float
    high: float
    score: Expr
    feedback: tuple[FeedbackRule, ...]
    primary: bool
    direction: str
    weight: float
    path: PathT


@dataclass(frozen=True)
class Task:
    id: str
    description: str | None
    input: Any
    target: Any
    tags: tuple[str, ...]
    split: str | None
    metadata: Any


@dataclass(frozen=True)
class Tasks:
    items: tuple[Task, ...]
    suite_tags: tuple[str, ...]
    path: PathT


@dataclass(frozen=True)
class EnvRequirement:
    name: str
    required: bool
    sensitive: bool
    reason: str


@dataclass(frozen=True)
class FileRequirement:
    path_env: str
    required: bool
    reason: str


@dataclass(frozen=True)
class Agent:
    command: tuple[str, ...] | None
    timeout: float
    trace: str | None
    replay: str | None
    env: tuple[tuple[str, str], ...]
    seed_env: str | None
    prepare: tuple[str, ...] | None
    requires_env: tuple[EnvRequirement, ...]
    requires_files: tuple[FileRequirement, ...]
    path: PathT


@dataclass(frozen=True)
class Fixture:
    path: str  # as written, relative to the spec file
    resolved: str  # absolute path
    min_records: int | None


@dataclass(frozen=True)
class SpecTest:
    """One `tests:` entry of the spec file itself (``mapc test``): a trace to map, or a task
    whose recorded trace is scored, and what is expected of it."""

    name: str
    source: str | None  # the trace as written (relative to the spec), or None
    resolved: str  # absolute path of the trace (for a task: its recorded trace)
    task: str | None  # a task id: an evaluation test
    expected: str | None  # the expected file as written; None: the default name
    expect: Any  # a partial expectation (dict), or None
    path: PathT


@dataclass(frozen=True)
class Spec:
    name: str
    version: str
    description: str
    source: Source
    tables: tuple[tuple[str, Any], ...]
    levels: tuple[Level, ...]  # run, case, group, trajectory (always all four)
    events: Events
    line_level: str | None  # jsonl: the level whose `each: "@"` reads lines
    evaluators: tuple[Evaluator, ...]
    combine: str
    usage: tuple[tuple[str, Expr], ...]
    tasks: Tasks | None
    agent: Agent | None
    fixtures: tuple[Fixture, ...]
    targets: tuple[tuple[str, Any], ...]
    file: str  # spec file as given
    files: tuple[str, ...]  # every file the spec was read from (extends chain)
    digest: str  # SHA-256 of the normalized spec data
    locate: Any = field(default=None, compare=False, repr=False)  # (path, key=False) -> Mark
    locate_in: Any = field(default=None, compare=False, repr=False)  # (path, offset in the value) -> Mark
    tests: tuple[SpecTest, ...] = ()  # `tests:` of the spec file itself (not inherited)
    inputs: tuple[str, ...] = ()  # resolved files the spec reads (tasks file, fixtures): never written

    def diag(self, code: str, path: PathT, message: str, *, hint: str | None = None,
             severity: str = "error", key: bool = False):
        """A diagnostic pointed at ``path`` in the spec file it came from."""
        from mapc.core.diagnostics import Diagnostic

        mark = self.locate(tuple(path), key=key) if self.locate else None
        return Diagnostic(
            code=code,
            message=message,
            severity=severity,
            file=mark.file if mark else self.file,
            line=mark.line if mark else None,
            column=mark.column if mark else None,
            path=format_path(path) or None,
            hint=hint,
        )

    def level(self, name: str) -> Level:
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise KeyError(name)

    def target_option(self, target: str, key: str, default: Any = None) -> Any:
        for name, opts in self.targets:
            if name == target and isinstance(opts, dict):
                return opts.get(key, default)
        return default

    @property
    def subtrajectories(self) -> tuple[Subtrajectory, ...]:
        """Every event rule's `subtrajectory`, in rule order."""
        return tuple(t.subtrajectory for r in self.events.rules for t in r.emits if t.subtrajectory)

    @property
    def primary_evaluator(self) -> Evaluator | None:
        for ev in self.evaluators:
            if ev.primary:
                return ev
        return self.evaluators[0] if self.evaluators else None
