"""RLViz plugin manifests: the small YAML subset RLViz reads, and its rules.

RLViz does not use a YAML library. It reads ``rlviz-plugin.yaml`` line by
line: top-level ``key: value`` lines, whole-line ``#`` comments, block lists
of ``- item`` indented with spaces, inline lists only as JSON arrays of
strings, scalars plain, ``"..."`` (JSON escapes) or ``'...'``. Anything else
(nested maps, block scalars, ``---``, tabs, duplicate keys) is an error. This
module parses exactly that subset, so a manifest mapc accepts is one RLViz
can read; a JSON manifest (first character ``{``) is read strictly too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mapc.targets.rlviz.validator import gojson
from mapc.targets.rlviz.validator.gojson import STR, STRS, GoJSONError, Obj, Struct, decode_struct, go_trim_space

API_VERSION = "rlviz.dev/v1alpha1"
MANIFEST_NAMES = (
    "rlviz-plugin.yaml", "rlviz-plugin.yml", "rlviz-plugin.json", "plugin.yaml", "plugin.yml", "plugin.json",
)
KEYS = ("api_version", "kind", "name", "version", "command", "capabilities", "description")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
SEMVER_RE = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)
CAPABILITIES = {"Adapter": ("adapter.probe", "adapter.stream"), "Analyzer": ("analyzer.analyze",)}


class ManifestError(ValueError):
    """The manifest cannot be read or breaks a rule."""


@dataclass(frozen=True)
class Manifest:
    api_version: str = ""
    kind: str = ""
    name: str = ""
    version: str = ""
    command: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    description: str = ""
    path: str = ""


def _go_json(text: str) -> Any:
    """A JSON value as Go's json.Unmarshal reads it (the text's bytes, bad UTF-8 as U+FFFD)."""
    return gojson.parse(text.encode("utf-8", "surrogateescape"))


def _scalar(text: str, line: int) -> str:
    if not text:
        raise ManifestError(f"line {line}: empty string")
    if text[0] == '"':
        try:
            value = _go_json(text)
        except GoJSONError as exc:
            raise ManifestError(f"line {line}: {exc}") from None
        if value is None:
            return ""  # json.Unmarshal of null leaves the string empty
        if not isinstance(value, str):
            raise ManifestError(f"line {line}: json: cannot unmarshal into Go value of type string")
        return value
    if text[0] == "'":
        if len(text) < 2 or text[-1] != "'":
            raise ManifestError(f"line {line}: unterminated quoted string")
        return text[1:-1].replace("''", "'")
    if " #" in text:
        text = text.split(" #", 1)[0]
    return go_trim_space(text)


def parse_simple_yaml(text: str) -> dict[str, str | list[str]]:
    """Parse RLViz's manifest YAML subset into ``{key: str | [str]}`` (trimming as Go's TrimSpace)."""
    result: dict[str, str | list[str]] = {}
    active: str | None = None
    for number, raw in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        line = raw.rstrip(" \t\r")
        stripped = go_trim_space(line)
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent > 0:
            if active is None or not stripped.startswith("- "):
                raise ManifestError(f"line {number}: expected list item")
            items = result[active]
            assert isinstance(items, list)
            items.append(_scalar(go_trim_space(stripped[2:]), number))
            continue
        active = None
        key, sep, value = stripped.partition(":")
        key, value = go_trim_space(key), go_trim_space(value)
        if not sep or not key:
            raise ManifestError(f"line {number}: expected key: value")
        if key in result:
            raise ManifestError(f"line {number}: duplicate field {key!r}")
        if not value:
            result[key] = []
            active = key
        elif value.startswith("["):
            try:
                parsed = decode_struct(_LIST, Obj([("items", _go_json(value))]))
            except GoJSONError:
                raise ManifestError(f"line {number}: inline lists must use JSON string syntax") from None
            result[key] = parsed.get("items", [])
        else:
            result[key] = _scalar(value, number)
    return result


_LIST = Struct("list", {"items": STRS})
_MANIFEST = Struct("Manifest", {"api_version": STR, "kind": STR, "name": STR, "version": STR, "command": STRS,
                                "capabilities": STRS, "description": STR})


def parse_manifest(data: bytes, path: str = "") -> Manifest:
    """Read a manifest file's bytes (YAML subset or strict JSON) as RLViz's ParseManifest does."""
    text = data.decode("utf-8", "surrogateescape")
    trimmed = go_trim_space(text)
    if not trimmed:
        raise ManifestError("manifest is empty")
    if trimmed.startswith("{"):
        document = gojson.go_utf8(trimmed.encode("utf-8", "surrogateescape"))
        try:
            value, end = gojson.scan_value(document)
            fields = decode_struct(_MANIFEST, gojson.fix_surrogates(value))
        except GoJSONError as exc:
            raise ManifestError(f"invalid JSON manifest: {exc}") from None
        if end != len(document):
            raise ManifestError("manifest contains multiple JSON values or trailing data")
        return Manifest(
            api_version=fields.get("api_version", ""), kind=fields.get("kind", ""), name=fields.get("name", ""),
            version=fields.get("version", ""), command=tuple(fields.get("command") or ()),
            capabilities=tuple(fields.get("capabilities") or ()), description=fields.get("description", ""),
            path=path,
        )
    values = parse_simple_yaml(text)
    for key in values:
        if key not in KEYS:
            raise ManifestError(f"unknown manifest field {key!r}")

    def scalar(key: str) -> str:
        value = values.get(key, "")
        return value if isinstance(value, str) else ""  # a list reads as an empty string

    def strings(key: str) -> tuple[str, ...]:
        value = values.get(key, [])
        if not isinstance(value, list):
            raise ManifestError(f"{key} must be a list")
        return tuple(value)

    return Manifest(
        api_version=scalar("api_version"), kind=scalar("kind"), name=scalar("name"),
        version=scalar("version"), command=strings("command"), capabilities=strings("capabilities"),
        description=scalar("description"), path=path,
    )


def check_manifest(m: Manifest) -> None:
    """Apply RLViz's manifest rules; raises :class:`ManifestError` with the first problem."""
    if m.api_version != API_VERSION:
        raise ManifestError(f"api_version must be {API_VERSION!r}")
    if m.kind not in CAPABILITIES:
        raise ManifestError("kind must be Adapter or Analyzer")
    if not NAME_RE.fullmatch(m.name):
        raise ManifestError("name must contain only lowercase letters, digits, '.', '_' or '-'")
    if not SEMVER_RE.fullmatch(m.version):
        raise ManifestError("version must be semantic versioning")
    if not m.command:
        raise ManifestError("command must not be empty")
    if any(not item or "\x00" in item for item in m.command):
        raise ManifestError("command items must be non-empty strings without NUL")
    wanted = CAPABILITIES[m.kind]
    seen: set[str] = set()
    for cap in m.capabilities:
        if cap not in wanted:
            raise ManifestError(f"unsupported capability {cap!r}")
        if cap in seen:
            raise ManifestError(f"duplicate capability {cap!r}")
        seen.add(cap)
    for cap in wanted:
        if cap not in seen:
            raise ManifestError(f"required capability {cap!r} is missing")


