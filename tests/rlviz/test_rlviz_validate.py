"""The built-in `plugin validate`: execution contract, failure taxonomy, report shapes, CLIs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlviz.support import ROOT
from mapc.targets.rlviz.validator import host
from mapc.targets.rlviz.validator.digest import content_digest
from mapc.targets.rlviz.validator.validate import ValidationFailure, load_plugin, validate, validate_adapter

MANIFEST = """api_version: rlviz.dev/v1alpha1
kind: Adapter
name: fake
version: 0.1.0
command:
  - python3
  - adapter.py
capabilities:
  - adapter.probe
  - adapter.stream
"""
# A tiny adapter whose behaviour a test chooses through the BEHAVIOUR constant.
ADAPTER = r'''
import json, os, sys
BEHAVIOUR = {behaviour!r}
LOG = {log!r}
op, _, request_path = sys.argv[1:4]
req = json.load(open(request_path))
if LOG:
    with open(LOG, "a") as fh:
        fh.write(json.dumps({{"cwd": os.getcwd(), "request": request_path,
                              "mode": oct(os.stat(request_path).st_mode & 0o777),
                              "stdin": os.path.realpath("/proc/self/fd/0"),
                              "nobytecode": os.environ.get("PYTHONDONTWRITEBYTECODE")}}) + "\n")
src = req["source"]["path"]
if BEHAVIOUR == "slow":
    import time
    time.sleep(0.4)
if BEHAVIOUR == "modifies plugin" and op == "probe" and not os.path.exists(os.environ["FAKE_PLUGIN"] + "/touched"):
    open(os.environ["FAKE_PLUGIN"] + "/touched", "w").write("changed")
if op == "probe":
    if BEHAVIOUR == "probe garbage":
        print("{{not json")
    elif BEHAVIOUR == "probe extra field":
        print(json.dumps({{"supported": True, "confidence": 1, "format": "f", "score": 3}}))
    elif BEHAVIOUR == "probe unsupported":
        print(json.dumps({{"supported": False, "confidence": 0, "reason": "not mine"}}))
    elif BEHAVIOUR == "probe varies":
        print(json.dumps({{"supported": True, "confidence": 1, "format": "f", "reason": os.getcwd()}}))
    elif BEHAVIOUR == "probe crash":
        sys.stderr.write("boom\n"); sys.exit(3)
    elif BEHAVIOUR == "probe unsupported empty format":
        print(json.dumps({{"supported": False, "confidence": 0, "format": ""}}))
    elif BEHAVIOUR == "probe leading form feed":
        print("\f" + json.dumps({{"supported": True, "confidence": 0.5, "format": "fake-format"}}))
    elif BEHAVIOUR == "probe keys in capitals":
        print(json.dumps({{"SUPPORTED": True, "Confidence": 0.5, "format": "fake-format"}}))
    else:
        print(json.dumps({{"supported": True, "confidence": 0.5, "format": "fake-format"}}))
    sys.exit(0)
records = [
    {{"record_type": "run", "id": "r"}},
    {{"record_type": "case", "id": "c", "run_id": "r"}},
    {{"record_type": "group", "id": "g", "case_id": "c"}},
    {{"record_type": "trajectory", "id": "t", "group_id": "g"}},
    {{"record_type": "event", "id": "e", "trajectory_id": "t", "sequence": 0, "kind": "log",
      "source": {{"path": os.path.basename(src), "line": 1, "byte_offset": 0, "byte_length": 1}}}},
]
if BEHAVIOUR == "stream echoes cwd":
    records[0]["name"] = os.getcwd()
if BEHAVIOUR == "stream bad record":
    records[4]["sequence"] = -1
if BEHAVIOUR == "stream escapes root":
    records[4]["source"]["path"] = "/etc/hostname"
if BEHAVIOUR == "stream nul in source path":
    records[4]["source"]["path"] = "trace\x00.log"
if BEHAVIOUR == "stream sequence past int64":
    records[4]["sequence"] = 2 ** 63
if BEHAVIOUR == "stream timestamp not rfc3339":
    records[4]["timestamp"] = "yesterday"
if BEHAVIOUR == "stream bad second pass":
    counter = os.environ["FAKE_COUNTER"]
    n = int(open(counter).read()) if os.path.exists(counter) else 0
    open(counter, "w").write(str(n + 1))
    if n == 1:
        records[3]["group_id"] = "elsewhere"
if BEHAVIOUR == "stream flood":
    sys.stdout.write("x" * 5000)
if BEHAVIOUR == "stderr flood":
    sys.stderr.write("y" * 5000)
if BEHAVIOUR == "stream hangs":
    while True:
        pass
if BEHAVIOUR == "stream crash":
    sys.stderr.write("cannot map line 3\n"); sys.exit(1)
for rec in records:
    print(json.dumps(rec, separators=(",", ":")))
complete = json.dumps({{"record_type": "complete", "records": len(records), "warnings": 2}}, separators=(",", ":"))
if BEHAVIOUR in ("stream child completes later", "stream child holds output"):
    import subprocess
    sys.stdout.flush()
    wait, text = (0.2, complete) if BEHAVIOUR == "stream child completes later" else (1.5, "")
    # The child waits for this process to exit (its pipe closes then), so its delay counts from the
    # exit however loaded the machine is; a shell starts fast.
    subprocess.Popen(["sh", "-c", f"cat > /dev/null; sleep {{wait}}; printf '%s\\n' '{{text}}'"],
                     stdin=subprocess.PIPE)
    sys.exit(0)
print(complete)
'''


def make_plugin(tmp_path: Path, behaviour: str = "", log: str = "", folder: str = "fake-plugin") -> Path:
    root = tmp_path / folder
    root.mkdir()
    (root / "rlviz-plugin.yaml").write_text(MANIFEST)
    (root / "adapter.py").write_text(ADAPTER.format(behaviour=behaviour, log=log))
    return root


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "data" / "trace.log"
    path.parent.mkdir()
    path.write_text("some trace\n")
    return path


def test_well_behaved_plugin_gives_rlviz_success_report(tmp_path, source):
    plugin = make_plugin(tmp_path)
    report = validate(plugin, source)
    assert list(report.payload()) == ["plugin", "digest", "format", "records", "warnings", "deterministic"]
    assert report.payload() == {"plugin": "fake", "digest": content_digest(plugin, ("python3", "adapter.py")),
                                "format": "fake-format", "records": 5, "warnings": 2, "deterministic": True}


def test_execution_contract_fresh_snapshot_private_request_devnull_no_bytecode(tmp_path, source):
    log = tmp_path / "log.jsonl"
    plugin = make_plugin(tmp_path, log=str(log))
    validate(plugin, source)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 4  # probe x2, stream x2
    assert len({r["cwd"] for r in runs}) == 4 and str(plugin) not in {r["cwd"] for r in runs}
    assert len({r["request"] for r in runs}) == 4
    assert {r["mode"] for r in runs} == {"0o600"}
    assert {r["stdin"] for r in runs} == {"/dev/null"}
    assert {r["nobytecode"] for r in runs} == {"1"}
    for r in runs:  # snapshots and request files are gone afterwards
        assert not os.path.exists(r["cwd"]) and not os.path.exists(r["request"])
        # the request sits beside the plugin copy, in the private scratch folder beside the
        # plugin that the next run sweeps when a kill -9 left it behind (not in the temp folder)
        assert os.path.dirname(r["request"]) == os.path.dirname(r["cwd"])
        scratch = os.path.dirname(r["cwd"])
        assert os.path.dirname(scratch) == str(plugin.parent)
        assert os.path.basename(scratch).startswith(f".{plugin.name}.mapc-scratch-rlviz-plugin-")


def test_request_matches_rlviz_request_schema(source):
    from mapc.targets.rlviz.validator.records import schema_validator

    for op in ("probe", "stream"):
        req = host.new_request(op, source)
        assert list(schema_validator("adapter-request").iter_errors(req)) == []
        assert req["source"]["path"] == os.path.realpath(source)
        assert req["source"]["root"] == os.path.realpath(source.parent)
        assert req["source"]["modified_at"].endswith("Z")


FAILURES = [
    ("probe garbage", dict(phase="probe", kind="protocol", pass_=1)),
    ("probe extra field", dict(phase="probe", kind="protocol", pass_=1)),
    ("probe crash", dict(phase="probe", kind="execution", pass_=1)),
    ("probe varies", dict(phase="probe", kind="nondeterministic", pass_=0)),
    ("probe unsupported", dict(phase="probe", kind="unsupported", pass_=0)),
    ("stream echoes cwd", dict(phase="stream", kind="nondeterministic", pass_=0)),
    ("stream bad record", dict(phase="stream", kind="protocol", pass_=1, line=5, record_type="event",
                               record_id="e", field="sequence")),
    ("stream escapes root", dict(phase="stream", kind="provenance", pass_=1, line=5, field="source.path")),
    ("stream bad second pass", dict(phase="stream", kind="protocol", pass_=2, line=4, field="group_id")),
    ("stream crash", dict(phase="stream", kind="execution", pass_=1)),
    # disagreements with the real RLViz that the differential suite found (tests/conformance), fixed:
    ("probe unsupported empty format", dict(phase="probe", kind="unsupported", pass_=0)),
    ("probe leading form feed", dict(phase="probe", kind="protocol", pass_=1)),  # RLViz trims less than Python
    ("stream nul in source path", dict(phase="stream", kind="provenance", pass_=1, field="source.path")),
    ("stream sequence past int64", dict(phase="stream", kind="protocol", pass_=1)),
    ("stream child holds output", dict(phase="stream", kind="execution", pass_=1)),  # WaitDelay expired
]


@pytest.mark.parametrize("behaviour,expected", FAILURES, ids=[f[0] for f in FAILURES])
def test_each_failure_is_classified_like_rlviz(tmp_path, source, monkeypatch, behaviour, expected):
    monkeypatch.setenv("FAKE_COUNTER", str(tmp_path / "counter"))
    plugin = make_plugin(tmp_path, behaviour)
    with pytest.raises(ValidationFailure) as caught:
        validate(plugin, source)
    failure = caught.value
    for key, value in expected.items():
        assert getattr(failure, key) == value, (key, failure.payload())
    payload = failure.payload()
    assert payload["code"] == "plugin_validate_failed" and list(payload) == sorted(payload)


@pytest.mark.parametrize("behaviour,limits,message", [
    ("stream flood", dict(max_stdout=4096), "stdout exceeded 4096 bytes"),
    ("stderr flood", dict(max_stderr=1024), "stderr exceeded 1024 bytes"),
    ("stream hangs", dict(timeout=0.5), "timed out after 0.5s"),
])
def test_process_limits_fail_the_run(tmp_path, source, behaviour, limits, message):
    plugin = load_plugin(make_plugin(tmp_path, behaviour))
    with pytest.raises(ValidationFailure) as caught:
        validate_adapter(plugin, source, limits=host.Limits(**limits))
    assert message in caught.value.error and caught.value.kind == "execution"


def test_probe_keys_match_case_insensitively_as_in_rlviz(tmp_path, source):
    report = validate(make_plugin(tmp_path, "probe keys in capitals"), source)
    assert report.format == "fake-format"
    assert [f.field for f in report.findings.kept] == ["SUPPORTED", "Confidence"]  # beyond RLViz: the schema's spelling
    with pytest.raises(ValidationFailure) as caught:
        validate(make_plugin(tmp_path, "probe keys in capitals", folder="strict"), source, strict=True)
    assert (caught.value.phase, caught.value.kind, caught.value.beyond) == ("probe", "protocol", True)


def test_output_is_read_until_it_closes_not_until_the_adapter_exits(tmp_path, source):
    plugin = make_plugin(tmp_path, "stream child completes later")
    assert validate(plugin, source).records == 5  # the child's complete record, 0.2 s after the exit, counts
    with pytest.raises(ValidationFailure, match="WaitDelay expired") as caught:
        validate(plugin, source, limits=host.Limits(wait_delay=0.05))
    assert (caught.value.phase, caught.value.kind) == ("stream", "execution")


def test_the_whole_validation_has_rlviz_budget(tmp_path, source):
    plugin = make_plugin(tmp_path, "slow")  # each run takes at least 0.4 s: four runs do not fit in 1.2 s
    with pytest.raises(ValidationFailure, match="timed out") as caught:
        validate(plugin, source, limits=host.Limits(total=1.2))
    assert caught.value.kind == "execution" and caught.value.pass_ in (1, 2)
    assert validate(plugin, source).records == 5  # within RLViz's 30 s


def test_a_plugin_that_changes_during_validation_fails(tmp_path, source, monkeypatch):
    plugin = make_plugin(tmp_path, "modifies plugin")
    monkeypatch.setenv("FAKE_PLUGIN", str(plugin))
    with pytest.raises(ValidationFailure, match="plugin changed after it was loaded") as caught:
        validate(plugin, source)
    assert (caught.value.phase, caught.value.kind, caught.value.pass_) == ("probe", "execution", 2)


def test_missing_source_and_bad_manifest(tmp_path):
    plugin = make_plugin(tmp_path)
    with pytest.raises(ValidationFailure) as caught:
        validate(plugin, tmp_path / "missing.trace")
    assert (caught.value.phase, caught.value.kind) == ("source", "provenance")
    (plugin / "rlviz-plugin.yaml").write_text(MANIFEST + "name: twice\n")
    with pytest.raises(ValidationFailure, match="duplicate field") as caught:
        validate(plugin, tmp_path)
    assert caught.value.phase is None and set(caught.value.payload()) == {"code", "error"}


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "mapc.targets.rlviz.validator.cli", *args], capture_output=True, text=True,
                          timeout=120, **kw)


def test_standin_cli_mirrors_rlviz_output_and_exit_codes(tmp_path, source):
    plugin = make_plugin(tmp_path)
    ok = _cli("plugin", "validate", "--json", str(plugin), str(source))
    assert ok.returncode == 0 and ok.stderr == ""
    assert json.loads(ok.stdout)["records"] == 5 and ok.stdout.count("\n") == 1
    human = _cli("plugin", "validate", str(plugin), str(source))
    assert human.stdout == "Validated fake: 5 deterministic records (fake-format)\n"
    bad = make_plugin(tmp_path, "stream bad record", folder="bad-plugin")
    fail = _cli("plugin", "validate", "--json", str(bad), str(source))
    assert fail.returncode == 1 and fail.stdout == ""
    diag = json.loads(fail.stderr)
    assert diag == {"code": "plugin_validate_failed", "error": diag["error"], "field": "sequence", "kind": "protocol",
                    "line": 5, "pass": 1, "phase": "stream", "record_id": "e", "record_type": "event"}
    assert fail.stderr.index('"code"') < fail.stderr.index('"error"') < fail.stderr.index('"field"')
    usage = _cli("plugin", "validate", str(plugin))
    assert usage.returncode == 2 and "Usage" in usage.stderr


def test_beyond_rlviz_findings_warn_and_fail_only_with_strict(tmp_path, source):
    plugin = make_plugin(tmp_path, "stream timestamp not rfc3339")  # RLViz keeps any string; its schema does not
    mapc = [sys.executable, "-m", "mapc.cli", "validate", "--target", "rlviz", str(plugin), str(source)]
    lenient = subprocess.run(mapc, capture_output=True, text=True, timeout=120)
    assert lenient.returncode == 0, lenient.stderr
    assert "warning (beyond RLViz)" in lenient.stdout and "timestamp: not an RFC 3339 date-time" in lenient.stdout
    strict = subprocess.run(mapc + ["--strict"], capture_output=True, text=True, timeout=120)
    assert strict.returncode == 1 and "beyond RLViz" in strict.stderr and "field timestamp" in strict.stderr
    report = json.loads(subprocess.run(mapc + ["--json"], capture_output=True, text=True, timeout=120).stdout)
    assert report["records"] == 5 and report["beyond_rlviz_total"] == 1
    assert report["beyond_rlviz"][0] == {"message": report["beyond_rlviz"][0]["message"], "line": 5,
                                         "record_type": "event", "record_id": "e", "field": "timestamp"}
    standin = _cli("plugin", "validate", "--json", str(plugin), str(source))  # RLViz's verdict and report shape
    assert standin.returncode == 0 and set(json.loads(standin.stdout)) == {
        "plugin", "digest", "format", "records", "warnings", "deterministic"}
    assert "warning (beyond RLViz)" in standin.stderr


def test_mapc_validate_uses_testdata_cases_without_sources(built):
    plugin, source = built["nemo-gym-blackjack"]
    run = subprocess.run([sys.executable, "-m", "mapc.cli", "validate", "--target", "rlviz", str(plugin), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["ok"] is True and payload["results"][0]["source"] == f"testdata/{source.name}"
    assert payload["results"][0]["records"] == 54
    single = subprocess.run([sys.executable, "-m", "mapc.cli", "validate", "--target", "rlviz", str(plugin),
                             str(source), "--json"], capture_output=True, text=True, timeout=120)
    assert single.returncode == 0
    # the envelope (docs/cli.md), then RLViz's own report, its keys in RLViz's order
    assert list(json.loads(single.stdout)) == ["ok", "diagnostics", "target", "out", "source", "plugin", "digest",
                                               "format", "records", "warnings", "deterministic"]


def test_mapc_validate_reports_a_failing_source(built, tmp_path):
    plugin, _ = built["nemo-gym-blackjack"]
    other = ROOT / "examples/verifiers-math/results.jsonl"
    run = subprocess.run([sys.executable, "-m", "mapc.cli", "validate", "--target", "rlviz", str(plugin), str(other)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "FAIL" in run.stderr and "does not support source" in run.stderr and "kind unsupported" in run.stderr
