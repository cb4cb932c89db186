"""A static scan of generated Python for what a reviewer must not miss.

Generated adapters use the standard library only (plus the host's package for
cap-evolve), never reach the network, never use a shell, and run a process
or write a file only in a few runtime helpers whose job that is (the agent
command, the result file). The scan parses each file (it never runs it) and
reports, with file and line:

- imports outside the allowlist (the stdlib modules mapc's runtime and the
  target's templates import, the runtime module next to the entry file, and
  the host package), network modules;
- ``eval``/``exec``/``compile``/``__import__``/``importlib``;
- ``os.system``, ``os.popen``, ``os.exec*``/``spawn*``, ``shell=True``;
- subprocess use and file writes (``open`` for writing, ``os.remove``, ...)
  anywhere but in mapc's own code.

"mapc's own code" is recognised by content, not by name: a function whose
syntax tree equals one from mapc's runtime library, its templates, or a fresh
render of the spec. Its process and file operations are *expected* and listed
as behaviours; the same call in an edited or added function is a finding.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from mapc.core.runtime_files import RUNTIME_MODULE, is_runtime_path
from mapc.targets import get_target

NETWORK = frozenset({
    "socket", "ssl", "http", "urllib", "urllib2", "urllib3", "requests", "httpx", "aiohttp", "ftplib",
    "smtplib", "poplib", "imaplib", "telnetlib", "xmlrpc", "socketserver", "asyncio", "websocket",
    "websockets", "paramiko", "grpc", "nntplib",
})
#: Host packages a target's generated code may import.
_SHELL = {"os.system", "os.popen", "pty.spawn", "subprocess.getoutput", "subprocess.getstatusoutput",
          "commands.getoutput"}
_PROCESS_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn", "os.fork")
_SUBPROCESS = {"subprocess.Popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
               "subprocess.check_output"}
_EVAL = {"eval", "exec", "compile", "__import__", "importlib.import_module", "importlib.__import__",
         "builtins.eval", "builtins.exec"}
_WRITES = {
    "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames", "os.replace",
    "os.makedirs", "os.mkdir", "os.chmod", "os.chown", "os.symlink", "os.link", "os.truncate",
    "os.mkfifo", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copy", "shutil.copy2",
    "shutil.copyfile", "shutil.copytree", "shutil.chown", "tempfile.mkstemp", "tempfile.mkdtemp",
    "tempfile.NamedTemporaryFile", "tempfile.TemporaryFile", "tempfile.TemporaryDirectory",
    "tempfile.SpooledTemporaryFile",
}
#: Path methods that write; ``rename``/``replace`` are left out (``str.replace`` is everywhere).
_WRITE_METHODS = {"write_text", "write_bytes", "unlink", "rmdir", "mkdir", "touch", "symlink_to",
                  "hardlink_to", "chmod"}
_RISKY_ATTRS = {"system", "popen", "exec", "eval", "spawn", "Popen", "run", "remove", "unlink", "rmtree"}
_WRITE_FLAGS = re.compile(r"O_(WRONLY|RDWR|CREAT|APPEND|TRUNC)")


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    code: str  # import_not_allowed | network | eval_exec | shell | subprocess | file_write | dynamic_attribute | syntax
    message: str

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "code": self.code, "message": self.message}


@dataclass(frozen=True)
class Behaviour:
    """A process or file operation in mapc's own code: expected, listed for the reviewer."""

    file: str
    line: int
    function: str
    call: str

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "function": self.function, "call": self.call}


# -- what counts as allowed / known ------------------------------------------------------
def _import_roots(text: str) -> set[str]:
    roots = set()
    for m in re.finditer(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w., ]+))", text, re.M):
        names = [m.group(1)] if m.group(1) else m.group(2).split(",")
        roots |= {n.strip().split(" ")[0].split(".")[0] for n in names if n.strip()}
    return roots


@functools.lru_cache(maxsize=None)
def allowed_imports(target: str | None) -> frozenset[str]:
    """Stdlib modules mapc's runtime and the target's templates import, and the host package."""
    runtime = Path(__file__).resolve().parents[1] / "runtime"
    roots: set[str] = set()
    for path in runtime.glob("*.py"):
        roots |= _import_roots(path.read_text(encoding="utf-8"))
    found = get_target(target) if target else None
    folder = found.template_folder() if found is not None else None
    if folder is not None and folder.is_dir():
        for path in folder.rglob("*.j2"):
            roots |= _import_roots(path.read_text(encoding="utf-8"))
    roots = {r for r in roots if r in sys.stdlib_module_names} - NETWORK
    # the runtime module each build writes next to the entry file (its hash is checked apart)
    own = {"__future__", RUNTIME_MODULE}
    return frozenset(roots | own | (found.host_packages if found is not None else frozenset()))


