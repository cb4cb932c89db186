#!/usr/bin/env python3
"""How close does `mapc init` come to the library spec, with no edits?

For every corpus trace that a library spec recognises (its probe accepts the
file, as `mapc init` asks), the structural draft (`init_spec(...,
use_library=False)`: the library is not consulted) and the library spec both
map the file with the very code generated adapters run, and their records are
compared:

* record counts per type (run / case / group / trajectory / event / signal /
  artifact): how many of the seven types have the library's count;
* event kinds: the share of events with the right kind,
  ``sum_k min(draft_k, library_k) / max(draft events, library events)``
  (missing, extra and mis-kinded events all count against it).

Usage::

    python bench/init_match.py                   # print the table
    python bench/init_match.py --doc docs/formats.md   # and write it into the marked block

The corpus is found like the tests find it (``tests/shared_paths.py``), or
``--corpus DIR``. No numbers are asserted here; the test
``tests/library/test_init_match.py`` checks the documented table is current
and the overall goal.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("run", "case", "group", "trajectory", "event", "signal", "artifact")
BLOCK = "init-match"
GOAL = 0.8


@dataclass
class Match:
    library: str
    file: str  # relative to the corpus
    library_counts: dict[str, int]
    draft_counts: dict[str, int]
    library_kinds: dict[str, int]
    draft_kinds: dict[str, int]
    error: str | None = None  # the draft failed to map the file
    notes: list[str] = field(default_factory=list)

    @property
    def kinds_right(self) -> int:
        return sum(min(n, self.draft_kinds.get(k, 0)) for k, n in self.library_kinds.items())

    @property
    def kinds_total(self) -> int:
        return max(sum(self.library_kinds.values()), sum(self.draft_kinds.values()))

    @property
    def kind_rate(self) -> float:
        return self.kinds_right / self.kinds_total if self.kinds_total else 1.0

    @property
    def types_matched(self) -> int:
        return sum(self.library_counts.get(t, 0) == self.draft_counts.get(t, 0) for t in TYPES)


def _records(spec_path: Path, source: Path) -> tuple[list[dict], str | None]:
    from mapc.pipeline.build import run_mapping
    from mapc.spec import load_spec

    spec, diags = load_spec(spec_path)
    if spec is None:
        return [], "; ".join(d.message for d in diags.errors)
    out = io.BytesIO()
    ok, error, _ = run_mapping(spec, source, out)
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()], None if ok else error


def _counts(records: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
    types: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for rec in records:
        t = rec.get("record_type", "?")
        types[t] = types.get(t, 0) + 1
        if t == "event":
            kinds[rec["kind"]] = kinds.get(rec["kind"], 0) + 1
    return types, kinds


def pairs(corpus: Path) -> list[tuple[str, Path]]:
    """(library spec, corpus file) for each corpus file a library probe accepts."""
    from mapc.tools.init_match import match_library

    out = []
    for path in sorted(p for p in corpus.glob("*/*") if p.is_file() and p.name != "PROVENANCE.md"):
        found = match_library(path)
        if found is not None:
            out.append((found[0], path))
    return out


def measure(corpus: Path, work: Path, only: list[str] | None = None) -> list[Match]:
    from mapc.tools.init import init_spec, write_spec
    from mapc.spec.library import library_specs
    from mapc.core.safeio import allowing

    with allowing([corpus]):  # the drafts name the corpus samples, as `mapc init` users allow theirs
        return _measure(corpus, work, only, init_spec, write_spec, library_specs)


def _measure(corpus: Path, work: Path, only, init_spec, write_spec, library_specs) -> list[Match]:
    results = []
    for name, path in pairs(corpus):
        rel = str(path.relative_to(corpus))
        if only and rel not in only:
            continue
        folder = work / rel.replace("/", "__")
        folder.mkdir(parents=True, exist_ok=True)
        draft = init_spec(path, spec_dir=folder, use_library=False)
        write_spec(draft.text, folder / "spec.yaml", force=True)
        lib_records, lib_error = _records(library_specs()[name], path)
        if lib_error:
            raise SystemExit(f"the library spec {name} fails on {rel}: {lib_error}")
        draft_records, error = _records(folder / "spec.yaml", path)
        lib_types, lib_kinds = _counts(lib_records)
        draft_types, draft_kinds = _counts(draft_records)
        results.append(Match(name, rel, lib_types, draft_types, lib_kinds, draft_kinds, error, draft.notes))
    return results


def _fmt_counts(counts: dict[str, int]) -> str:
    return "/".join(str(counts.get(t, 0)) for t in TYPES)


def _fmt_kinds(kinds: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def table(results: list[Match]) -> str:
    right = sum(m.kinds_right for m in results)
    total = sum(m.kinds_total for m in results)
    formats = sorted({m.library for m in results})
    per_format = {f: [m for m in results if m.library == f] for f in formats}
    reaching = sum(1 for f in formats if sum(m.kinds_right for m in per_format[f])
                   >= GOAL * sum(m.kinds_total for m in per_format[f]))
    lines = [
        f"Overall: **{right / total:.0%}** of events get the library spec's kind "
        f"({right} of {total}), over {len(results)} corpus files of {len(formats)} formats; "
        f"{reaching} of {len(formats)} formats reach {GOAL:.0%}. Record counts are run / case / group / "
        "trajectory / event / signal / artifact; *types* is how many of those seven counts agree.",
        "",
        "| format | corpus file | library records | draft records | types | library event kinds "
        "| draft event kinds | kinds right |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in results:
        draft = _fmt_counts(m.draft_counts) + (" (mapping failed)" if m.error else "")
        lines.append(f"| `{m.library}` | `{Path(m.file).name}` | {_fmt_counts(m.library_counts)} | {draft} "
                     f"| {m.types_matched}/7 | {_fmt_kinds(m.library_kinds)} | {_fmt_kinds(m.draft_kinds)} "
                     f"| {m.kind_rate:.0%} |")
    return "\n".join(lines) + "\n"


def replace_block(text: str, body: str, name: str = BLOCK) -> str:
    begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"no {begin} ... {end} block in the document")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"


def default_corpus() -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from shared_paths import CORPUS

    return CORPUS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--doc", type=Path, default=None, help="write the table into this document's block")
    args = parser.parse_args(argv)
    corpus = args.corpus or default_corpus()
    with tempfile.TemporaryDirectory(prefix="mapc-init-match-") as work:
        results = measure(corpus, Path(work))
    text = table(results)
    print(text, end="")
    for m in results:
        if m.error:
            print(f"draft mapping failed on {m.file}: {m.error}", file=sys.stderr)
    if args.doc:
        args.doc.write_text(replace_block(args.doc.read_text(encoding="utf-8"), text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
