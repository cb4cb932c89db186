"""Project configuration: the builds a repository keeps, so ``mapc build``, ``mapc build
--check``, ``mapc test`` and ``mapc check`` with no spec act on all of them.

Found by walking up from the current folder, the way ruff and black find theirs: in each
folder ``mapc.toml`` (top-level ``[[build]]`` tables) wins over ``pyproject.toml`` (its
``[[tool.mapc.build]]`` tables; a pyproject.toml without ``[tool.mapc]`` is passed over);
the walk stops at the repository root (the folder holding ``.git``). The file is untrusted
input: every path in it is relative to its folder and must stay inside it, and each mistake
is a diagnostic with the file, line and key (``tool.mapc.build[2].target``), never a
traceback (docs/cli.md, D99).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mapc.core.diagnostics import Diagnostic

CONFIG_NAMES = ("mapc.toml", "pyproject.toml")
#: What a ``[[build]]`` table takes; ``allow_read`` is optional.
BUILD_KEYS = ("spec", "target", "output", "allow_read")
#: A configuration file larger than this is refused (a TOML of builds is a few KB).
MAX_CONFIG_BYTES = 1 << 20


class ConfigError(Exception):
    """A configuration file with mistakes; ``diagnostics`` locates each (exit code 2)."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("; ".join(f"{d.location()}: {d.message}" for d in diagnostics))


@dataclass(frozen=True)
class BuildEntry:
    """One ``[[build]]``: its paths resolved against the configuration file's folder (and given
    relative to the current folder, as messages show them)."""

    spec: Path
    target: str
    output: Path
    allow_read: tuple[Path, ...] = ()
    where: str = ""  # "mapc.toml:4" (the table's header), for messages


@dataclass
class Project:
    file: Path  # the configuration file
    root: Path  # its folder: every path in it is relative to this one
    builds: list[BuildEntry] = field(default_factory=list)

    def specs(self) -> list[BuildEntry]:
        """One entry per spec (its first build), for commands that act on specs, not outputs."""
        seen: dict[Path, BuildEntry] = {}
        for build in self.builds:
            seen.setdefault(build.spec, build)
        return list(seen.values())


def repository_root(start: Path | None = None) -> Path:
    """The folder holding ``.git`` at or above ``start`` (default: the current folder), else ``start``."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def find_config(start: Path | None = None) -> Path | None:
    """The configuration file that applies at ``start``: nearest first, up to the repository root."""
    here = (start or Path.cwd()).absolute()
    top = repository_root(here)
    for folder in (here, *here.parents):
        own = folder / "mapc.toml"
        if own.is_file():
            return own
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _declares_mapc(pyproject):
            return pyproject
        if folder == top:
            break
    return None


def _declares_mapc(path: Path) -> bool:
    """Whether a pyproject.toml has a ``[tool.mapc]`` table (one that does not parse but names
    mapc counts: its mistake is then reported with its line)."""
    import tomllib

    try:
        with open(path, "rb") as fh:
            text = fh.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    if "mapc" not in text:
        return False
    try:
        tool = tomllib.loads(text).get("tool")
    except tomllib.TOMLDecodeError:
        return True
    return isinstance(tool, dict) and "mapc" in tool


def load_project(start: Path | None = None) -> Project | None:
    """The project configuration that applies at ``start``, or None when there is none.

    Raises :class:`ConfigError` for a file with mistakes."""
    path = find_config(start)
    return None if path is None else read_config(path)


def read_config(path: Path) -> Project:
    import tomllib

    shown = os.path.relpath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError([Diagnostic("config_unreadable", f"cannot read it: {exc.strerror or exc}", file=shown)])
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError([Diagnostic("config_too_large", f"larger than {MAX_CONFIG_BYTES} bytes", file=shown)])
    try:
        text = data.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise ConfigError([Diagnostic("config_syntax", f"not UTF-8 (byte {exc.start})", file=shown)])
    except tomllib.TOMLDecodeError as exc:
        message, line, column = _toml_error(str(exc))
        raise ConfigError([Diagnostic("config_syntax", f"not valid TOML: {message}", file=shown, line=line,
                                      column=column, hint="see https://toml.io for the syntax")])
    prefix = () if path.name == "mapc.toml" else ("tool", "mapc")
    return _Reader(path, shown, text, prefix).project(doc)


def _toml_error(text: str) -> tuple[str, int | None, int | None]:
    """tomllib's message without its ``(at line L, column C)`` suffix, and L and C."""
    found = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", text)
    if not found:
        return text, None, None
    return text[: found.start()], int(found.group(1)), int(found.group(2))


