"""Manifest subset parser, manifest rules and the plugin digest."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from mapc.targets import get_target
from mapc.targets.rlviz.validator.digest import DigestError, content_digest
from mapc.targets.rlviz.validator.manifest import (
    ManifestError, check_manifest, load_manifest, parse_manifest, parse_simple_yaml,
)
from shared_paths import RLVIZ_FIXTURES

FIXTURES = RLVIZ_FIXTURES
GOOD = """api_version: rlviz.dev/v1alpha1
kind: Adapter
# a comment line
name: customer-x
version: 0.1.0
command:
  - python3
  - adapter.py
capabilities:
  - adapter.probe
  - adapter.stream
"""


def test_documented_manifest_parses():
    m = parse_manifest(GOOD.encode())
    check_manifest(m)
    assert (m.name, m.command, m.capabilities) == ("customer-x", ("python3", "adapter.py"),
                                                   ("adapter.probe", "adapter.stream"))


def test_protocol_fixture_manifest_as_json_passes():
    m = parse_manifest((FIXTURES / "protocol" / "plugin-manifest.json").read_bytes())
    check_manifest(m)
    assert m.description == "Example source-specific adapter"


@pytest.mark.parametrize("text,message", [
    (GOOD + "name: again\n", "duplicate field"),
    (GOOD + "extra: 1\n", "unknown manifest field"),
    (GOOD + "description: |\n  block scalar\n", "expected list item"),
    (GOOD.replace("command:\n", "command:\n  nested: map\n"), "expected list item"),
    (GOOD + "description: x\n  - stray item after a scalar\n", "expected list item"),
    ("---\n" + GOOD, "expected key: value"),
    (GOOD.replace("command:\n  - python3\n  - adapter.py\n", "command: ['python3', 'adapter.py']\n"),
     "inline lists must use JSON string syntax"),
    (GOOD + "description: 'unterminated\n", "unterminated"),
    ("", "manifest is empty"),
])
def test_yaml_outside_rlviz_subset_is_rejected(text, message):
    with pytest.raises(ManifestError, match=message):
        parse_manifest(text.encode())


@pytest.mark.parametrize("edit,message", [
    (("api_version: rlviz.dev/v1alpha1", "api_version: rlviz.dev/v1"), "api_version"),
    (("kind: Adapter", "kind: Viewer"), "kind"),
    (("name: customer-x", "name: Customer X"), "name"),
    (("version: 0.1.0", "version: 1.0"), "semantic"),
    (("  - adapter.stream\n", ""), "required capability"),
    (("  - adapter.stream\n", "  - adapter.stream\n  - adapter.stream\n"), "duplicate capability"),
    (("  - adapter.stream\n", "  - analyzer.analyze\n"), "unsupported capability"),
])
def test_manifest_rules(edit, message):
    with pytest.raises(ManifestError, match=message):
        check_manifest(parse_manifest(GOOD.replace(*edit).encode()))


def test_scalar_forms():
    values = parse_simple_yaml("a: plain # comment\nb: \"json \\\"q\\\" \\u00e9\"\nc: 'it''s'\nd: [\"x\", \"y\"]\n")
    assert values == {"a": "plain", "b": 'json "q" é', "c": "it's", "d": ["x", "y"]}


@pytest.mark.parametrize("description", [
    "plain",
    "with: colon and # hash",
    'quotes " and \\ backslash',
    "line one\nline two\ttab",
    "unicode ✓ \u2028 and control \x01",
    "- looks like a list item",
])
def test_rendered_manifest_round_trips_any_description(description):
    text = get_target("rlviz").render_template("rlviz-plugin.yaml.j2", plugin_name="x-1", version="1.2.3-rc.1",
                                               description=description)
    m = parse_manifest(text.encode())
    check_manifest(m)
    assert (m.name, m.version, m.description) == ("x-1", "1.2.3-rc.1", description)


def test_absolute_command_inside_plugin_is_refused(tmp_path):
    (tmp_path / "adapter.py").write_text("")
    manifest = GOOD.replace("  - adapter.py", f"  - {tmp_path / 'adapter.py'}")
    (tmp_path / "rlviz-plugin.yaml").write_text(manifest)
    with pytest.raises(ManifestError, match="must be relative"):
        load_manifest(tmp_path)


def _plugin(root: Path) -> Path:
    root.mkdir()
    (root / "rlviz-plugin.yaml").write_text(GOOD)
    (root / "adapter.py").write_text("print('hi')\n")
    (root / "testdata").mkdir()
    (root / "testdata" / "cases.json").write_text("{}")
    return root


def _reference_digest(files: dict[str, bytes], extra: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name, data in sorted({**files, **extra}.items()):
        h.update(f"{len(name.encode())}:{name}:".encode() + data)
    return h.hexdigest()


def test_digest_follows_rlviz_definition(tmp_path):
    root = _plugin(tmp_path / "p")
    python = Path(shutil.which("python3")).resolve()
    expected = _reference_digest(
        {"rlviz-plugin.yaml": GOOD.encode(), "adapter.py": b"print('hi')\n", "testdata/cases.json": b"{}"},
        {f"@command/0/{python.as_posix()}": python.read_bytes()},
    )
    assert content_digest(root, ("python3", "adapter.py")) == expected


def test_digest_changes_with_any_file_and_ignores_vcs_metadata(tmp_path):
    root = _plugin(tmp_path / "p")
    command = ("python3", "adapter.py")
    first = content_digest(root, command)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / ".DS_Store").write_bytes(b"\0")
    assert content_digest(root, command) == first
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "adapter.pyc").write_bytes(b"\0")
    assert content_digest(root, command) != first
    shutil.rmtree(root / "__pycache__")
    (root / "testdata" / "cases.json").write_text("{ }")
    assert content_digest(root, command) != first


def test_digest_refuses_symlinks_out_of_the_plugin(tmp_path):
    root = _plugin(tmp_path / "p")
    (tmp_path / "secret").write_text("x")
    (root / "link").symlink_to(tmp_path / "secret")
    with pytest.raises(DigestError, match="escapes"):
        content_digest(root, ("python3", "adapter.py"))


def test_generated_manifests_are_valid(built):
    for name, (plugin, _) in built.items():
        m = load_manifest(plugin)
        assert m.name == json.loads(json.dumps(m.name))
        assert (m.kind, m.command, m.capabilities) == ("Adapter", ("python3", "adapter.py"),
                                                       ("adapter.probe", "adapter.stream"))


# -- what the real RLViz does that a Python reading would not (tests/conformance checks them against it) ------
@pytest.mark.parametrize("line,name", [
    ("name: customer-x   ", "customer-x"),  # spaces are trimmed
    ("name: customer-x\u00a0", "customer-x"),  # so is U+00A0 (Go's TrimSpace)
    ("name: customer-x\x1f", "customer-x\x1f"),  # U+001F is not: Python's strip() would take it
    ('name: "customer-x\\n"', "customer-x\n"),
])
def test_manifest_values_are_trimmed_as_rlviz_trims_them(line, name):
    m = parse_manifest(GOOD.replace("name: customer-x", line).encode())
    assert m.name == name
    if name != "customer-x":
        with pytest.raises(ManifestError, match="name must contain only"):  # $ does not match before \n
            check_manifest(m)


@pytest.mark.parametrize("description,expected", [
    ("description:\n", ""),  # an empty value opens a list; RLViz reads a list as an empty string
    ('description: ["a"]\n', ""),
    ("description: caf\xe9\n", "caf\udce9"),  # not UTF-8: kept as RLViz keeps the bytes
])
def test_description_forms_rlviz_accepts(description, expected):
    m = parse_manifest(GOOD.encode() + description.encode("latin-1"))
    check_manifest(m)
    assert m.description == expected


def test_json_manifest_keys_match_case_insensitively_and_null_is_empty():
    doc = {"API_VERSION": "rlviz.dev/v1alpha1", "Kind": "Adapter", "name": "x", "version": "0.1.0",
           "command": ["python3", "adapter.py"], "capabilities": ["adapter.probe", "adapter.stream"],
           "description": None}
    m = parse_manifest(json.dumps(doc).encode())
    check_manifest(m)
    assert (m.api_version, m.kind, m.description) == ("rlviz.dev/v1alpha1", "Adapter", "")
    with pytest.raises(ManifestError, match="unknown field"):
        parse_manifest(json.dumps(dict(doc, homepage="x")).encode())


def test_a_git_symlink_is_not_skipped_like_a_git_folder(tmp_path):
    root = _plugin(tmp_path / "p")
    (root / ".git").symlink_to(root / "testdata")
    with pytest.raises(DigestError, match="symlinked plugin directories"):
        content_digest(root, ("python3", "adapter.py"))


def test_digest_orders_names_as_bytes(tmp_path):
    root = _plugin(tmp_path / "p")
    names = ["caf\udce9.txt", "\u00e9.txt", "Z.txt", "z.txt"]  # one name is not UTF-8
    for name in names:
        (root / name).write_text(name.encode("utf-8", "surrogateescape").hex())
    python = Path(shutil.which("python3")).resolve()
    h = hashlib.sha256()
    files = {n.encode("utf-8", "surrogateescape"): (root / n).read_bytes() for n in names}
    files.update({b"rlviz-plugin.yaml": GOOD.encode(), b"adapter.py": b"print('hi')\n",
                  b"testdata/cases.json": b"{}", f"@command/0/{python}".encode(): python.read_bytes()})
    for name in sorted(files):
        h.update(b"%d:%s:" % (len(name), name) + files[name])
    assert content_digest(root, ("python3", "adapter.py")) == h.hexdigest()
