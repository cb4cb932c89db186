"""Which library spec recognises a sample (``mapc init --from SAMPLE``): each library spec's
generated ``probe(path)`` asked in turn. Compiling the probes is a pipeline step, which is why
this lives with ``mapc init`` and not with the library (:mod:`mapc.spec.library`)."""

from __future__ import annotations

from pathlib import Path

from mapc.pipeline.build import mapping_namespace
from mapc.spec import load_spec
from mapc.spec.library import library_specs

_PROBES: dict[str, object] | None = None


def library_probes() -> dict[str, object]:
    """name -> the generated ``probe(path)`` of each library spec (compiled once per process)."""
    global _PROBES
    if _PROBES is None:
        probes = {}
        for name, path in library_specs().items():
            spec, _ = load_spec(path)
            if spec is not None:
                probes[name] = mapping_namespace(spec)["probe"]
        _PROBES = probes
    return _PROBES


def match_library(sample: str | Path) -> tuple[str, float] | None:
    """The library spec whose probe accepts ``sample`` most confidently, with that confidence."""
    best = None
    for name, probe in library_probes().items():
        answer = probe(str(sample))
        if answer.get("supported") and (best is None or answer["confidence"] > best[1]):
            best = (name, float(answer["confidence"]))
    return best
