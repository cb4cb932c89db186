"""The mapc command line: exit codes, --json, and never a traceback for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from mapc.core.version import __version__
from shared_paths import UPSTREAM

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"
CANONICAL_SCHEMA = UPSTREAM / "rlviz" / "schemas" / "v1alpha1" / "canonical-record.schema.json"


def mapc(*args, cwd=None, env=None, input=None):
    return subprocess.run(
        [sys.executable, "-m", "mapc.cli", *map(str, args)],
        cwd=cwd or ROOT, capture_output=True, timeout=120, env=env, input=input,
    )


def test_version():
    proc = mapc("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"mapc {__version__}"


def test_schema_prints_the_spec_schema_and_it_accepts_the_example():
    proc = mapc("schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    import yaml

    jsonschema.validate(yaml.safe_load((EXAMPLE / "spec.yaml").read_text()), schema)


def test_run_prints_canonical_records_that_pass_the_rlviz_schema():
    proc = mapc("run", EXAMPLE / "spec.yaml", EXAMPLE / "results.jsonl")
    assert proc.returncode == 0, proc.stderr.decode()
    validator = jsonschema.Draft202012Validator(json.loads(CANONICAL_SCHEMA.read_text()))
    lines = proc.stdout.decode().splitlines()
    records = [json.loads(x) for x in lines]
    for rec in records:
        errors = list(validator.iter_errors(rec))
        assert not errors, (rec, errors[0].message)
    kinds = [r["record_type"] for r in records]
    assert kinds[0] == "run" and kinds[-1] == "complete" and kinds.count("complete") == 1
    assert records[-1]["records"] == len(records) - 1
    assert kinds.count("case") == 5 and kinds.count("trajectory") == 15
    ids = [r["id"] for r in records if "id" in r]
    assert len(ids) == len(set(ids))


def test_plain_run_skips_the_command_tree_and_answers_as_with_options():
    """`mapc run SPEC SOURCE` runs the `run` command without Typer building every command
    (and its pydantic adapters): same bytes, messages and exit status as with an option."""
    for source in (EXAMPLE / "results.jsonl", EXAMPLE / "no-such-trace.jsonl"):
        plain = subprocess.run([sys.executable, "-X", "importtime", "-m", "mapc.cli", "run", EXAMPLE / "spec.yaml",
                                source], cwd=ROOT, capture_output=True, timeout=120)
        full = mapc("run", "--jobs", "0", EXAMPLE / "spec.yaml", source)
        imported = {line.rsplit("|", 1)[-1].strip() for line in plain.stderr.decode().splitlines()
                    if line.startswith("import time:")}
        assert "mapc.api" in imported and "typer._adapters" not in imported and "pydantic" not in imported
        messages = [line for line in plain.stderr.decode().splitlines() if not line.startswith("import time:")]
        assert (plain.returncode, plain.stdout, messages) == (full.returncode, full.stdout,
                                                              full.stderr.decode().splitlines())
    assert full.returncode == 2 and plain.stdout == b""  # a source that is not there: a usage error


def test_run_json_mode_and_dry_run_errors():
    proc = mapc("run", "--json", EXAMPLE / "spec.yaml", EXAMPLE / "results.jsonl")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0 and payload["ok"] and payload["records"][-1]["record_type"] == "complete"
    proc = mapc("run", EXAMPLE / "spec.yaml", EXAMPLE / "no-such-trace.jsonl")
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "not found" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_target_is_a_usage_error_listing_known_targets(tmp_path):
    proc = mapc("build", EXAMPLE / "spec.yaml", "--target", "nope", "-o", tmp_path / "out")
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "unknown target 'nope'" in err and "known targets" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "content",
    [b"\x00\x01\x02binary", b"\xff\xfe not utf-8", b"- a list\n- not a mapping\n", b"key: [unclosed\n", b""],
)
def test_garbage_specs_get_diagnostics_not_tracebacks(tmp_path, content):
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(content)
    proc = mapc("check", spec)
    assert proc.returncode == 1
    assert b"Traceback" not in proc.stderr and b"error[" in proc.stderr
    proc = mapc("check", "--json", spec)
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["diagnostics"]


def test_missing_and_directory_specs(tmp_path):
    """A spec path that is not a file is a usage error (exit 2) from every command (D98)."""
    for path, said in ((tmp_path / "nope.yaml", "spec not found"), (tmp_path, "spec is a folder")):
        for command in (["check"], ["test"], ["explain"], ["build", "-t", "rlviz", "-o", tmp_path / "o"],
                        ["build", "--check", "-t", "rlviz", "-o", tmp_path / "o"], ["run", path]):
            proc = mapc(*command[:1], "--json", path, *command[1:])
            assert proc.returncode == 2, (command, proc.stdout)
            diag = json.loads(proc.stdout)["diagnostics"][0]
            assert diag["code"] == "usage" and diag["message"].startswith(said)


def test_usage_errors_exit_2():
    assert mapc("build").returncode == 2
    assert mapc("frobnicate").returncode == 2


def test_check_ok_exit_0():
    proc = mapc("check", EXAMPLE / "spec.yaml")
    assert proc.returncode == 0 and b"valid mapc spec" in proc.stderr


def test_internal_errors_are_one_line_without_traceback(tmp_path):
    env = dict(os.environ)
    env.pop("MAPC_DEBUG", None)
    # a spec path that makes stat() fail with ENAMETOOLONG exercises the OS-error path
    proc = mapc("check", "x" * 5000 + ".yaml", env=env)
    assert proc.returncode in (1, 2)
    assert b"Traceback" not in proc.stderr


def test_a_closed_pipe_is_not_an_error():
    # `mapc run ... | head -c 10`: the output (>64 KiB) cannot fit in the pipe buffer
    proc = subprocess.Popen([sys.executable, "-m", "mapc.cli", "run", str(EXAMPLE / "spec.yaml"),
                             str(EXAMPLE / "results.jsonl")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(10) == b'{"record_t'
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert b"error" not in err and b"Traceback" not in err


def test_runtime_prints_each_targets_runtime_hash_and_shows_one():
    from mapc.targets import get_target

    listed = mapc("runtime")
    assert listed.returncode == 0
    for target in ("rlviz", "relai", "cap-evolve"):
        shared = get_target(target).shared_runtime()
        assert f"{shared.sha256}  mapc {__version__} {target} runtime (" in listed.stdout.decode()
    payload = json.loads(mapc("runtime", "--target", "rlviz", "--json").stdout)
    assert [r["target"] for r in payload["runtimes"]] == ["rlviz"]
    files = payload["runtimes"][0]["files"]
    assert [f["path"] for f in files] == [p for p, _ in get_target("rlviz").shared_runtime().files]
    from mapc.core.runtime_files import manifest_sha256

    assert manifest_sha256([(f["path"], f["sha256"]) for f in files]) == payload["runtimes"][0]["sha256"]
    shown = mapc("runtime", "--target", "rlviz", "--show")
    assert shown.returncode == 0 and shown.stdout.decode() == get_target("rlviz").shared_runtime().text
    bad = mapc("runtime", "--show")
    assert bad.returncode == 2 and b"--target" in bad.stderr and b"Traceback" not in bad.stderr


@pytest.mark.parametrize("args, says", [
    (["init", "trace.jsonl"], "mapc init takes the sample after --from, not as an argument; run: "
                              "mapc init --from trace.jsonl -o spec.yaml"),
    (["init", "-o", "my spec.yaml"], "mapc init needs a sample trace to draft the spec from; run: "
                                     "mapc init --from SAMPLE -o 'my spec.yaml'"),
    (["init", "a.jsonl", "--from", "b.jsonl"], "unexpected argument 'a.jsonl' (the sample is 'b.jsonl'); run: "
                                               "mapc init --from b.jsonl -o spec.yaml"),
])
def test_init_without_from_says_the_command_to_run(args, says, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from mapc.cli import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {says}"
    assert list(tmp_path.iterdir()) == [], "nothing is written"