def _fingerprint(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def fingerprints(source: str) -> set[str]:
    """Fingerprints of every function and class in ``source`` (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {_fingerprint(n) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


@functools.lru_cache(maxsize=None)
def mapc_fingerprints() -> frozenset[str]:
    """Functions of mapc's runtime library and of the templates that are plain Python."""
    found: set[str] = set()
    runtime = Path(__file__).resolve().parents[1] / "runtime"
    for path in sorted(runtime.glob("*.py")):
        found |= fingerprints(path.read_text(encoding="utf-8"))
    for path in sorted((Path(__file__).resolve().parents[1] / "targets").glob("*/templates/*.py.j2")):
        found |= fingerprints(path.read_text(encoding="utf-8"))
    return frozenset(found)


# -- the scan ------------------------------------------------------------------------------
class _Scanner(ast.NodeVisitor):
    def __init__(self, rel: str, allowed: frozenset[str], known: frozenset[str] | set[str]):
        self.rel = rel
        self.allowed = allowed
        self.known = known
        self.aliases: dict[str, str] = {}  # local name -> qualified name
        self.stack: list[tuple[str, bool]] = []  # (function name, is mapc's own)
        self.findings: list[Finding] = []
        self.behaviours: list[Behaviour] = []

    def flag(self, node: ast.AST, code: str, message: str) -> None:
        self.findings.append(Finding(self.rel, getattr(node, "lineno", 0), code, message))

    # imports
    def _import(self, node: ast.AST, module: str) -> None:
        root = module.split(".")[0]
        if root in NETWORK:
            self.flag(node, "network", f"imports network module {module}")
        elif root in ("importlib", "ctypes", "builtins") or root not in self.allowed:
            self.flag(node, "import_not_allowed", f"imports {module}, which generated code has no use for")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.aliases[root] = root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        if node.level == 1 and is_runtime_path(self.rel):
            pass  # the runtime package's parts import each other (D72)
        elif node.level:
            self.flag(node, "import_not_allowed", f"relative import from {module}")
        else:
            self._import(node, module)
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    # functions: is this mapc's own code?
    def _function(self, node) -> None:
        own = _fingerprint(node) in self.known or bool(self.stack and self.stack[-1][1])
        self.stack.append((node.name, own))
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        own = _fingerprint(node) in self.known
        self.stack.append((node.name, own))
        self.generic_visit(node)
        self.stack.pop()

    def qualname(self, func: ast.AST) -> str | None:
        if isinstance(func, ast.Name):
            return self.aliases.get(func.id, func.id)
        if isinstance(func, ast.Attribute):
            base = self.qualname(func.value)
            return f"{base}.{func.attr}" if base else None
        return None

    def visit_Call(self, node: ast.Call) -> None:
        name = self.qualname(node.func) or ""
        shell_kw = any(k.arg == "shell" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                       for k in node.keywords)
        own = bool(self.stack and self.stack[-1][1])
        where = self.stack[-1][0] if self.stack else "<module>"
        if name in _EVAL:
            self.flag(node, "eval_exec", f"calls {name}(): runs code built at run time")
        elif name in _SHELL or name.startswith(_PROCESS_PREFIXES):
            self.flag(node, "shell", f"calls {name}(): runs a command through the shell or replaces the process")
        elif name in _SUBPROCESS or name.startswith("subprocess."):
            if shell_kw:
                self.flag(node, "shell", f"calls {name}(shell=True): a command line run by the shell")
            elif own:
                self.behaviours.append(Behaviour(self.rel, node.lineno, where, name))
            else:
                self.flag(node, "subprocess", f"calls {name}() outside mapc's agent runner: runs another program")
        elif self._writes(node, name):
            if own:
                self.behaviours.append(Behaviour(self.rel, node.lineno, where, name or _method(node)))
            else:
                self.flag(node, "file_write", f"{name or _method(node)}() writes or removes files")
        elif name == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value in _RISKY_ATTRS:
            self.flag(node, "dynamic_attribute", f"getattr(..., {node.args[1].value!r}) hides a risky call")
        self.generic_visit(node)

    def _writes(self, node: ast.Call, name: str) -> bool:
        if name in _WRITES:
            return True
        if name == "os.open":
            return bool(_WRITE_FLAGS.search(ast.unparse(node)))
        if name in ("open", "io.open", "codecs.open", "os.fdopen"):
            return _mode_writes(node, 1)
        if isinstance(node.func, ast.Attribute) and not name.startswith(("os.", "io.", "codecs.", "sys.")):
            if node.func.attr == "open":  # pathlib: path.open(mode)
                return _mode_writes(node, 0)
            return node.func.attr in _WRITE_METHODS
        return False


def _mode_writes(node: ast.Call, index: int) -> bool:
    mode = node.args[index] if len(node.args) > index else next(
        (k.value for k in node.keywords if k.arg == "mode"), None)
    if mode is None:
        return False  # the default mode reads
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return True  # a computed mode may write
    return any(c in mode.value for c in "wax+")


def _method(node: ast.Call) -> str:
    return f".{node.func.attr}" if isinstance(node.func, ast.Attribute) else "?"


def scan_source(rel: str, source: str, *, target: str | None, known=frozenset()) -> tuple[list[Finding], list[Behaviour]]:
    """Findings and expected behaviours of one Python file."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Finding(rel, exc.lineno or 0, "syntax", f"does not parse as Python: {exc.msg}")], []
    scanner = _Scanner(rel, allowed_imports(target), set(known) | mapc_fingerprints())
    scanner.visit(tree)
    return scanner.findings, scanner.behaviours
