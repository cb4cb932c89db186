"""``--help`` reads well under the installed Typer: arguments by name (``SPEC``), options
without type metavars. Typer 0.27 and later print ``{spec}`` and ``<bool>`` instead, which
is why pyproject.toml bounds typer below 0.27."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from mapc.cli import app

#: What Typer 0.27+ prints: an argument as ``{spec}``, an option's type as ``<bool>``/``<path>``.
TYPE_METAVAR = re.compile(r"\{[a-z_]+\}|<(?:bool|str|path|int|float|text|integer)>")
COMMANDS = sorted(typer.main.get_command(app).commands)


def help_text(*argv: str) -> str:
    result = CliRunner().invoke(app, [*argv, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_listed():
    assert {"build", "check", "run", "test", "validate", "review", "init"} <= set(COMMANDS)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_has_no_type_metavars(command):
    text = help_text(*([command] if command else []))
    assert "Usage: mapc" in text
    assert TYPE_METAVAR.findall(text) == []


def test_arguments_are_shown_by_name():
    assert re.search(r"Usage: mapc build \[OPTIONS\] \[SPEC\]", help_text("build"))
    assert re.search(r"Usage: mapc run \[OPTIONS\] SPEC SOURCES?\.\.\.", help_text("run"))
