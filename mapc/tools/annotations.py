"""``--format github``: one GitHub Actions workflow command (annotation) per diagnostic.

``::error file=F,line=L,col=C,title=T::MESSAGE``, escaped as the runner reads them: in the
message ``%``, CR and LF become ``%25``, ``%0D``, ``%0A``; in a property ``:`` and ``,`` too
(``%3A``, ``%2C``). Files are given relative to the repository (GITHUB_WORKSPACE, else the
folder holding ``.git``), which is how the runner matches them to the checked-out files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

#: Diagnostic severity -> workflow command.
COMMANDS = {"error": "error", "warning": "warning"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace() -> Path:
    """The folder annotation and SARIF paths are relative to."""
    from mapc.pipeline.project import repository_root

    env = os.environ.get("GITHUB_WORKSPACE")
    return Path(env).absolute() if env else repository_root()


def relative_file(file: str, root: Path) -> str | None:
    """``file`` relative to ``root`` (with ``/``), or None when it is outside."""
    full = os.path.abspath(file)
    rel = os.path.relpath(full, root)
    if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


def message_text(diag: dict[str, Any]) -> str:
    """The message with its spec path first and its hint after, as text prints it."""
    text = f"{diag['path']}: {diag['message']}" if diag.get("path") else diag["message"]
    return text + (f"\nhint: {diag['hint']}" if diag.get("hint") else "")


def annotations(diags: Iterable[dict[str, Any]], command: str) -> Iterator[str]:
    root = workspace()
    for d in diags:
        props = []
        if d.get("file"):
            props.append("file=" + escape_property(relative_file(d["file"], root) or os.path.abspath(d["file"])))
            if d.get("line"):
                props.append(f"line={int(d['line'])}")
                if d.get("column"):
                    props.append(f"col={int(d['column'])}")
        props.append("title=" + escape_property(f"mapc {command}: {d['code']}"))
        yield f"::{COMMANDS.get(d.get('severity'), 'notice')} {','.join(props)}::{escape_data(message_text(d))}"