def find_manifest(root: Path) -> Path:
    for name in MANIFEST_NAMES:
        candidate = root / name
        if candidate.is_file():
            return candidate
    raise ManifestError(f"no plugin manifest in {root}")


def load_manifest(plugin: str | os.PathLike) -> Manifest:
    """Find, read and check the manifest of a plugin directory (or a manifest file)."""
    path = Path(os.path.realpath(plugin))
    if not path.exists():
        raise ManifestError(f"plugin path does not exist: {plugin}")
    manifest_path = find_manifest(path) if path.is_dir() else path
    if not manifest_path.is_file():
        raise ManifestError("plugin manifest must be a regular file")
    try:
        m = parse_manifest(manifest_path.read_bytes(), str(manifest_path))
        check_manifest(m)
    except ManifestError as exc:
        raise ManifestError(f"{manifest_path}: {exc}") from None
    root = manifest_path.parent
    for arg in m.command:
        if os.path.isabs(arg):
            try:
                resolved = os.path.realpath(arg, strict=True)
            except (OSError, ValueError):
                continue
            if resolved == str(root) or resolved.startswith(str(root).rstrip("/") + "/"):
                raise ManifestError(
                    "plugin command paths inside the plugin must be relative so they can be "
                    f"snapshotted: {arg}"
                )
    return m
