"""A spec expression that cannot be evaluated on a source is reported as such, not as an
internal error (found by the long spec-fuzzing run: `items()` of a missing field)."""

from __future__ import annotations

import io
import textwrap

from mapc.pipeline.build import run_mapping
from mapc.spec import load_spec_text

SPEC = textwrap.dedent("""\
    mapc: 1
    name: items-of-null
    source: {format: f, container: jsonl, probe: {require: [type]}}
    records:
      events:
        each: "@"
        kind: log
        data: "@"
        signals:
          - each: "items(scores)"
            name: "[0]"
            value: "[1]"
    """)


def test_an_expression_type_error_names_the_expression_not_an_internal_error(tmp_path):
    spec, diags = load_spec_text(SPEC, base_dir=tmp_path)
    assert spec is not None, [d.format() for d in diags]
    source = tmp_path / "trace.jsonl"
    source.write_text('{"type": "a", "scores": {"x": 1}}\n{"type": "b"}\n', encoding="utf-8")
    out = io.BytesIO()
    ok, error, _ = run_mapping(spec, source, out)
    assert not ok and b'"record_type":"complete"' not in out.getvalue()
    # the source line, the spec path and line, what failed and the fix; no internal function name
    assert error == ("line 2: records.events.signals[0].each (<spec>:10) cannot be evaluated: "
                     "items() argument must be an object, got null; "
                     "hint: write items(scores || `{}`) to map null as `{}`")
