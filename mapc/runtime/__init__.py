"""mapc's runtime: the helpers a generated entry file imports (``from mapc_runtime.records_rt
import put``), standard library only.

Every file of this package is a file of mapc's own source (``mapc/runtime/``), byte for byte
below its leading comment lines, which say which mapc version and target wrote it; `mapc
review` shows any difference as a diff. An entry file imports the few modules it names (the
probe's are small); what only some specs or sources need (the stream loop, a JSON document's
reader, CSV, ``iso8601()``, ``merge``, ``subtrajectory``, the less used JMESPath functions)
is a module of its own that its users import inside the function that needs it, on the
first call. The modules import each other only (relative imports), never mapc.
"""

import os
import sys


def _stamp():
    """This runtime and the SHA-256 of its other files, as the ``# RUNTIME:`` and ``# RUNTIME
    SHA-256:`` lines among this file's leading comments say (``mapc build`` writes them), which
    the entry file compares with its own at import (D132); None in mapc's source, which has
    no such lines."""
    try:
        with open(__file__, encoding="utf-8") as fh:
            head = [fh.readline() for _ in range(5)]
    except (NameError, OSError):  # loaded from memory (mapc): its loader has the text
        source = getattr(getattr(globals().get("__spec__"), "loader", None), "get_source", None)
        head = source(__name__).splitlines(keepends=True)[:5] if source else []
    found = {line[2:].partition(": ")[0]: line.partition(": ")[2].rstrip("\n") for line in head}
    if "RUNTIME" in found and "RUNTIME SHA-256" in found:
        return (found["RUNTIME"], found["RUNTIME SHA-256"])
    return None


def _off_the_path():
    """Run as a script (`python3 adapter.py`), the entry file's folder is first on sys.path,
    where a module put beside it (json.py) would be imported in place of the standard
    library's: once this package is imported, that folder comes off (its modules are found
    through the package). Imported by a host, the host's sys.path is left as it is."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    folder = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if main and os.path.dirname(os.path.realpath(main)) == folder:
        sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != folder]


def _source_only():
    """Modules imported later (on a function's first call) are compiled from their source,
    never read from or written to ``__pycache__/`` here: RLViz digests this folder, and
    rejects a plugin that changes while it runs. (Python's own loader and spec classes, as
    they loaded this file: no import of importlib.)"""
    loader, spec, folder = type(__spec__.loader), type(__spec__), __path__[0]

    class SourceOnly(loader):
        def path_stats(self, path):
            raise OSError(path)  # no source time: Python neither reads nor writes bytecode

    class Finder:
        """This folder's modules, each found as its ``.py`` file."""

        def find_spec(self, name, target=None):
            path = os.path.join(folder, name.rpartition(".")[2] + ".py")
            if not os.path.isfile(path):
                return None
            found = spec(name, SourceOnly(name, path), origin=path)
            found.has_location = True
            return found

        def invalidate_caches(self):
            pass

    sys.path_importer_cache[folder] = Finder()


#: (title, SHA-256 of the other files' manifest), checked by the entry file at import
RUNTIME = _stamp()
if RUNTIME is not None and hasattr(__spec__.loader, "path_stats"):  # a build's package on disk
    _off_the_path()
    _source_only()
