"""`mapc init --from SAMPLE`: on every corpus file, the proposed spec builds for
RLViz and passes the built-in validation on that very sample at once; the CLI
never overwrites, writes atomically, and reports bad samples clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from library_support import AUXILIARY, CORPUS, PAIRS, build_all, corpus_files

from mapc.tools.init import init_spec, write_spec
from mapc.core.safeio import allowing
from mapc.spec.library import library_specs

JSON_FILES = corpus_files()  # JSON, JSON Lines and the CSV table


def _slug(rel: str) -> str:
    return rel.replace("/", "__")


@pytest.fixture(scope="session")
def drafts(tmp_path_factory, corpus):
    """`mapc init --no-library` on every JSON corpus file, each draft built for rlviz.

    The build validates the draft on its fixture, which is the sample itself.
    """
    base = tmp_path_factory.mktemp("draft")
    jobs, made = [], []
    for rel in JSON_FILES:
        folder = base / rel.replace("/", "__")
        folder.mkdir(parents=True)
        draft = init_spec(CORPUS / rel, spec_dir=folder, use_library=False)
        write_spec(draft.text, folder / "spec.yaml")
        jobs.append((folder / "spec.yaml", "rlviz", folder / "out"))
        made.append(draft)
    with allowing([CORPUS]):  # the drafts' fixtures are the corpus samples, outside the spec's folder
        results = build_all(jobs)
    return {rel: (draft, result) for rel, draft, result in zip(JSON_FILES, made, results)}


@pytest.mark.parametrize("rel", JSON_FILES)
def test_init_draft_from_structure_builds_and_validates_on_the_sample(drafts, rel):
    draft, result = drafts[rel]
    assert draft.library is None and "# TODO" in draft.text
    assert not [n for n in draft.notes if n.startswith("simplified")], draft.notes
    assert result.ok, (draft.text, [d.format() for d in result.diagnostics],
                       result.validation and result.validation.text)
    assert result.validation.payload and Path(rel).name in result.validation.text
    probe = result.spec.source.probe
    assert probe.require or probe.when is not None, "a draft probe checks something"


@pytest.mark.parametrize("rel", JSON_FILES)
def test_init_proposal_validates_on_the_sample(tmp_path, drafts, corpus_validations, rel):
    """What `mapc init` proposes: the library spec that recognises the sample, else the draft.

    A proposal that extends a library spec maps exactly as that library spec
    does (same source and records), and the library spec was validated on this
    very file by the built-in validator (test_library_specs); a proposal
    without a library is the structural draft, built and validated above.
    """
    from mapc.spec import load_spec

    expected = {r: name for name, r in PAIRS}
    draft = init_spec(CORPUS / rel, spec_dir=tmp_path)
    assert draft.library == expected.get(rel)
    if draft.library is None:
        assert rel in AUXILIARY
        assert draft.text == init_spec(CORPUS / rel, spec_dir=tmp_path, use_library=False).text
        assert drafts[rel][1].ok  # the same draft, built and validated
        return
    assert f"extends: {draft.library}\n" in draft.text
    (tmp_path / "spec.yaml").write_text(draft.text)
    with allowing([CORPUS]):  # the fixture is the sample, outside the spec's folder
        proposal, diags = load_spec(tmp_path / "spec.yaml")
    assert proposal is not None, [d.format() for d in diags]
    assert any("--allow-read" in note for note in draft.notes), draft.notes
    library, _ = load_spec(library_specs()[draft.library])
    assert (proposal.source, proposal.levels, proposal.events) == (library.source, library.levels, library.events)
    assert [Path(f.resolved) for f in proposal.fixtures] == [(CORPUS / rel).resolve()]
    report = corpus_validations[(draft.library, rel)]
    assert report.get("deterministic") is True, report


def test_init_drafts_map_the_obvious_fields(drafts):
    """Role-bearing event arrays get generation/observation/message rules; rewards become signals."""
    text = drafts["tau-bench-historical/gpt-4o-airline.truncated.json"][0].text
    assert 'each: "traj"' in text and "kind: generation" in text and "kind: observation" in text
    assert 'reward: "reward"' in text
    letta = drafts["letta-evals-results/results.jsonl"][0].text
    assert "container: jsonl" in letta and '{each: "result.trajectory", as: level0}' in letta
    assert 'timestamp: "iso8601(date)"' in letta


def test_init_never_copies_values_into_the_draft(tmp_path):
    secret = "s3cr3t-value-7d1f"
    rows = [{"run_id": secret, "messages": [{"role": "user", "content": secret}, {"role": "assistant", "content": secret}],
             "reward": 0.25, "note": secret} for _ in range(3)]
    sample = tmp_path / "traces.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    assert secret not in draft.text and "0.25" not in draft.text
    assert "messages" in draft.text and "reward" in draft.text


def test_init_reads_a_bounded_prefix_of_a_large_sample(tmp_path):
    from mapc.api import build

    events = [{"type": "step", "timestamp": "2025-01-02T10:00:00Z", "content": "x" * 200, "reward": i % 2}
              for i in range(1500)]  # about 400 KB: past the 256 KiB profile bound
    sample = tmp_path / "big.json"
    sample.write_text(json.dumps({"session": "s1", "events": events}))
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    (tmp_path / "spec.yaml").write_text(draft.text)
    result = build(tmp_path / "spec.yaml", "rlviz", tmp_path / "out")
    assert result.ok, [d.format() for d in result.diagnostics]
    assert 'each: "events"' in draft.text, "the cut-off document is profiled as far as the bound goes"
    assert "big.json" in result.validation.text  # validated on the whole sample


# -- the command line -------------------------------------------------------------------
def _mapc(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mapc.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_init_cli_writes_then_refuses_to_overwrite(tmp_path):
    sample = CORPUS / "tau2-bench-results/airline_run1.truncated.json"
    out = tmp_path / "spec.yaml"
    first = _mapc("init", "--from", str(sample), "-o", str(out))
    assert first.returncode == 0, first.stderr
    assert "extends: tau2-bench-results" in out.read_text()
    out.write_text("# my edits\n")
    second = _mapc("init", "--from", str(sample), "-o", str(out))
    assert second.returncode == 2 and "already exists" in second.stderr and "--force" in second.stderr
    assert out.read_text() == "# my edits\n", "an existing spec is never overwritten"
    copied = tmp_path / sample.name  # the fixture, next to the spec (issue 30: a build that works)
    assert copied.read_bytes() == sample.read_bytes()
    assert not list(tmp_path.glob("*.expected.ndjson")), "the draft's records are the user's to accept"
    expected = tmp_path / "airline_run1.truncated.json.expected.ndjson"
    expected.write_text("reviewed\n")  # as `mapc test --update` would have written them
    forced = _mapc("init", "--from", str(sample), "-o", str(out), "--force", "--no-library")
    assert forced.returncode == 0 and "# TODO" in out.read_text()
    assert expected.read_text() == "reviewed\n", "--force overwrites the spec only"
    assert copied.read_bytes() == sample.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".mapc", "airline_run1.truncated.json",
                                                          "airline_run1.truncated.json.expected.ndjson",
                                                          "spec.yaml"], "no temporary files left behind"
    assert os.listdir(tmp_path / ".mapc") == ["spec.schema.json"], "the schema the spec's modeline names"
    mask = os.umask(0)
    os.umask(mask)
    for written in (out, tmp_path / ".mapc" / "spec.schema.json"):  # files to edit and commit: not 0600
        assert written.stat().st_mode & 0o777 == 0o666 & ~mask, written


def test_init_cli_prints_the_spec_without_o(tmp_path):
    proc = _mapc("init", "--from", str(CORPUS / "harbor-atif/openhands-hello-world.trajectory.json"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# yaml-language-server") and "extends: harbor-atif" in proc.stdout
    assert os.listdir(tmp_path) == []


def test_init_cli_json(tmp_path):
    proc = _mapc("init", "--json", "--from", str(CORPUS / "letta-evals-results/header.json"))
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0 and payload["ok"] is True and payload["library"] is None
    assert payload["spec"].startswith("# yaml-language-server")


@pytest.mark.parametrize("sample, message", [
    ("no-such-file.json", "sample not found"),
    ("", "sample is a folder, not a file"),
])
def test_init_cli_explains_bad_samples(sample, message):
    """A sample path that is not a file is a usage error (D98)."""
    proc = _mapc("init", "--from", str(CORPUS / sample) if sample else str(CORPUS))
    assert proc.returncode == 2 and message in proc.stderr and proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr


def test_init_reads_a_gzipped_csv_sample(tmp_path):
    """The probe and the profile read gzip by its magic bytes: the library spec is proposed."""
    import gzip

    sample = tmp_path / "results.csv.gz"
    sample.write_bytes(gzip.compress((CORPUS / "agentlab-browsergym/result_df_trial_1_of_3.csv").read_bytes()))
    assert init_spec(sample, spec_dir=tmp_path).library == "agentlab-result-df"
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    assert "  container: csv\n" in draft.text and "    cum_reward: number\n" in draft.text
    assert "    terminated: boolean\n" in draft.text and "    cum_raw_reward: integer\n" in draft.text


def test_specs_cli_lists_the_library():
    proc = _mapc("specs")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAME", "FORMAT", "CONTAINER", "DESCRIPTION"]
    assert any(line.startswith("inspect-ai-eval-log ") for line in lines)
    listed = json.loads(_mapc("specs", "--json").stdout)["specs"]
    assert len(listed) == len(lines) - 1 and all(e["format"] and e["summary"] for e in listed)


def test_init_relaxes_a_probe_key_that_later_records_lack(tmp_path):
    """Keys present in every profiled line may still be missing further down: the draft must map it all."""
    from mapc.api import build

    rows = [{"session": "s", "step": i, "role": "user", "content": "hi", "reward": 1} for i in range(260)]
    del rows[250]["session"]  # beyond the lines the profile reads
    sample = tmp_path / "late.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    assert any("probe relaxed" in note for note in draft.notes), draft.notes
    assert "session" not in draft.text.split("records:")[0]
    (tmp_path / "spec.yaml").write_text(draft.text)
    result = build(tmp_path / "spec.yaml", "rlviz", tmp_path / "out")
    assert result.ok, ([d.format() for d in result.diagnostics], result.validation and result.validation.text)


def test_init_says_when_sample_lines_are_not_json(tmp_path):
    sample = tmp_path / "mixed.jsonl"
    sample.write_text('{"a": 1}\n{not json\n{"a": 2}\n')
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    assert "invalid_lines: skip" in draft.text
    assert any("1 line(s) of mixed.jsonl are not JSON" in note for note in draft.notes)


def _signals(draft_text: str, folder: Path, sample: Path) -> list[tuple[str, object]]:
    import mapc

    (folder / "spec.yaml").write_text(draft_text)
    result = mapc.run(mapc.load_spec(folder / "spec.yaml"), sample)
    assert result.ok, result.error
    return [(r["trajectory_id"], r["value"]) for r in result.records if r["record_type"] == "signal"]


def test_init_maps_the_reward_of_a_final_jsonl_line(tmp_path):
    """Chat turns, one a line, then a reward line: the trajectory sees no line, so the draft maps
    the reward with a rule of its own (a trajectory signal there mapped nothing, silently)."""
    turns = [{"episode_id": "e", "role": "user", "content": "hi"},
             {"episode_id": "e", "role": "assistant", "content": "hello"},
             {"episode_id": "e", "type": "reward", "reward": 0.8}]
    sample = tmp_path / "episode.jsonl"
    sample.write_text("".join(json.dumps(t) + "\n" for t in turns))
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    assert not [n for n in draft.notes if n.startswith("simplified")], draft.notes
    assert "  trajectory:" not in draft.text and "kind: reward" in draft.text
    assert _signals(draft.text, tmp_path, sample) == [("traj@episode.jsonl", 0.8)]


def test_init_takes_jsonl_lines_that_all_carry_a_reward_for_rollouts(tmp_path):
    rows = [{"prompt": "2+2", "completion": "4", "reward": 1.0}, {"prompt": "3+3", "completion": "7", "reward": 0.0}]
    sample = tmp_path / "rollouts.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    assert "  case:\n    each: \"@\"" in draft.text, draft.text
    assert [value for _, value in _signals(draft.text, tmp_path, sample)] == [1.0, 0.0]


def test_init_printing_the_spec_gives_next_commands_that_read_a_sample_left_outside(tmp_path):
    """Without -o nothing is copied: the commands init prints carry MAPC_ALLOW_READ for the
    sample's folder (`mapc run` has no --allow-read), and each works as printed once the spec
    is saved as they say."""
    import shlex

    (tmp_path / "work").mkdir()
    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    (tmp_path / "chat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    made = _mapc("init", "--from", "../chat.jsonl", "--json", cwd=tmp_path / "work")
    payload = json.loads(made.stdout)
    assert made.returncode == 0 and payload["fixture"] == "../chat.jsonl"
    (tmp_path / "work" / "spec.yaml").write_text(payload["spec"])
    assert [c.split(" mapc ")[1].split()[0] for c in payload["next"]] == ["run", "test", "build"]
    for command in payload["next"]:
        env, _, rest = command.partition(" ")
        name, _, value = env.partition("=")
        assert name == "MAPC_ALLOW_READ" and Path(shlex.split(value)[0]) == tmp_path.resolve()
        ran = subprocess.run([sys.executable, "-m", "mapc.cli", *shlex.split(rest)[1:]], cwd=tmp_path / "work",
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "MAPC_ALLOW_READ": shlex.split(value)[0]})
        assert ran.returncode == 0, (command, ran.stderr)


def test_init_fixture_placement_copies_bounded_and_never_over_another_file(tmp_path, monkeypatch):
    """mapc.tools.init_fixture: a sample outside the spec's folder is copied next to it with its stem's
    sidecar folder (regular files only, no symlink); a different file of that name is an error,
    never overwritten; past the size bound the sample stays where it is, read with allow-read."""
    from mapc.tools import init_fixture
    from mapc.tools.init import InitError

    data, specs = tmp_path / "data", tmp_path / "specs"
    (data / "s1" / "subagents").mkdir(parents=True)
    specs.mkdir()
    (data / "s1.jsonl").write_text('{"a": 1}\n')
    (data / "s1" / "subagents" / "agent-1.jsonl").write_text('{"a": 2}\n')
    (data / "s1" / "subagents" / "link.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    plan = init_fixture.place(data / "s1.jsonl", specs, copy=True)
    assert plan.fixture == "s1.jsonl" and plan.allow_read is None
    assert [dest.relative_to(specs).as_posix() for _, dest in plan.copies] == [
        "s1.jsonl", "s1/subagents/agent-1.jsonl"]
    init_fixture.copy_all(plan)
    assert (specs / "s1" / "subagents" / "agent-1.jsonl").read_text() == '{"a": 2}\n'
    assert init_fixture.place(data / "s1.jsonl", specs, copy=True).copies  # the same files again: fine
    (specs / "s1.jsonl").write_text("mine\n")
    with pytest.raises(InitError, match="exists and is not the sample"):
        init_spec(data / "s1.jsonl", spec_dir=specs, copy_sample=True)
    assert (specs / "s1.jsonl").read_text() == "mine\n"
    monkeypatch.setattr(init_fixture, "MAX_COPY_BYTES", 4)
    big = init_fixture.place(data / "s1.jsonl", tmp_path / "other", copy=True)
    assert big.copies == [] and big.fixture == "../data/s1.jsonl" and big.allow_read == data.resolve()
    assert "too large to copy" in big.note
