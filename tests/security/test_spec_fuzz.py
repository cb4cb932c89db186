"""Fuzzed specs never make mapc raise: every input gives output or located diagnostics.

Three generators feed the spec front end (``mapc.spec.load_spec_text`` / ``load_spec``):

- random text built from YAML punctuation, odd unicode and control characters;
- random YAML documents whose keys come from the spec schema (so the schema and
  semantic layers, not just the YAML parser, see them);
- mutations of the real specs in ``examples/`` and ``specs/``: a key deleted, a
  value of the wrong type, a huge or deeply nested value, odd unicode, a typo in a
  key, a list where a mapping belongs, ...

For every input: no exception escapes, and every diagnostic has a code, a message
and (when it is about the spec text) a line and column. A mutated spec that is
still valid is checked by each target and rendered; every generated ``.py`` must
compile and its mapping program must map the spec's fixtures without an internal
error. The command line (``mapc check --json``, ``mapc build``) is driven in
process on the same inputs: exit 0 or 1 with JSON output, never code 2.

Default runs are short; ``MAPC_FUZZ_EXAMPLES=2000`` (see docs/security.md) runs longer.
"""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapc.core.diagnostics import Diagnostics
from mapc.spec import load_spec, load_spec_text
from mapc.spec.schema import SCHEMA
from security_support import check_diagnostics, copy_seed_tree, examples, seed_specs

FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


# --- inputs ----------------------------------------------------------------------------------
def _schema_keys() -> list[str]:
    """Every property name the spec schema knows (so random documents reach deep layers)."""
    keys: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            keys.update(node.get("properties", {}))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(SCHEMA)
    return sorted(keys)


SCHEMA_KEYS = _schema_keys()
ODD_STRINGS = [
    "", " ", "\t", "'", '"', "`", "\\", "{", "}", "{{", "}}", "{%", "%}", "${x}", "$", "$source", "$nope",
    "@", "[", "]", "&", "!", "|", "*", ">", "#", ": ", "- ", "---", "...", "\n", "\r\n", "\x00", "\x1b[31m",
    "\u2028", "\u2029", "\ufeff", "\u202e", "e\u0301", "\U0001f642", "\x7f", "\x85", "𝔘𝔫𝔦", "..", "../x",
    "/etc/passwd", "C:\\x", "__import__('os')", "'; import os #", '"""', "'''", "\\N{BULLET}", "\\x00",
    "None", "True", "null", "yes", "no", "on", "0x1F", "1e400", ".nan", ".inf", "-.inf", "0o17", "~",
    "a" * 300, "{task_id}", "{unknown}", "{{task_id}}", "to_string(@)", "length(@)", "[?a == `1`]",
]
ODD_NUMBERS = [0, -1, 1, 2 ** 31, 2 ** 64, -(2 ** 63), 10 ** 30, 0.5, -0.0, 1e308, 1e-308,
               float("inf"), float("-inf"), float("nan")]

scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from(ODD_NUMBERS), st.integers(), st.floats(allow_nan=True),
    st.sampled_from(ODD_STRINGS), st.text(max_size=20), st.sampled_from(SCHEMA_KEYS),
)
keys = st.one_of(st.sampled_from(SCHEMA_KEYS), st.sampled_from(SCHEMA_KEYS), st.sampled_from(ODD_STRINGS),
                 st.text(max_size=10))
documents = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=5)),
    max_leaves=40,
)
spec_like = st.fixed_dictionaries(
    {"mapc": st.sampled_from([1, 1, 1, 2, "1", None])},
    optional={
        "name": st.one_of(st.sampled_from(["x", "my-agent", "Bad Name", "../up", ""]), scalars),
        "source": st.one_of(
            st.fixed_dictionaries({"format": st.sampled_from(["f", "a b", ""]), "container": st.sampled_from(
                ["json", "jsonl", "xml"])}, optional={"probe": documents, "siblings": documents}), documents),
        "records": st.one_of(st.dictionaries(st.sampled_from(
            ["run", "case", "group", "trajectory", "events"]), documents, max_size=5), documents),
        "evaluators": documents, "tasks": documents, "agent": documents, "tables": documents,
        "fixtures": documents, "targets": documents, "usage": documents, "reward": documents,
    },
)

FRAGMENTS = ["mapc: 1\n", "name: x\n", "source:\n", "  format: f\n", "  container: jsonl\n", "records:\n",
             "  events: {each: '@', kind: log}\n", "- ", ": ", "&a ", "*a ", "!!python/object:os.system ",
             "!!binary ", "<<: *a\n", "? ", "| \n", "> \n", "{", "}", "[", "]", ",", "'", '"', "#", "\t",
             "\n", "  ", "%YAML 1.1\n", "---\n", "...\n", "\ufeff", "\x00", "\x85", "\u2028", "é", "🙂"]
