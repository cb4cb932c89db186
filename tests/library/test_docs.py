"""The documentation of the library and of composition stays true."""

from __future__ import annotations

import re
from pathlib import Path

from library_support import AUXILIARY, FORMATS, ROOT

from mapc.spec import load_spec


def test_formats_md_covers_every_library_spec_and_corpus_file():
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    for name, files in FORMATS.items():
        row = next((r for r in rows if r.startswith(f"| `{name}` |")), None)
        assert row is not None, f"docs/formats.md has no row for {name}"
        assert row.count(" | ") >= 5, "format, spec, files, records per kind, signals, not mapped"
    for rel in AUXILIARY:
        assert Path(rel).name in text


def test_extends_example_in_the_spec_reference_compiles(tmp_path):
    text = (ROOT / "docs" / "spec-reference.md").read_text(encoding="utf-8")
    section = text.split("## extends: building on another spec", 1)[1]
    example = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    (tmp_path / "spec.yaml").write_text(example)
    spec, diags = load_spec(tmp_path / "spec.yaml")
    assert spec is not None, [d.format() for d in diags]
    signals = {s.name.value for s in spec.levels[3].signals}
    assert signals == {"reward", "r_actions", "r_outputs", "solved"}
    assert [e.description for e in spec.evaluators] == ["The task was solved"]
    assert spec.source.probe.confidence == 0.95 and spec.source.probe.when is not None
