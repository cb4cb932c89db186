"""The spec schema editors use: checked in, current, and what every bundled spec points at.

yaml-language-server reads ``# yaml-language-server: $schema=PATH`` on a spec's first
line and resolves PATH relative to the spec. Every bundled spec must name a file that
exists and is exactly ``mapc schema``'s output, and must be valid under it, read the way
yaml-language-server reads it (draft 7) as well as by the schema's own draft (2020-12).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from golden import assert_golden

from mapc.tools.editor import PROJECT_SCHEMA, schema_location
from mapc.spec.schema import SCHEMA_FILE, file_schema, schema_json

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "# yaml-language-server: $schema="
BUNDLED = sorted(ROOT.glob("specs/*.yaml")) + sorted(ROOT.glob("examples/*/spec*.yaml"))
WITH_MODELINE = sorted({p for p in ROOT.glob("tests/**/*.yaml") if p.read_bytes().startswith(PREFIX.encode())}
                       | set(BUNDLED))
CORPUS_SAMPLE = ROOT / "tests" / "data" / "corpus" / "harbor-atif" / "openhands-hello-world.trajectory.json"


def _ids(paths):
    return [p.relative_to(ROOT).as_posix() for p in paths]


def _schema_of(spec: Path) -> Path:
    first = spec.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    assert first.startswith(PREFIX), f"{spec} does not start with a yaml-language-server modeline"
    target = first[len(PREFIX):]
    assert "://" not in target and not target.startswith("/"), "a relative path, not a URL or machine path"
    return spec.parent / target


def mapc(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=120)


def test_the_checked_in_schema_is_what_mapc_schema_prints():
    assert_golden(ROOT / SCHEMA_FILE, schema_json())
    jsonschema.Draft202012Validator.check_schema(json.loads(schema_json()))
    jsonschema.Draft7Validator.check_schema(json.loads(schema_json()))


def test_every_bundled_spec_is_covered():
    assert len(BUNDLED) >= 20 and all(p.is_file() for p in BUNDLED)


@pytest.mark.parametrize("spec", WITH_MODELINE, ids=_ids(WITH_MODELINE))
def test_the_modeline_resolves_to_the_schema(spec):
    target = _schema_of(spec)
    assert target.is_file(), f"{spec}: the modeline names {target}, which does not exist"
    assert target.resolve() == (ROOT / SCHEMA_FILE).resolve()


@pytest.mark.parametrize("spec", BUNDLED, ids=_ids(BUNDLED))
def test_every_bundled_spec_is_valid_under_the_schema_it_names(spec):
    schema = json.loads(_schema_of(spec).read_text(encoding="utf-8"))
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    for validator in (jsonschema.Draft202012Validator(schema), jsonschema.Draft7Validator(schema)):
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(data)]
        assert not errors, errors[:5]


def test_source_is_required_only_without_extends():
    validator = jsonschema.Draft202012Validator(file_schema())
    assert [e.message for e in validator.iter_errors({"mapc": 1, "name": "x"})] == [
        "'source' is a required property"]
    assert not list(validator.iter_errors({"mapc": 1, "name": "x", "extends": "harbor-atif"}))
    assert list(validator.iter_errors({"mapc": 1, "name": "x", "extends": "harbor-atif", "sorce": {}}))


def test_schema_o_writes_then_keeps_it_current_and_never_overwrites_a_foreign_file(tmp_path):
    out = tmp_path / ".mapc" / "spec.schema.json"
    first = mapc("schema", "-o", out)
    assert first.returncode == 0, first.stderr
    assert out.read_text() == schema_json() and f"wrote {out}" in first.stderr
    again = mapc("schema", "-o", out, "--json")
    assert json.loads(again.stdout) == {"ok": True, "diagnostics": [], "out": str(out), "status": "current",
                                        "schema": None}
    out.write_text(json.dumps({"title": "mapc spec", "old": True}))  # an older mapc's schema
    assert mapc("schema", "-o", out).returncode == 0 and out.read_text() == schema_json()
    foreign = tmp_path / "mine.json"
    foreign.write_text('{"mine": true}')
    refused = mapc("schema", "-o", foreign)
    assert refused.returncode == 2 and "not a mapc spec schema" in refused.stderr and "--force" in refused.stderr
    assert foreign.read_text() == '{"mine": true}'
    assert mapc("schema", "-o", foreign, "--force").returncode == 0 and foreign.read_text() == schema_json()
    assert sorted(p.name for p in out.parent.iterdir()) == ["spec.schema.json"], "no temporary files left"


def test_init_writes_the_schema_its_spec_points_at(tmp_path):
    proc = mapc("init", "--from", CORPUS_SAMPLE, "-o", "specs/agent.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    spec = tmp_path / "specs" / "agent.yaml"
    assert spec.read_text().startswith(PREFIX + "../.mapc/spec.schema.json\n")
    assert _schema_of(spec).read_text() == schema_json() and "wrote .mapc/spec.schema.json" in proc.stderr
    jsonschema.validate(yaml.safe_load(spec.read_text()), file_schema())
    second = mapc("init", "--from", CORPUS_SAMPLE, "-o", "specs/more/other.yaml", "--no-library", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    other = tmp_path / "specs" / "more" / "other.yaml"
    assert _schema_of(other).resolve() == (tmp_path / PROJECT_SCHEMA).resolve(), "one schema per project"
    jsonschema.validate(yaml.safe_load(other.read_text()), file_schema())
    # the sample lay outside the spec's folder: init copied it next to the spec (its fixture), and says so
    assert "copied the sample to specs/more/" in second.stderr
    assert (other.parent / Path(CORPUS_SAMPLE).name).read_bytes() == Path(CORPUS_SAMPLE).read_bytes()
    assert mapc("check", other, cwd=tmp_path).returncode == 0


def test_init_without_o_writes_nothing_and_says_how_to_get_the_schema(tmp_path):
    proc = mapc("init", "--from", CORPUS_SAMPLE, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith(PREFIX + ".mapc/spec.schema.json\n")
    assert "mapc schema -o .mapc/spec.schema.json" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_schema_location_reuses_the_nearest_and_stays_in_the_project(tmp_path):
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert schema_location(deep, cwd=tmp_path) == tmp_path / PROJECT_SCHEMA
    (tmp_path / "a" / ".mapc").mkdir()
    (tmp_path / "a" / PROJECT_SCHEMA).write_text(schema_json())
    assert schema_location(deep, cwd=tmp_path) == tmp_path / "a" / PROJECT_SCHEMA
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert schema_location(elsewhere, cwd=deep) == elsewhere / PROJECT_SCHEMA, "outside the project: beside it"