yaml_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=40).map("".join)


def _dump(data) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=4096)


def _assert_clean(spec, diags: Diagnostics, file: str) -> None:
    check_diagnostics(diags, spec_file=file)
    if spec is None:
        assert diags.errors, "no spec and no error"
    else:
        assert diags.ok


# --- random text and random documents --------------------------------------------------------
@settings(max_examples=examples(150), **FUZZ)
@given(text=yaml_text)
def test_random_yaml_text_gives_diagnostics_not_exceptions(text):
    spec, diags = load_spec_text(text, file="fuzz.yaml")
    _assert_clean(spec, diags, "fuzz.yaml")


@settings(max_examples=examples(150), **FUZZ)
@given(data=st.one_of(spec_like, spec_like, documents))
def test_random_documents_give_diagnostics_not_exceptions(data):
    try:
        text = _dump(data)
    except yaml.YAMLError:  # e.g. a key PyYAML cannot write
        return
    spec, diags = load_spec_text(text, file="fuzz.yaml")
    _assert_clean(spec, diags, "fuzz.yaml")


# --- mutations of real specs ------------------------------------------------------------------
def _paths(root, max_depth=40):
    """Every node's path, breadth first, not below ``max_depth`` (a mutation may nest 200 deep)."""
    out = []
    queue = collections.deque([((), root)])
    while queue:
        prefix, node = queue.popleft()
        out.append(prefix)
        if len(prefix) >= max_depth:
            continue
        if isinstance(node, dict):
            queue.extend((prefix + (k,), v) for k, v in node.items())
        elif isinstance(node, list):
            queue.extend((prefix + (i,), v) for i, v in enumerate(node))
    return out


def _get(node, path):
    for p in path:
        node = node[p]
    return node


def _set(root, path, value):
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _deep(kind: str, depth: int):
    node = "x"
    for i in range(depth):
        node = [node] if kind == "list" else {f"k{i % 3}": node}
    return node


def _mutate(data, rng: random.Random):
    """One random mutation of ``data`` (in place where possible); returns the new root."""
    paths = list(_paths(data))
    path = rng.choice(paths)
    value = _get(data, path)
    choice = rng.randrange(14)
    if choice == 0 and path:  # delete
        parent = _get(data, path[:-1])
        del parent[path[-1]]
        return data
    if choice == 1:  # wrong type
        return _set(data, path, rng.choice([None, True, 0, 1.5, "text", [], {}, [value], {"value": value}]))
    if choice == 2:  # odd string
        return _set(data, path, rng.choice(ODD_STRINGS))
    if choice == 3:  # odd number
        return _set(data, path, rng.choice(ODD_NUMBERS))
    if choice == 4:  # huge value
        return _set(data, path, rng.choice(["x" * 200_000, list(range(5000)), {f"k{i}": i for i in range(2000)}]))
    if choice == 5:  # deep nesting
        return _set(data, path, _deep(rng.choice(["list", "dict"]), rng.choice([10, 60, 200])))
    if choice == 6 and isinstance(value, dict) and value:  # a typo in a key, or an unknown key
        key = rng.choice(list(value))
        new = rng.choice([str(key)[:-1] or "x", str(key) + "s", str(key).upper(), "unknown_key", "\u00e9" + str(key)])
        value[new] = value.pop(key)
        return data
    if choice == 7 and isinstance(value, str):  # damage an expression or template
        cut = rng.randrange(len(value) + 1)
        junk = rng.choice(["'", '"', "`", "(", ")", "[", "]", "{", "}", "|", "&", "$", "\\", "\x00", "\u2028"])
        return _set(data, path, value[:cut] + junk + value[cut:])
    if choice == 8 and isinstance(value, list) and value:  # duplicate or drop list items
        if rng.random() < 0.5:
            value.append(value[rng.randrange(len(value))])
        else:
            del value[rng.randrange(len(value)):]
        return data
    if choice == 9 and isinstance(value, dict):  # a mapping turned into a list of its values
        return _set(data, path, list(value.values()))
    if choice == 10:  # a schema key with a random value
        target = value if isinstance(value, dict) else data
        if isinstance(target, dict):
            target[rng.choice(SCHEMA_KEYS)] = rng.choice(ODD_STRINGS + [None, 1, [], {}])
        return data
    if choice == 11 and len(paths) > 2:  # swap two subtrees
        other = rng.choice(paths)
        if other and path and other[: len(path)] != path and path[: len(other)] != other:
            a, b = _get(data, path), _get(data, other)
            data = _set(data, path, b)
            return _set(data, other, a)
        return data
    if choice == 12:  # a string in odd unicode
        return _set(data, path, "".join(rng.choice("aé\u0301\u202e\u2028\U0001f642\x7f\ufeff") for _ in range(8)))
    return data


