"""Progress and summaries for long runs, on a terminal only.

``mapc run`` and ``mapc validate`` over many sources draw a progress bar on stderr
while they work and a summary table when they finish, but only when stderr is a
terminal and the output is not ``--json``: piped or redirected, they print exactly
what they print for one source, so scripts see no difference. rich (installed with
typer) is imported only when something is drawn.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, Sequence


def on_terminal(as_json: bool, count: int) -> bool:
    """Whether to draw: several items, human output, and stderr is a terminal."""
    if as_json or count < 2:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


class Reporter:
    """Advances the bar (``reporter(done, total, label)``) and prints lines above it."""

    def __init__(self, bar=None, task=None, console=None):
        self.bar, self.task, self.console = bar, task, console

    @property
    def live(self) -> bool:
        return self.bar is not None

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, last=_clip(label, 40))

    def line(self, text: str) -> None:
        """A line for stderr, printed above the bar while it is drawn."""
        if self.console is not None:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()


@contextlib.contextmanager
def progress_bar(total: int, what: str, enabled: bool) -> Iterator[Reporter]:
    """A :class:`Reporter` drawing a bar on stderr while the block runs (a plain one when
    not ``enabled``). The bar is transient: it is erased at the end, leaving what was printed."""
    if not enabled:
        yield Reporter()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("[dim]{task.fields[last]}"), console=console, transient=True,
                   redirect_stdout=False, redirect_stderr=False)
    task = bar.add_task(what, total=total, last="")
    with bar:
        yield Reporter(bar, task, console)


def summary_table(rows: Sequence[dict[str, Any]], title: str) -> None:
    """Print one row per source on stderr: source, records, warnings, verdict."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("source", overflow="fold")
    table.add_column("records", justify="right")
    table.add_column("warnings", justify="right")
    table.add_column("verdict")
    for row in rows:
        records = "" if row.get("records") is None else str(row["records"])
        verdict = "[green]ok[/green]" if row.get("ok") else "[red]FAIL[/red]"
        table.add_row(str(row["source"]), records, str(row.get("warnings") or 0), verdict)
    failed = sum(1 for row in rows if not row.get("ok"))
    table.caption = f"{len(rows) - failed} ok, {failed} failed" if failed else f"all {len(rows)} ok"
    Console(stderr=True).print(table)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1):]
