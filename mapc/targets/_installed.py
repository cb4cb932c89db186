"""Targets of installed packages (the ``mapc.targets`` entry points), loaded one at a time,
only when named, and isolated from mapc: a package that raises, calls ``sys.exit`` or hangs
at import is reported in one line naming its distribution and entry point, never stops a
command that does not use it, and never stops one that does without saying why (D89).

Listing the entry points reads package metadata only; nothing is imported until a command
asks for that target by name (``mapc targets`` and ``mapc runtime`` ask for all of them).
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, field

ENTRY_POINT_GROUP = "mapc.targets"
#: How long loading one package target may take (seconds); the environment variable overrides it.
LOAD_TIMEOUT = 10.0
LOAD_TIMEOUT_ENV = "MAPC_TARGET_LOAD_TIMEOUT"
_MESSAGE_CHARS = 200  # of a package's own text (an exception message) in a diagnostic


def printable(text: object, limit: int = _MESSAGE_CHARS) -> str:
    """A package's text on one line: whitespace collapsed, control characters escaped (no
    terminal escape sequences from a plugin), at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    safe = "".join(c if c.isprintable() else repr(c)[1:-1] for c in flat)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


@dataclass(frozen=True)
class EntryPoint:
    """One ``mapc.targets`` entry point, as its distribution's metadata declares it."""

    name: str
    value: str
    distribution: str  # "name version", or "an unknown distribution"
    loader: object = field(compare=False, repr=False)  # importlib.metadata's, to import it

    def describe(self) -> str:
        return f"target {self.name!r} of {self.distribution} (entry point {self.name} = {self.value})"


@functools.cache
def entry_points() -> tuple[dict[str, list[EntryPoint]], str | None]:
    """The installed entry points by target name (metadata only: nothing is imported), and why
    the metadata could not be read, if it could not. Read once per process."""
    from importlib.metadata import entry_points as all_entry_points

    try:
        found = sorted(all_entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value))
    except Exception as exc:  # a malformed dist-info must not stop mapc either
        return {}, f"the installed packages' entry points cannot be read ({type(exc).__name__}: {printable(exc)})"
    by_name: dict[str, list[EntryPoint]] = {}
    for ep in found:
        dist = getattr(ep, "dist", None)
        origin = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
        by_name.setdefault(ep.name, []).append(EntryPoint(ep.name, printable(ep.value), printable(origin), ep))
    return by_name, None


def load_timeout() -> float:
    raw = os.environ.get(LOAD_TIMEOUT_ENV, "")
    try:
        return float(raw) if raw and float(raw) > 0 else LOAD_TIMEOUT
    except ValueError:
        return LOAD_TIMEOUT


def load(entries: list[EntryPoint], builtin: bool):
    """``(Target or None, problem or None)`` for the entry points named like one target."""
    first = entries[0]
    if builtin:
        return None, f"{first.describe()} cannot be used: a built-in target has that name (it is not imported)"
    if len(entries) > 1:
        listed = "; ".join(f"{e.distribution} ({e.name} = {e.value})" for e in entries)
        return None, (f"target {first.name!r} cannot be used: {len(entries)} installed packages provide it "
                      f"({listed}); uninstall all but one")
    timeout = load_timeout()
    outcome: dict[str, object] = {}
    worker = threading.Thread(target=_load_into, args=(first, outcome), name=f"mapc-target-{first.name}",
                              daemon=True)
    worker.start()
    # A real Ctrl-C arrives in this (the main) thread and interrupts the wait: mapc stops.
    worker.join(timeout)
    if worker.is_alive():
        return None, (f"{first.describe()} cannot be used: loading it did not finish in {timeout:g} s (a hang "
                      f"at import?); fix or uninstall the package, or set {LOAD_TIMEOUT_ENV} to wait longer")
    if "problem" in outcome:
        return None, f"{first.describe()} cannot be used: {outcome['problem']}"
    target = outcome["target"]
    target.origin = first.distribution
    return target, None


def _load_into(entry: EntryPoint, outcome: dict) -> None:
    """Import the entry point and check it is a target, in the loading thread. Whatever the
    package raises stays here, as a problem: ``SystemExit`` and a ``KeyboardInterrupt`` it
    raises itself included (the user's Ctrl-C goes to the main thread, not this one)."""
    try:
        outcome["target"] = _target_of(entry)
    except SystemExit as exc:
        outcome["problem"] = f"loading it called sys.exit({printable(repr(exc.code))}); fix or uninstall the package"
    except _NotATarget as exc:
        outcome["problem"] = str(exc)
    except BaseException as exc:  # noqa: B036 - the package's own failure, whatever it is
        said = printable(exc)
        outcome["problem"] = (f"loading it raised {type(exc).__name__}{': ' + said if said else ''}; "
                              "fix or uninstall the package")


class _NotATarget(Exception):
    pass


def _target_of(entry: EntryPoint):
    from mapc.targets.base import Target

    loaded = entry.loader.load()
    target = getattr(loaded, "TARGET", loaded)
    if isinstance(target, type) and issubclass(target, Target):
        target = target()
    if not isinstance(target, Target):
        raise _NotATarget(f"{entry.value} is not a mapc.targets.Target (nor a module defining TARGET)")
    if target.name != entry.name:
        raise _NotATarget(f"the entry point is named {entry.name!r} but the target "
                          f"{printable(target.name)!r}")
    return target