@pytest.fixture(scope="module")
def seed_tree(tmp_path_factory) -> dict[Path, Path]:
    return copy_seed_tree(tmp_path_factory.mktemp("seeds"))


def _seed_data(copy: Path):
    return yaml.safe_load(copy.read_text(encoding="utf-8"))


# 50 a run (each renders all three targets, ~0.4 s); MAPC_FUZZ_EXAMPLES runs more
@settings(max_examples=examples(50), **FUZZ)
@given(index=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32), rounds=st.integers(1, 4))
def test_mutated_real_specs_give_output_or_located_diagnostics(seed_tree, index, seed, rounds):
    originals = sorted(seed_tree)
    copy = seed_tree[originals[index % len(originals)]]
    rng = random.Random(seed)
    data = _seed_data(copy)
    for _ in range(rounds):
        data = _mutate(data, rng)
    try:
        text = _dump(data)
    except (yaml.YAMLError, RecursionError):
        return
    path = copy.parent / f".fuzz-{copy.name}"
    path.write_text(text, encoding="utf-8")
    try:
        spec, diags = load_spec(path)
        _assert_clean(spec, diags, str(path))
        if spec is not None:
            _render_every_target(spec, path)
    finally:
        path.unlink()


def _render_every_target(spec, path: Path) -> None:
    """A valid spec: each target's rules give diagnostics or files; generated Python compiles and
    its mapping program maps the fixtures without an internal error."""
    from mapc.pipeline.build import output_files, run_mapping
    from mapc.targets import get_target

    for name in ("rlviz", "relai", "cap-evolve"):
        target = get_target(name)
        diags = target.check(spec)
        check_diagnostics(diags)
        if any(d.is_error for d in diags):
            continue
        out = path.parent / f".fuzz-out-{name}"
        files = output_files(spec, target, out).files
        for rel, data in files.items():
            if rel.endswith(".py"):
                compile(data, rel, "exec")
    import io

    for fx in spec.fixtures:
        ok, error, _ = run_mapping(spec, Path(fx.resolved), io.BytesIO())
        assert ok or not error.startswith("internal error"), (path.name, fx.path, error)


# --- the command line, in process -------------------------------------------------------------
def _cli(args):
    from typer.testing import CliRunner

    from mapc.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


@settings(max_examples=examples(40), **FUZZ)
@given(data=st.one_of(spec_like, documents), text=yaml_text, use_text=st.booleans())
def test_check_json_reports_diagnostics_never_an_internal_error(tmp_path_factory, data, text, use_text):
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "spec.yaml"
    if use_text:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    else:
        try:
            path.write_text(_dump(data), encoding="utf-8")
        except yaml.YAMLError:
            return
    result = _cli(["check", "--json", path])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1), result.output
    payload = json.loads(result.stdout)
    assert payload.get("code") != "internal", payload
    assert payload["ok"] == (result.exit_code == 0)
    for d in payload["diagnostics"]:
        assert d["code"] and d["message"], d


@pytest.mark.parametrize("seed", range(3))
def test_cli_builds_mutated_specs_that_check_or_reports_why(seed_tree, tmp_path, seed):
    """Mutated real specs through `mapc check --json` and, when they pass, `mapc build` for every
    target: exit 0 or 1, never the internal-error exit 2."""
    rng = random.Random(1000 + seed)
    built = 0  # specs built (for every target), at most two per seed
    for original in sorted(seed_tree):
        copy = seed_tree[original]
        data = _seed_data(copy)
        data = _mutate(data, rng)
        try:
            text = _dump(data)
        except (yaml.YAMLError, RecursionError):
            continue
        path = copy.parent / f".fuzz-cli-{copy.name}"
        path.write_text(text, encoding="utf-8")
        try:
            check = _cli(["check", "--json", path])
            assert check.exit_code in (0, 1), (original.name, check.output)
            assert json.loads(check.stdout).get("code") != "internal"
            if check.exit_code == 0 and built < 2:
                for target in ("rlviz", "relai", "cap-evolve"):
                    out = tmp_path / f"{copy.parent.name}-{target}"
                    result = _cli(["build", path, "--target", target, "-o", out, "--no-validate", "--json"])
                    assert result.exit_code in (0, 1), (original.name, target, result.output)
                    payload = json.loads(result.stdout)
                    assert payload.get("code") != "internal", payload
                    if result.exit_code == 0:
                        for rel in payload["files"]:
                            if rel.endswith(".py"):
                                compile((out / rel).read_bytes(), rel, "exec")
                built += 1
        finally:
            path.unlink()
    assert built >= 1, "some mutated specs still pass `mapc check` and are built"


def test_seed_specs_themselves_load_cleanly():
    """The starting points are valid specs (otherwise mutations test nothing deep)."""
    for path in seed_specs():
        spec, diags = load_spec(path)
        assert spec is not None, [d.format() for d in diags]

