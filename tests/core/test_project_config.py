"""The project configuration ([tool.mapc] in pyproject.toml, or mapc.toml): where it is found,
what commands with no SPEC do with it, and a clear located error for every mistake in it
(tests/cases/bad_configs: each case's configuration and the diagnostics it must give).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from golden import assert_golden
from mapc.pipeline.project import ConfigError, find_config, load_project, read_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"
BAD = ROOT / "tests" / "cases" / "bad_configs"
BAD_CASES = sorted(p for p in BAD.iterdir() if p.is_dir())


def mapc(*args, cwd):
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def config_of(case: Path) -> Path:
    return next(case / name for name in ("mapc.toml", "pyproject.toml") if (case / name).is_file())


@pytest.mark.parametrize("case", BAD_CASES, ids=[p.name for p in BAD_CASES])
def test_a_bad_configuration_is_a_located_usage_error(case: Path):
    with pytest.raises(ConfigError) as caught:
        read_config(config_of(case))
    found = [{**d.to_dict(), "file": Path(d.file).name} for d in caught.value.diagnostics]
    assert all(d.get("line") for d in found), found
    assert_golden(case / "expected.json", json.dumps(found, indent=2, ensure_ascii=False) + "\n")
    proc = mapc("build", "--check", "--json", cwd=case)  # what a user sees: exit 2, the same diagnostics
    assert proc.returncode == 2, proc.stdout
    shown = json.loads(proc.stdout)
    assert set(shown) == {"ok", "diagnostics"}
    assert [{**d, "file": Path(d["file"]).name} for d in shown["diagnostics"]] == found
    text = mapc("test", cwd=case)
    assert text.returncode == 2 and "Traceback" not in text.stderr
    assert f"{config_of(case).name}:{found[0]['line']}" in text.stderr


def project(tmp_path: Path, config: str, name: str = "mapc.toml") -> Path:
    """A repository with the example spec in specs/ and the given configuration."""
    (tmp_path / ".git").mkdir(parents=True)
    shutil.copytree(EXAMPLE, tmp_path / "specs")
    (tmp_path / name).write_text(config, encoding="utf-8")
    return tmp_path


TWO_BUILDS = """
[[tool.mapc.build]]
spec = "specs/spec.yaml"
target = "rlviz"
output = "plugins/verifiers"

