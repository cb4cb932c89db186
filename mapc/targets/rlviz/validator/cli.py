"""``mapc-rlviz``: a stand-in for the ``rlviz`` command's ``plugin validate``.

So a generated plugin's ``test_adapter.py`` runs without RLViz installed::

    RLVIZ_BIN=mapc-rlviz python3 test_adapter.py

Same arguments, output and exit codes as ``rlviz plugin validate``: the
success report on stdout (exit 0); a failure as ``plugin_validate: <error>``
or, with ``--json``, RLViz's JSON diagnostic on stderr (exit 1); bad usage
exits 2. Unlike RLViz it does not require the plugin to be trusted first, and
it prints what RLViz's schemas require beyond RLViz's own checks as
``warning (beyond RLViz): ...`` lines on stderr (the verdict is RLViz's).
"""

from __future__ import annotations

import sys

from mapc.targets.rlviz.validator.validate import ValidationFailure, go_json, validate

USAGE = "Usage: mapc-rlviz plugin validate [--json] DIR SOURCE"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] != ["plugin", "validate"]:
        sys.stderr.write(USAGE + "\n")
        return 2
    rest = args[2:]
    as_json = "--json" in rest or "-json" in rest
    paths = [a for a in rest if a not in ("--json", "-json")]
    if len(paths) != 2 or any(p.startswith("-") for p in paths):
        sys.stderr.write(USAGE + "\n")
        return 2
    try:
        report = validate(paths[0], paths[1])
    except ValidationFailure as exc:
        if as_json:
            sys.stderr.write(go_json(exc.payload(), sort_keys=True) + "\n")
        else:
            sys.stderr.write(f"plugin_validate: {exc.error}\n")
        return 1
    except Exception as exc:  # never a traceback
        message = f"internal error ({type(exc).__name__}): {exc}"
        if as_json:
            sys.stderr.write(go_json({"code": "plugin_validate_failed", "error": message}) + "\n")
        else:
            sys.stderr.write(f"plugin_validate: {message}\n")
        return 1
    for line in report.findings.lines(paths[1]):
        sys.stderr.write(line + "\n")
    if as_json:
        sys.stdout.write(go_json(report.payload()) + "\n")
    else:
        sys.stdout.write(f"Validated {report.plugin}: {report.records} deterministic records ({report.format})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