class _Reader:
    """Checks the parsed document, locating each mistake in the text."""

    def __init__(self, path: Path, shown: str, text: str, prefix: tuple[str, ...]):
        self.path, self.shown, self.prefix = path, shown, prefix
        self.root = path.parent.absolute()
        self.lines = text.splitlines()
        self.diags: list[Diagnostic] = []

    def project(self, doc: dict) -> Project:
        table: Any = doc
        for key in self.prefix:
            table = table.get(key, {}) if isinstance(table, dict) else {}
        where = ".".join(self.prefix)
        if not isinstance(table, dict):
            self.error("config_type", where, f"{where} must be a table")
            table = {}
        for key in table:
            if key != "build":
                self.error("config_unknown_key", self.key_path(key), f"unknown key {key!r}", key=key,
                           hint="the configuration takes `build` tables: [[" + self.key_path("build") + "]]")
        builds = table.get("build", [])
        if not isinstance(builds, list) or not all(isinstance(b, dict) for b in builds):
            self.error("config_type", self.key_path("build"), "must be an array of tables", key="build",
                       hint=f"write each build as a [[{self.key_path('build')}]] table (two brackets)")
            builds = []
        project = Project(self.path, self.root)
        for index, build in enumerate(builds):
            entry = self.build(index, build)
            if entry is not None:
                project.builds.append(entry)
        if not builds and not self.diags:
            self.error("config_no_builds", where or "build", "no builds listed",
                       hint=f"add one: [[{self.key_path('build')}]] with spec, target and output")
        if self.diags:
            raise ConfigError(self.diags)
        return project

    def key_path(self, *parts: str | int) -> str:
        from mapc.core.diagnostics import format_path

        return format_path((*self.prefix, *parts))

    def build(self, index: int, table: dict) -> BuildEntry | None:
        before = len(self.diags)
        for key in table:
            if key not in BUILD_KEYS:
                self.error("config_unknown_key", self.key_path("build", index, key), f"unknown key {key!r}",
                           hint=f"a build takes {', '.join(BUILD_KEYS)}", index=index, key=key)
        values = {}
        for key in ("spec", "target", "output"):
            value = table.get(key)
            if value is None:
                self.error("config_value", self.key_path("build", index, key), f"{key} is missing",
                           hint="a build takes spec, target and output", index=index)
            elif not isinstance(value, str) or not value.strip():
                self.error("config_value", self.key_path("build", index, key),
                           f"{key} must be a non-empty string", index=index, key=key)
            else:
                values[key] = value
        if "target" in values:
            self.check_target(index, values["target"])
        allow = table.get("allow_read", [])
        if isinstance(allow, str):
            allow = [allow]
        if not isinstance(allow, list) or not all(isinstance(a, str) and a.strip() for a in allow):
            self.error("config_value", self.key_path("build", index, "allow_read"),
                       "allow_read must be a folder or a list of folders (strings)", index=index, key="allow_read")
            allow = []
        paths = {key: self.contained(index, key, values[key]) for key in ("spec", "output") if key in values}
        reads = tuple(self.contained(index, "allow_read", a) for a in allow)
        if len(self.diags) > before:
            return None
        if not paths["spec"].is_file():
            self.error("config_missing_spec", self.key_path("build", index, "spec"),
                       f"spec {values['spec']!r} not found",
                       hint="paths in the configuration are relative to its folder", index=index, key="spec")
            return None
        return BuildEntry(paths["spec"], values["target"], paths["output"], reads,
                          f"{self.shown}:{self.header_line(index) or 1}")

    def check_target(self, index: int, name: str) -> None:
        from mapc.targets import get_target, target_names

        if get_target(name) is None:
            self.error("config_unknown_target", self.key_path("build", index, "target"),
                       f"unknown target {name!r}", hint=f"known targets: {', '.join(target_names())}",
                       index=index, key="target")

    def contained(self, index: int, key: str, value: str) -> Path:
        """``value`` relative to the configuration's folder; an error when it leads outside."""
        from mapc.core.safeio import within

        path = self.root / value
        if os.path.isabs(value) or not within(os.path.realpath(path), os.path.realpath(self.root)):
            self.error("config_outside", self.key_path("build", index, key),
                       f"{key} {value!r} leads outside the configuration's folder (an absolute path, '..' "
                       "or a symbolic link)", hint="paths in the configuration are relative to its folder "
                       "and stay inside it", index=index, key=key)
        return Path(os.path.relpath(os.path.normpath(path)))  # shown as the user would type it here

    def error(self, code: str, path: str, message: str, *, hint: str | None = None,
              index: int | None = None, key: str | None = None) -> None:
        line = self.key_line(index, key) if index is not None else self.table_line(key)
        self.diags.append(Diagnostic(code, message, file=self.shown, line=line, path=path, hint=hint))

    # -- where in the text ---------------------------------------------------------------------
    def header(self, *names: str) -> re.Pattern:
        """A table header (``[a.b]`` or ``[[a.b]]``) of ``names``, spaces allowed around dots."""
        return re.compile(r"^\s*\[\[?\s*" + r"\s*\.\s*".join(map(re.escape, names)) + r"\s*\]")

    def table_line(self, key: str | None) -> int:
        """The line of ``key`` of the configuration's table (its own header, or ``key =`` in the
        table), else of the table's header, else 1."""
        own = self.header(*self.prefix, key) if key else None
        top = self.header(*self.prefix) if self.prefix else None
        start = 0
        for number, text in enumerate(self.lines, 1):
            if own is not None and own.match(text):
                return number
            if top is not None and top.match(text) and not start:
                start = number
        return (self.line_in_table(start, key) if key else None) or start or 1

    def header_line(self, index: int) -> int | None:
        """The line of the ``index``-th ``[[...build]]`` header (1-based), if written as one."""
        pattern = self.header(*self.prefix, "build")
        found = [n for n, text in enumerate(self.lines, 1) if pattern.match(text) and text.lstrip().startswith("[[")]
        return found[index] if index < len(found) else None

    def key_line(self, index: int, key: str | None) -> int | None:
        """The line of ``key`` inside the ``index``-th build table, else of its header."""
        start = self.header_line(index)
        if start is None or key is None:
            return start
        return self.line_in_table(start, key) or start

    def line_in_table(self, start: int, key: str) -> int | None:
        """The line of ``key = ...`` after line ``start`` (a table's header, 0 for the top level),
        before the next table."""
        pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for number in range(start + 1, len(self.lines) + 1):
            text = self.lines[number - 1]
            if text.lstrip().startswith("["):
                return None
            if pattern.match(text):
                return number
        return None