[[tool.mapc.build]]
spec = "specs/spec.yaml"
target = "cap-evolve"
output = "adapters/verifiers"
"""


def test_found_walking_up_to_the_repository_root_and_no_further(tmp_path):
    root = project(tmp_path / "repo", "[project]\nname = 'x'\n" + TWO_BUILDS, "pyproject.toml")
    deep = root / "specs" / "deeper"
    deep.mkdir()
    assert find_config(deep) == root / "pyproject.toml"
    loaded = load_project(deep)
    assert [(b.target, b.output.resolve()) for b in loaded.builds] == [
        ("rlviz", root / "plugins" / "verifiers"), ("cap-evolve", root / "adapters" / "verifiers")]
    assert [b.spec.resolve() for b in loaded.specs()] == [root / "specs" / "spec.yaml"]  # one per spec
    # a configuration above the repository root is not the repository's
    (tmp_path / "mapc.toml").write_text('[[build]]\nspec = "x.yaml"\ntarget = "rlviz"\noutput = "o"\n')
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.mapc]: passed over
    assert find_config(deep) is None


def test_mapc_toml_wins_over_pyproject_in_the_same_folder(tmp_path):
    root = project(tmp_path, TWO_BUILDS, "pyproject.toml")
    (root / "mapc.toml").write_text('[[build]]\nspec = "specs/spec.yaml"\ntarget = "relai"\noutput = "."\n')
    assert find_config(root) == root / "mapc.toml"
    assert [b.target for b in load_project(root).builds] == ["relai"]


def test_a_symbolic_link_out_of_the_project_is_refused(tmp_path):
    root = project(tmp_path / "repo", '[[build]]\nspec = "specs/spec.yaml"\ntarget = "rlviz"\noutput = "link/out"\n')
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", root / "link")
    with pytest.raises(ConfigError) as caught:
        load_project(root)
    (diag,) = caught.value.diagnostics
    assert (diag.code, diag.line, diag.path) == ("config_outside", 4, "build[0].output")


def test_build_check_and_test_act_on_every_configured_build(tmp_path):
    root = project(tmp_path, "[project]\nname = 'x'\n" + TWO_BUILDS, "pyproject.toml")
    sub = root / "specs"  # run from a subfolder: paths stay relative to the configuration
    stale = mapc("build", "--check", "--json", cwd=sub)
    assert stale.returncode == 1
    envelope = json.loads(stale.stdout)
    assert [r["target"] for r in envelope["results"]] == ["rlviz", "cap-evolve"]
    assert {d["code"] for r in envelope["results"] for d in r["diagnostics"]} == {"output_missing"}
    built = mapc("build", cwd=sub)
    assert built.returncode == 0, built.stderr
    assert "built rlviz adapter in ../plugins/verifiers" in built.stderr
    assert built.stderr.rstrip().endswith("mapc build: 2 of 2 build(s) ok")
    assert (root / "adapters" / "verifiers" / "adapter.py").is_file()
    assert mapc("build", "--check", cwd=sub).returncode == 0
    only = json.loads(mapc("build", "--check", "--target", "cap-evolve", "--json", cwd=sub).stdout)
    assert [r["target"] for r in only["results"]] == ["cap-evolve"]
    (root / "plugins" / "verifiers" / "README.md").write_text("edited\n")
    again = mapc("build", "--check", "--format", "github", cwd=root)
    assert again.returncode == 1
    assert again.stdout.startswith("::error file=plugins/verifiers/README.md,title=mapc build%3A output_edited::")
    tested = mapc("test", "--json", cwd=root)
    assert tested.returncode == 0 and len(json.loads(tested.stdout)["results"]) == 1  # one spec, tested once
    assert mapc("check", cwd=root).returncode == 0


def test_options_naming_one_build_need_a_spec_and_no_configuration_is_a_usage_error(tmp_path):
    root = project(tmp_path / "repo", TWO_BUILDS.replace("tool.mapc.", ""))
    refused = mapc("build", "-o", "plugins/x", cwd=root)
    assert refused.returncode == 2 and "--out names one build's files" in refused.stderr
    assert mapc("test", "--against", "plugins/x", cwd=root).returncode == 2
    (tmp_path / "bare" / ".git").mkdir(parents=True)
    none = mapc("build", "--check", cwd=tmp_path / "bare")
    assert none.returncode == 2 and "no project configuration found" in none.stderr


def test_allow_read_of_a_build_lets_its_spec_read_there(tmp_path):
    root = project(tmp_path, "")
    data = root / "data"
    data.mkdir()
    shutil.copy(root / "specs" / "results.jsonl", data / "recorded.jsonl")
    spec = root / "specs" / "spec.yaml"  # its agent replays a recorded trace kept outside its folder
    text = spec.read_text().replace("replay: results.jsonl", "replay: ../data/recorded.jsonl")
    spec.write_text(text.split("\ntests:\n", 1)[0] + "\n")
    base = '[[build]]\nspec = "specs/spec.yaml"\ntarget = "cap-evolve"\noutput = "adapters/v"\n'
    (root / "mapc.toml").write_text(base)
    refused = mapc("build", "--no-validate", "--json", cwd=root)
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["results"][0]["diagnostics"][0]["code"] == "invalid_replay_path"
    (root / "mapc.toml").write_text(base + 'allow_read = ["data"]\n')
    built = mapc("build", "--no-validate", cwd=root)
    assert built.returncode == 0, built.stderr
    assert (root / "adapters" / "v" / "traces" / "recorded.jsonl").is_file()


def test_the_pre_commit_hooks_act_on_the_configuration_as_the_readme_shows(tmp_path):
    """The hooks' entries with no args (the README's snippet) check every configured build."""
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    readme = (ROOT / "README.md").read_text()
    config = yaml.safe_load(readme.split("# .pre-commit-config.yaml\n", 1)[1].split("```", 1)[0])
    readme_hooks = {h["id"]: h for h in config["repos"][0]["hooks"]}
    assert set(readme_hooks) == {"mapc-test", "mapc-check"}
    assert all("args" not in h for h in readme_hooks.values())  # the configuration says what to check
    toml = readme.split("# pyproject.toml\n", 1)[1].split("```", 1)[0]
    root = project(tmp_path, toml.replace("my-agent.yaml", "spec.yaml"), "pyproject.toml")
    for hook in hooks.values():
        assert hook["pass_filenames"] is False
    check = shlex.split(hooks["mapc-check"]["entry"])[1:]
    test = shlex.split(hooks["mapc-test"]["entry"])[1:]
    assert mapc(*check, cwd=root).returncode == 1  # nothing built yet
    assert mapc(*test, cwd=root).returncode == 0
    assert mapc("build", cwd=root).returncode == 0
    assert mapc(*check, cwd=root).returncode == 0
    ci = readme.split("# GitHub Actions step", 1)[1].split("```", 1)[0]
    commands = [line.strip() for line in ci.splitlines() if line.strip().startswith("mapc ")]
    assert commands and all(mapc(*shlex.split(c)[1:], cwd=root).returncode == 0 for c in commands), commands
