"""No committed file holds an absolute path of the machine it was made on.

A path such as ``/home/alice/mapc/...`` or a worktree under ``/work/`` in a committed
file (a traceback, a golden output, a log) tells nothing to anyone else and leaks how
one machine is laid out. URLs are fine. Third-party data vendored as committed upstream
may hold its own authors' paths: those files are allow-listed one by one, with why.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_START = r"(?<![\w.~/-])"  # the path starts here: not the middle of a relative path or a word
MACHINE_PATH = re.compile("|".join([
    _START + r"/work/",
    _START + r"/home/[^/\s\"'<>]+/",
    _START + r"/Users/[^/\s\"'<>]+/",
    _START + r"/root/",
    _START + r"(?:/private)?/var/folders/",
    # /tmp/x in a test string is fine; a temporary folder with mapc's files or pytest's in it is not
    _START + r"/tmp/[^\s\"'<>]*?(?:pytest-of-|mapc|/tests/|/examples/|/templates/|/specs/)",
    r"\b[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/)",
]))
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://(?!/)\S+", re.IGNORECASE)  # file:///path stays a path

#: This file, and vendored third-party files that hold their authors' paths as committed
#: upstream (``tests/data/corpus/PROVENANCE.md`` lists each one's source; changing them would
#: make the corpus no longer what the formats' tools really write).
ALLOWED = {
    "tests/core/test_no_machine_paths.py": "this test: its patterns and the examples it checks them on",
    "tests/data/corpus/PROVENANCE.md": "quotes the home paths the files below hold, to say so",
    "tests/data/corpus/agentlab-browsergym/result_df_trial_1_of_3.csv": "AgentLab's results, as committed (/home/t/)",
    "tests/data/corpus/letta-evals-results/header.json": "letta-evals' output, as committed (/Users/...)",
    "tests/data/corpus/codex-rollout/sample_codex_session.jsonl": "a Codex session, as published (its cwd)",
    "tests/data/corpus/codex-rollout/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl":
        "a real Codex rollout, as published (its cwd)",
    "tests/data/corpus/copilot-cli/session-demo/events.jsonl": "a real Copilot CLI session, as published (its cwd)",
    "tests/data/corpus/aider-chat/aider/chat-history.md": "aider's own chat history, as committed (its author's paths)",
    "tests/data/corpus/gemini-cli/gemini-cli-pomodoro-timer.first-6-messages.json":
        "a real Gemini CLI session, as published (its author's paths)",
    # the session-log library specs' fixtures: trimmed copies of the real sessions above
    "specs/fixtures/codex-rollout/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl":
        "a trimmed copy of the real Codex rollout (its cwd)",
    "specs/fixtures/codex-rollout/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
    ".expected.ndjson": "its expected records (the cwd, mapped)",
    "specs/fixtures/copilot-cli/session-demo/events.jsonl": "a copy of the real Copilot CLI session (its cwd)",
    "specs/fixtures/copilot-cli/session-demo/events.jsonl.expected.ndjson": "its expected records (the cwd, mapped)",
    "specs/fixtures/gemini-cli/gemini-cli-pomodoro-timer.first-6-messages.json":
        "a copy of the real Gemini CLI session (its author's paths)",
    "specs/fixtures/gemini-cli/gemini-cli-pomodoro-timer.first-6-messages.json.expected.ndjson":
        "its expected records (the paths, mapped)",
    "tests/data/corpus/cursor-agent-transcript/atif-make/manifest.json":
        "atif-make's manifest, as its converter wrote it (a redacted /Users/[USER]/ path)",
}


def committed_files() -> list[str]:
    """The files git tracks; outside a git checkout (an unpacked sdist), every file in the tree."""
    try:
        proc = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    except OSError:
        proc = None
    if proc is not None and proc.returncode == 0 and (ROOT / ".git").exists():
        return [name for name in proc.stdout.decode().split("\0") if name]
    skip = {"__pycache__", ".pytest_cache", ".hypothesis", "build", "dist"}
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".venv") and not d.endswith(".egg-info")]
        found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files]
    return found


def machine_paths(text: str) -> list[str]:
    """Each line of ``text`` that holds a machine path once URLs are taken out."""
    return [line.strip()[:160] for line in text.splitlines()
            if MACHINE_PATH.search(URL.sub("", line).replace("file://", " "))]


def test_the_pattern_finds_machine_paths_and_leaves_the_rest():
    found = ["/work/wt-safety-files/mapc/targets/capevolve/validator/gate.py", "see /home/alice/src/mapc",
             '"cwd": "/Users/bob/projects/x"', "/root/.cache/mapc", "/tmp/pytest-of-root/pytest-3/test_x0",
             "/tmp/x/clone/mapc/cli.py", r'"C:\\Users\\carol\\mapc"', r"C:\Users\carol", "file:///work/x",
             "/private/var/folders/ab/T/mapc-x"]
    fine = ["https://github.com/org/repo/blob/main/work/x.py", "examples/work/x", "/tmp/x", "/tmp/stolen.txt",
            "cat > /tmp/x &", "~/work/notes", "/usr/bin/python3", "/testbed/src", "node_modules/home/a/b"]
    assert [p for p in found if not machine_paths(p)] == []
    assert [p for p in fine if machine_paths(p)] == []


def test_no_committed_file_holds_a_machine_path():
    offenders = {}
    for name in committed_files():
        path = ROOT / name
        if name in ALLOWED or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        lines = machine_paths(data.decode("utf-8", "replace"))
        if lines:
            offenders[name] = lines[:3]
    assert not offenders, "\n".join(f"{k}: {v}" for k, v in offenders.items())


def test_every_allowed_file_still_needs_it():
    """The allow-list shrinks with the corpus: an entry whose file is gone or clean is an error."""
    stale = [name for name in ALLOWED
             if not (ROOT / name).is_file() or not machine_paths((ROOT / name).read_text("utf-8", "replace"))]
    assert not stale
