"""`mapc report SPEC -o report.html`: one self-contained page, escaped, rendered by a real browser.

The case tests/cases/report/hostile-values holds a trace whose values and keys are markup.
The browser test renders the page with headless Chromium (Debian's `chromium`, installed
by .ci/run): the screenshot is not blank and the DOM holds the text a person looks for and
no element the trace smuggled in. Without Chromium it skips, which MAPC_REQUIRE_HOSTS=1
(CI) turns into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest

from mapc.tools.report import GENERATOR, record_tree

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "tests" / "cases" / "report" / "hostile-values"
EXAMPLE = ROOT / "examples" / "verifiers-math"


def _mapc(*args, cwd: Path):
    from typer.testing import CliRunner

    from mapc.cli import app

    here = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, [str(a) for a in args])
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    shutil.copytree(CASE, folder / "case")
    proc = _mapc("report", "spec.yaml", "-o", "report.html", cwd=folder / "case")
    assert proc.exit_code == 0, proc.stderr
    assert "wrote report.html: " in proc.stderr
    return folder / "case" / "report.html"


def _elements(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every start tag of ``html`` with its attributes, as a browser's parser reads them."""
    from html.parser import HTMLParser

    found = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Tags().feed(html)
    return found


#: what the template writes; a trace that smuggles in markup adds another
_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div", "b", "code", "span", "table",
         "tbody", "tr", "th", "td", "ul", "li", "details", "summary"}  # tbody: the browser adds it


def test_the_page_loads_nothing_and_escapes_the_trace(page: Path):
    html = page.read_text(encoding="utf-8")
    elements = _elements(html)
    assert {tag for tag, _ in elements} <= _TAGS
    attributes = {name for _, attrs in elements for name, _ in attrs}
    assert attributes <= {"lang", "charset", "name", "content", "http-equiv", "class", "style", "title", "id",
                          "open", "colspan"}, attributes
    styles = " ".join(v or "" for _, attrs in elements for n, v in attrs if n == "style")
    assert "url(" not in styles and "url(" not in html.split("</style>")[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the value, as text, in its warning
    assert "&lt;img src=x onerror=alert(3)&gt;" in html  # a key of the trace, in the field tree
    assert "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;script&gt;" in html
    assert f'<meta name="generator" content="{GENERATOR}' in html


def test_the_page_holds_what_the_issue_asks_for(page: Path):
    html = page.read_text(encoding="utf-8")
    # the field tree with the spec line that reads each field
    assert "line 13: records.events.rules[0].role" in html
    assert "line 19: records.events.rules[1].arguments" in html
    assert "carried inside <code>args</code>" in html  # args is mapped whole
    # rule hit counts, and the rule that never matches
    assert "type == &#39;rewards&#39;" in html and "never matches" in html
    # the record tree with counts and kinds
    assert "message × 1" in html and "tool × 1" in html and "2 event(s)" in html
    # every warning with its place
    for code in ("empty_string_falsy", "naive_time", "rule_never_matches"):
        assert f"warning[{code}]" in html
    assert "spec.yaml:14:27" in html


def test_report_json_counts_what_run_maps(tmp_path: Path):
    from mapc.api import run

    shutil.copytree(EXAMPLE, tmp_path / "ex")
    proc = _mapc("report", "--json", "spec.yaml", "-o", "r.html", cwd=tmp_path / "ex")
    payload = json.loads(proc.stdout)
    assert proc.exit_code == 0 and payload["ok"], payload["diagnostics"]
    records = run(tmp_path / "ex" / "spec.yaml", tmp_path / "ex" / "results.jsonl").records
    counts = Counter(r["record_type"] for r in records if r["record_type"] != "complete")
    assert payload["records"] == dict(sorted(counts.items()))
    assert payload["out"] == "r.html" and payload["fields"] > 0
    assert [r["matched"] for r in payload["coverage"]["rules"]] == [31, 16, 30]


def test_report_never_overwrites_a_file_it_does_not_own(tmp_path: Path):
    shutil.copytree(CASE, tmp_path / "case")
    mine = tmp_path / "case" / "notes.html"
    mine.write_text("<p>my notes</p>\n")
    proc = _mapc("report", "spec.yaml", "-o", "notes.html", cwd=tmp_path / "case")
    assert proc.exit_code == 2 and "is not a mapc report" in proc.stderr and "--force" in proc.stderr
    assert mine.read_text() == "<p>my notes</p>\n"
    assert _mapc("report", "spec.yaml", "-o", "notes.html", "--force", cwd=tmp_path / "case").exit_code == 0
    assert "my notes" not in mine.read_text()
    assert _mapc("report", "spec.yaml", "-o", "notes.html", cwd=tmp_path / "case").exit_code == 0  # its own


def test_a_spec_with_errors_gets_its_diagnostics_and_no_page(tmp_path: Path):
    (tmp_path / "spec.yaml").write_text("mapc: 1\nname: Bad Name\nsorce: {}\n")
    proc = _mapc("report", "spec.yaml", "-o", "r.html", cwd=tmp_path)
    assert proc.exit_code == 1 and "error[" in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_record_tree_files_each_record_under_its_parent():
    records = [{"record_type": "run", "id": "r"}, {"record_type": "case", "id": "c", "run_id": "r"},
               {"record_type": "group", "id": "g", "case_id": "c"},
               {"record_type": "trajectory", "id": "t1", "group_id": "g"},
               {"record_type": "trajectory", "id": "t2", "group_id": "g"},
               {"record_type": "event", "id": "e1", "trajectory_id": "t1", "kind": "message"},
               {"record_type": "event", "id": "e2", "trajectory_id": "t2", "kind": "tool"},
               {"record_type": "event", "id": "e3", "trajectory_id": "t2", "kind": "tool"},
               {"record_type": "event", "id": "e4", "trajectory_id": "nowhere", "kind": "log"}]
    runs, totals = record_tree(records)
    assert totals["event"] == 4 and totals["trajectory"] == 2
    run, orphans = runs
    assert run.event_count == 3 and orphans.events == {"log": 1}
    group = run.children[0].children[0]
    assert [(t.id, dict(t.events)) for t in group.children] == [("t1", {"message": 1}), ("t2", {"tool": 2})]


# -- a real browser ---------------------------------------------------------------------------------
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(binary: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--window-size=1200,1600"]
    return subprocess.run([binary, *flags, *args, page.as_uri()], capture_output=True, text=True, timeout=120)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of raw pixel bytes) of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and interlace == 0 and color in (2, 6), header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def test_chromium_renders_the_page(page: Path, tmp_path: Path):
    binary = _chromium()
    if binary is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install -y chromium)")
    shot = tmp_path / "shot.png"
    proc = _browser(binary, page, tmp_path / "profile-shot", f"--screenshot={shot}")
    assert shot.is_file(), proc.stderr[-2000:]
    width, height, rows = _png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    colours = Counter(row[x:x + 3] for row in rows[::8] for x in range(0, len(row), 3 * 8))
    assert len(colours) > 20, "a blank or one-colour screenshot"
    assert colours.most_common(1)[0][1] < 0.97 * sum(colours.values()), "almost all one colour"
    dom = _browser(binary, page, tmp_path / "profile-dom", "--dump-dom").stdout
    for text in ("mapc report: hostile-report", "Rule hits", "never matches", "Source fields and the spec lines",
                 "Records: run", "warning[empty_string_falsy]", "line 13: records.events.rules[0].role"):
        assert text in dom, text
    assert {tag for tag, _ in _elements(dom)} <= _TAGS, "the trace put an element into the page"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
