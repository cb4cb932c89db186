#!/usr/bin/env python3
"""How much generated code a reviewer reads: spec lines vs spec-specific lines vs total.

Usage::

    python bench/review_size.py            # every example and library spec, every target it builds for
    python bench/review_size.py --json     # the same rows as JSON
    python bench/review_size.py --save DIR # also write each build's entry file under DIR

For each spec (the examples, the library specs, the bench specs and the README
tutorial) and each target whose checks it passes, the script renders the build
in memory (nothing is written) and counts:

* ``spec``: lines of the spec file plus the files it ``extends`` (what the code implements);
* ``specific``: lines of the entry file (``adapter.py``, ``run.py``) that are not the shared
  runtime: everything a reviewer must read for this spec;
* ``runtime``: lines of the shared runtime (a module next to the entry file, or, in older
  builds, the section copied into the entry file);
* ``total``: ``specific + runtime``;
* ``ratio``: ``specific / spec`` (the goal is at most 4).

Nothing is asserted; the numbers are printed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = ("rlviz", "relai", "cap-evolve")
ENTRY_NAMES = ("adapter.py", "run.py")
# builds before the runtime became a module of its own copied it between these markers
_OLD_RUNTIME = re.compile(r"^# --- runtime \(copied from mapc's runtime library\) ---\n(.*?)(?=^# --- )", re.S | re.M)


def tutorial_spec(work: Path) -> Path:
    """The README tutorial's spec and sample trace, written to ``work``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    spec = re.search(r"```yaml\n(mapc: 1.*?)```", text, re.S).group(1)
    sample = re.search(r"```jsonl\n(.*?)```", text, re.S).group(1)
    folder = work / "tutorial"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spec.yaml").write_text(spec, encoding="utf-8")
    (folder / "sample.jsonl").write_text(sample, encoding="utf-8")
    return folder / "spec.yaml"


def spec_files(work: Path) -> list[tuple[str, Path]]:
    from mapc.spec.library import library_specs

    out = [("README tutorial", tutorial_spec(work))]
    out += [(f"examples/{p.parent.name}/{p.name}", p) for p in sorted(ROOT.glob("examples/*/spec*.yaml"))]
    out += [(f"specs/{name}", Path(path)) for name, path in sorted(library_specs().items())]
    out += [(f"bench/{p.parent.name}", p) for p in sorted(ROOT.glob("bench/*/spec.yaml"))]
    return out


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def measure(label: str, path: Path, target_name: str, work: Path, save: Path | None = None) -> dict | None:
    from mapc.pipeline.build import load_checked, output_files, resolve_target

    target = resolve_target(target_name)
    spec, _ = load_checked(path, target)
    if spec is None:
        return None
    files = output_files(spec, target, work / "out" / target_name / re.sub(r"\W+", "-", label)).files
    entry = runtime = 0
    for rel, data in files.items():
        name = rel.rsplit("/", 1)[-1]
        text = data.decode("utf-8", "replace")
        if name in ENTRY_NAMES:
            if save is not None:
                keep = save / target_name / (re.sub(r"\W+", "-", label).strip("-") + ".py")
                keep.parent.mkdir(parents=True, exist_ok=True)
                keep.write_bytes(data)
            old = _OLD_RUNTIME.search(text)
            copied = _lines(old.group(0)) if old else 0
            entry += _lines(text) - copied
            runtime += copied
        elif ("mapc_runtime" in rel.split("/")[:-1] or name.startswith("mapc_runtime")) and name.endswith(".py"):
            runtime += _lines(text)
    spec_lines = sum(_lines(Path(f).read_text(encoding="utf-8")) for f in spec.files)
    return {"spec": label, "target": target_name, "spec_lines": spec_lines, "specific": entry,
            "runtime": runtime, "total": entry + runtime, "ratio": round(entry / spec_lines, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--save", type=Path, metavar="DIR",
                        help="write each build's entry file to DIR/TARGET/SPEC.py (to read or diff them)")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mapc-review-size-") as tmp:
        work = Path(tmp)
        for label, path in spec_files(work):
            for target in TARGETS:
                row = measure(label, path, target, work, args.save)
                if row is not None:
                    rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| spec | target | spec lines | spec-specific lines | runtime lines | total | specific / spec |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['spec']} | {r['target']} | {r['spec_lines']} | {r['specific']} | {r['runtime']} | "
              f"{r['total']} | {r['ratio']:.2f} |")
    worst = max(rows, key=lambda r: r["ratio"])
    print(f"\n{len(rows)} builds; largest ratio {worst['ratio']:.2f} ({worst['spec']}, {worst['target']}); "
          f"over 4x: {sum(1 for r in rows if r['ratio'] > 4)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
