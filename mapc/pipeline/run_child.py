"""The process `mapc run SPEC SOURCE` becomes once the spec is compiled (D73).

Not imported by mapc: :mod:`mapc.pipeline.run_exec` hands this file's text to the same Python
(``python -S -c TEXT FD``), after which the process holds only the standard library, the
spec's mapping program and the runtime package, as a generated adapter does, not mapc's
compiler (pyyaml, jinja2, jmespath, jsonschema, typer). File descriptor ``FD`` is an
anonymous file (no name on disk: nothing to clean up, nothing another user can reach) with
one JSON object: ``program`` (``mapc.pipeline.build.mapping_source``), ``runtime`` (the package's
``(path, text)`` pairs) and ``source``. What it prints, and its exit status, are those of
``mapc run`` mapping in process (``mapc/cli.py``: ``run`` and ``guarded``).
"""

import sys

if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]  # `-c` puts the working folder first: only the standard library is wanted

import json  # noqa: E402 - after the path is cleaned
import os  # noqa: E402
from importlib.machinery import ModuleSpec  # noqa: E402

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
PACKAGE = "mapc_runtime"


class RuntimeFinder:
    """Imports the runtime package's files from memory: ``mapc_runtime`` and its parts are
    modules in ``sys.modules``, loaded on first import, as next to an adapter."""

    def __init__(self, files):
        self.texts = {path.removesuffix(".py").replace("/", "."): text for path, text in files}
        self.init = self.texts.get(PACKAGE + ".__init__", "")

    def get_source(self, name):
        """The package's ``__init__`` text, whose header its ``_stamp()`` reads."""
        return self.init

    def find_spec(self, name, path=None, target=None):
        key = name + ".__init__" if name == PACKAGE else name
        if key not in self.texts:
            return None
        return ModuleSpec(name, self, is_package=name == PACKAGE)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        key = name + ".__init__" if name == PACKAGE else name
        text = self.texts.pop(key)  # compiled once: the text is not needed after that
        code = compile(text, key.replace(".", "/") + ".py", "exec")
        exec(code, module.__dict__)  # noqa: S102 - mapc's runtime, handed over by mapc run


def echo_err(text):
    """A line on stderr as ``typer.echo(err=True)`` writes it: ANSI codes stripped when
    stderr is not a terminal, UTF-8 when the stream's encoding is ASCII."""
    if not sys.stderr.isatty():
        import re

        text = re.sub(r"\033\[[;?0-9]*[a-zA-Z]", "", text)
    import codecs

    if codecs.lookup(sys.stderr.encoding or "ascii").name == "ascii":
        sys.stderr.flush()
        sys.stderr.buffer.write((text + "\n").encode("utf-8", "replace"))
        sys.stderr.buffer.flush()
        return
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def main(fd):
    with open(fd, "rb") as fh:
        job = json.loads(fh.read())
    sys.meta_path.insert(0, RuntimeFinder(job["runtime"]))
    ns = {"__name__": "mapc_generated"}
    exec(compile(job["program"], "<mapc_generated>", "exec"), ns)  # noqa: S102 - the spec's program
    del job["program"], job["runtime"]
    source = job["source"]
    out = sys.stdout.buffer
    st = ns["MapState"]()
    # mapc.pipeline.build.run_mapping: every failure while mapping becomes one line
    try:
        src = ns["SourceFile"](source, None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
        ns["write_canonical"](ns["map_source"], src, out, st)
        error = None
    except BrokenPipeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the same one line as in process
        error = ns["one_line"](exc)
    out.flush()
    for message in st.messages:
        echo_err(f"warning: {message}")
    if error is not None:
        echo_err(f"error: {source}: {error}")
        return EXIT_FINDINGS
    return EXIT_OK


def run(argv):
    """``mapc.cli.guarded`` around :func:`main`: the same messages and exit statuses."""
    try:
        return main(int(argv[0]))
    except KeyboardInterrupt:
        echo_err("interrupted")
        return 130
    except BrokenPipeError:
        # the reader went away (`mapc run ... | head`): stop quietly, like other CLI tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - internal error: say so plainly
        if os.environ.get("MAPC_DEBUG"):
            raise
        echo_err(f"error: internal error ({type(exc).__name__}): {exc}\n(set MAPC_DEBUG=1 for a traceback)")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
