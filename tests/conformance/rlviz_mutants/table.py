"""The mutant table: one row per defect (or clean control), applied to the base plugin.

``expect`` is what the real RLViz answers (checked by the differential test):
``pass``, ``fail`` (before any phase: manifest, tree, command lookup) or
``fail:<phase>/<kind>``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from shared_paths import RLVIZ_FIXTURES

from . import Case, Mutant, add_before_complete, encode, events, first, replay, set_command, write

MUTANTS: list[Mutant] = []


def mutant(name: str, category: str, defect: str, expect: str, *, slow: bool = False):
    def register(apply):
        MUTANTS.append(Mutant(name, category, defect, expect, apply, slow))
        return apply
    return register


def row(name: str, category: str, defect: str, expect: str, apply, *, slow: bool = False) -> None:
    MUTANTS.append(Mutant(name, category, defect, expect, apply, slow))


# -- helpers ------------------------------------------------------------------------------------------------
def manifest_sub(old: str, new: str):
    def apply(case: Case, base) -> None:
        path = case.plugin / "rlviz-plugin.yaml"
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
    return apply


def manifest_bytes(edit):
    def apply(case: Case, base) -> None:
        path = case.plugin / "rlviz-plugin.yaml"
        path.write_bytes(edit(path.read_bytes()))
    return apply


def json_manifest(text: str, name: str = "rlviz-plugin.json"):
    def apply(case: Case, base) -> None:
        (case.plugin / "rlviz-plugin.yaml").unlink()
        write(case, name, text)
    return apply


def probe_answer(data: bytes):
    return lambda case, base: replay(case, base, probe=data)


def records(edit):
    def apply(case: Case, base) -> None:
        recs = base.records
        recs = edit(recs) or recs
        replay(case, base, stream=encode(recs))
    return apply


def stream_bytes(edit):
    return lambda case, base: replay(case, base, stream=edit(base.stream))


def line_bytes(index: int, edit):
    """Edit the raw bytes of one line of the recorded stream (the record count is unchanged)."""
    def apply(case: Case, base) -> None:
        lines = base.stream.split(b"\n")
        lines[index] = edit(lines[index])
        replay(case, base, stream=b"\n".join(lines))
    return apply


def event_json(**fields) -> bytes:
    """An extra event line for the first trajectory, as raw JSON text pieces."""
    body = ",".join(f'"{k}":{v}' for k, v in fields.items())
    return body.encode()


def extra_line(raw: bytes, *, count: bool = True):
    """Insert one raw line before the ``complete`` record (which then counts it)."""
    def apply(case: Case, base) -> None:
        lines = base.stream.rstrip(b"\n").split(b"\n")
        complete = json.loads(lines[-1])
        if count:
            complete["records"] += 1
        new = lines[:-1] + [raw, json.dumps(complete, separators=(",", ":")).encode()]
        replay(case, base, stream=b"\n".join(new) + b"\n")
    return apply


TRAJ = "task-0-rollout-0"  # the first trajectory of the base stream
TAIL_SEQ = 10 ** 6  # a sequence above every base event's


def new_event(**fields) -> bytes:
    """A raw event line in the first trajectory (id ``mut-e`` unless given), after its events."""
    parts = {"record_type": '"event"', "id": '"mut-e"', "trajectory_id": f'"{TRAJ}"', "sequence": str(TAIL_SEQ),
             "kind": '"log"'}
    parts.update(fields)
    return ("{" + ",".join(f'"{k}":{v}' for k, v in parts.items()) + "}").encode()


def new_record(rec: dict) -> bytes:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode()


def first_event_index(base) -> int:
    return next(i for i, line in enumerate(base.stream.split(b"\n")) if b'"record_type":"event"' in line)


# == controls ==================================================================================================
row("control-built-plugin", "control", "", "pass", lambda case, base: None)
row("control-replayed-output", "control", "", "pass", lambda case, base: replay(case, base))

SCAFFOLD_ADAPTER = '''#!/usr/bin/env python3
"""Dependency-free RLViz adapter scaffold."""
import argparse
import hashlib
import json
import sys

MAX_PROBE_BYTES = 1_048_576

def load_request(path):
    with open(path, "r", encoding="utf-8") as handle:
        request = json.load(handle)
    if request.get("api_version") != "rlviz.dev/v1alpha1":
        raise ValueError("unsupported api_version")
    return request

def emit(record):
    # stdout is protocol-only. Send diagnostics to stderr.
    print(json.dumps(record, separators=(",", ":"), ensure_ascii=False))

def probe(request):
    # TODO: inspect request["source"] or read_file_prefix(request), then match
    # evidence specific to the format. Do not fully load a large source.
    print(json.dumps({"supported": False, "confidence": 0, "reason": "implement format detection"}, separators=(",", ":")))

def stream(request):
    # TODO: emit parents before children and use stable_id for derived IDs.
    # Preserve useful source records in raw and attach source locations.
    # The final count excludes the complete record.
    emit({"record_type": "complete", "records": 0, "warnings": 0})

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("operation", choices=("probe", "stream"))
    parser.add_argument("--request", required=True)
    args = parser.parse_args()
    request = load_request(args.request)
    if request.get("operation") != args.operation:
        raise ValueError("request operation does not match command")
    (probe if args.operation == "probe" else stream)(request)

if __name__ == "__main__":
    try:
        main()
    except Exception as error:
        print(str(error), file=sys.stderr)
        raise SystemExit(1)
'''


def scaffold(probe_supported: bool, fixture: Path | None = None):
    """RLViz's own `plugin init` adapter (verbatim), optionally with its TODOs filled: probe says yes,
    stream prints one of RLViz's canonical fixtures."""
    def apply(case: Case, base) -> None:
        code = SCAFFOLD_ADAPTER
        if probe_supported:
            code = code.replace('{"supported": False, "confidence": 0, "reason": "implement format detection"}',
                                '{"supported": True, "confidence": 0.9, "format": "rlviz-canonical"}')
        if fixture is not None:
            write(case, "fixture.ndjson", fixture.read_bytes())
            code = code.replace('    emit({"record_type": "complete", "records": 0, "warnings": 0})',
                                '    sys.stdout.write(open("fixture.ndjson", encoding="utf-8").read())')
        write(case, "scaffold_adapter.py", code)
        set_command(case, ["python3", "scaffold_adapter.py"])
        if fixture is not None and fixture.name == "linear.ndjson":  # its events cite source/linear.jsonl
            cited = case.source.parent / "source" / "linear.jsonl"
            cited.parent.mkdir()
            cited.write_bytes(b"x" * 4096)
    return apply


row("control-rlviz-scaffold", "control", "", "fail:probe/unsupported", scaffold(False))
row("control-rlviz-scaffold-empty-stream", "control", "", "pass", scaffold(True))
for _fixture in sorted((RLVIZ_FIXTURES / "canonical").glob("*.ndjson")):
    row(f"control-rlviz-canonical-{_fixture.stem}", "control", "", "pass", scaffold(True, _fixture))
row("control-rlviz-adversarial-artifact-path", "control", "", "pass",
    scaffold(True, RLVIZ_FIXTURES / "adversarial" / "untrusted-artifact-path.ndjson"))
for _fixture in sorted((RLVIZ_FIXTURES / "malformed").glob("*.ndjson")):
    row(f"rlviz-malformed-{_fixture.stem}", "stream", f"RLViz's malformed fixture {_fixture.name}",
        "fail:stream/protocol", scaffold(True, _fixture))

# == manifest ==================================================================================================
M = "manifest"
CMD = "command:\n  - sh\n  - replay.sh\n"  # manifest and tree mutants start from the replaying command
row("manifest-api-version", M, "api_version rlviz.dev/v2", "fail",
    manifest_sub("api_version: rlviz.dev/v1alpha1", "api_version: rlviz.dev/v2"))
row("manifest-kind-lowercase", M, "kind: adapter", "fail", manifest_sub("kind: Adapter", "kind: adapter"))
row("manifest-kind-analyzer", M, "kind Analyzer with adapter capabilities", "fail",
    manifest_sub("kind: Adapter", "kind: Analyzer"))
row("manifest-name-uppercase", M, "name with capitals", "fail",
    manifest_sub('name: "nemo-gym-rollouts"', 'name: "Nemo-Gym"'))
row("manifest-name-plain-trailing-space", M, "plain name followed by spaces (trimmed)", "pass",
    manifest_sub('name: "nemo-gym-rollouts"', "name: nemo-gym-rollouts   "))
row("manifest-name-trailing-unit-separator", M, "name ending in U+001F (Go does not trim it)", "fail",
    manifest_sub('name: "nemo-gym-rollouts"', "name: nemo-gym-rollouts\x1f"))
row("manifest-name-trailing-nbsp", M, "name ending in U+00A0 (Go trims it)", "pass",
    manifest_sub('name: "nemo-gym-rollouts"', "name: nemo-gym-rollouts\u00a0"))
row("manifest-name-quoted-newline", M, 'name "x\\n" ($ must not match before a newline)', "fail",
    manifest_sub('name: "nemo-gym-rollouts"', 'name: "nemo-gym-rollouts\\n"'))
row("manifest-name-128-chars", M, "name of 128 characters (the longest allowed)", "pass", manifest_sub('name: "nemo-gym-rollouts"', "name: " + "n" * 128))
row("manifest-name-129-chars", M, "name of 129 characters", "fail",
    manifest_sub('name: "nemo-gym-rollouts"', "name: " + "n" * 129))
row("manifest-version-v-prefix", M, "version v0.1.0", "fail", manifest_sub('version: "0.1.0"', "version: v0.1.0"))
row("manifest-version-prerelease", M, "version with pre-release and build parts", "pass", manifest_sub('version: "0.1.0"', "version: 1.0.0-rc.1+build.5"))
row("manifest-command-empty", M, "command: []", "fail",
    manifest_sub(CMD, "command: []\n"))
row("manifest-command-empty-item", M, 'command item ""', "fail",
    manifest_sub(CMD, 'command: ["sh", ""]\n'))
row("manifest-command-null-item", M, "inline command list with null (read as empty)", "fail",
    manifest_sub(CMD, 'command: ["sh", null]\n'))
row("manifest-command-unknown-program", M, "interpreter not on PATH", "fail",
    manifest_sub("  - sh\n", "  - no-such-interpreter-mapc\n"))
row("manifest-command-inline-json", M, "command as an inline JSON list", "pass",
    manifest_sub(CMD, 'command: ["sh", "replay.sh"]\n'))
row("manifest-command-inline-not-json", M, "inline list without JSON quotes", "fail",
    manifest_sub(CMD, "command: [sh, replay.sh]\n"))


@mutant("manifest-command-absolute-inside", M, "absolute command path inside the plugin", "fail")
def _(case: Case, base) -> None:
    set_command(case, ["sh", str(case.plugin / "replay.sh")])


row("manifest-capability-missing", M, "no adapter.stream", "fail", manifest_sub("  - adapter.stream\n", ""))
row("manifest-capability-duplicate", M, "adapter.probe twice", "fail",
    manifest_sub("  - adapter.stream\n", "  - adapter.stream\n  - adapter.probe\n"))
row("manifest-capability-extra", M, "analyzer.analyze added", "fail",
    manifest_sub("  - adapter.stream\n", "  - adapter.stream\n  - analyzer.analyze\n"))
row("manifest-unknown-field", M, "homepage field", "fail", manifest_sub("kind: Adapter\n", "kind: Adapter\nhomepage: x\n"))
row("manifest-duplicate-field", M, "kind twice", "fail", manifest_sub("kind: Adapter\n", "kind: Adapter\nkind: Adapter\n"))
row("manifest-tab-indented-item", M, "list item indented with a tab", "fail",
    manifest_sub("  - replay.sh\n", "\t- replay.sh\n"))
row("manifest-single-quoted", M, "single-quoted name", "pass", manifest_sub('name: "nemo-gym-rollouts"', "name: 'nemo-gym-rollouts'"))
row("manifest-comment-after-plain", M, "comment after a plain value", "pass",
    manifest_sub('name: "nemo-gym-rollouts"', "name: nemo-gym-rollouts # the format"))
row("manifest-comment-after-quoted", M, "comment after a JSON-quoted value", "fail",
    manifest_sub('name: "nemo-gym-rollouts"', 'name: "nemo-gym-rollouts" # the format'))
row("manifest-description-empty", M, "description with no value (RLViz reads an empty list, then an empty string)", "pass",
    lambda case, base: manifest_bytes(lambda b: b.split(b"description:")[0] + b"description:\n")(case, base))
row("manifest-description-inline-list", M, "description given as a list (RLViz reads an empty string)", "pass",
    lambda case, base: manifest_bytes(lambda b: b.split(b"description:")[0] + b'description: ["a"]\n')(case, base))
row("manifest-description-block-scalar", M, "YAML block scalar", "fail",
    lambda case, base: manifest_bytes(lambda b: b.split(b"description:")[0] + b"description: |\n  text\n")(case, base))
row("manifest-description-invalid-utf8", M, "description with a Latin-1 byte", "pass",
    lambda case, base: manifest_bytes(lambda b: b.split(b"description:")[0] + b"description: caf\xe9\n")(case, base))
row("manifest-crlf", M, "CRLF line ends", "pass", manifest_bytes(lambda b: b.replace(b"\n", b"\r\n")))
row("manifest-bom", M, "UTF-8 byte order mark", "fail", manifest_bytes(lambda b: b"\xef\xbb\xbf" + b))
row("manifest-empty", M, "empty manifest", "fail", manifest_bytes(lambda b: b"  \n"))
row("manifest-missing", M, "no manifest", "fail", lambda case, base: (case.plugin / "rlviz-plugin.yaml").unlink())
row("manifest-plugin-yml", M, "manifest named plugin.yml", "pass",
    lambda case, base: (case.plugin / "rlviz-plugin.yaml").rename(case.plugin / "plugin.yml"))

_JSON_MANIFEST = {"api_version": "rlviz.dev/v1alpha1", "kind": "Adapter", "name": "nemo-gym-rollouts",
                  "version": "0.1.0", "command": ["sh", "replay.sh"],
                  "capabilities": ["adapter.probe", "adapter.stream"]}
row("manifest-json", M, "JSON manifest", "pass", json_manifest(json.dumps(_JSON_MANIFEST)))
row("manifest-json-case-folded-keys", M, "JSON manifest with keys in other letter cases", "pass",
    json_manifest(json.dumps({k.upper() if k != "name" else "Name": v for k, v in _JSON_MANIFEST.items()})))
row("manifest-json-null-description", M, "JSON manifest with description null", "pass", json_manifest(json.dumps(dict(_JSON_MANIFEST, description=None))))
row("manifest-json-unknown-field", M, "JSON manifest with an extra key", "fail",
    json_manifest(json.dumps(dict(_JSON_MANIFEST, homepage="x"))))
row("manifest-json-trailing-value", M, "two JSON values", "fail", json_manifest(json.dumps(_JSON_MANIFEST) + " {}"))
row("manifest-json-command-string", M, "command as a string", "fail",
    json_manifest(json.dumps(dict(_JSON_MANIFEST, command="sh replay.sh"))))
row("manifest-json-name-null", M, "name null (read as empty)", "fail",
    json_manifest(json.dumps(dict(_JSON_MANIFEST, name=None))))

# == plugin tree ================================================================================================
T = "tree"


def _outside(case: Case) -> Path:
    folder = case.state / "outside"
    folder.mkdir(exist_ok=True)
    (folder / "secret.txt").write_text("outside the plugin\n")
    return folder


row("tree-git-folder", T, "a .git folder (skipped by the digest)", "pass", lambda case, base: write(case, ".git/HEAD", "ref: refs/heads/main\n"))
row("tree-git-symlink-to-folder", T, ".git is a symlink to a folder inside the plugin", "fail",
    lambda case, base: (case.plugin / ".git").symlink_to(case.plugin / "testdata"))
row("tree-git-symlink-outside", T, ".git is a symlink to a folder outside", "fail",
    lambda case, base: (case.plugin / ".git").symlink_to(_outside(case)))
row("tree-git-file", T, "a .git file (hashed)", "pass", lambda case, base: write(case, ".git", "gitdir: ../.git/worktrees/x\n"))
row("tree-nested-git-folder", T, "a .git folder inside testdata/", "pass", lambda case, base: write(case, "testdata/.git/config", "[core]\n"))
row("tree-symlinked-folder", T, "a symlink to a folder inside", "fail",
    lambda case, base: (case.plugin / "data").symlink_to(case.plugin / "testdata"))
row("tree-symlinked-file-inside", T, "a symlink to a file inside the plugin", "pass",
    lambda case, base: (case.plugin / "README-link.md").symlink_to(case.plugin / "README.md"))
row("tree-symlinked-file-outside", T, "a symlink to a file outside", "fail",
    lambda case, base: (case.plugin / "secret.txt").symlink_to(_outside(case) / "secret.txt"))
row("tree-dangling-symlink", T, "a dangling symlink", "fail",
    lambda case, base: (case.plugin / "gone.txt").symlink_to(case.plugin / "nothing-here"))
row("tree-symlink-loop", T, "two symlinks pointing at each other", "fail",
    lambda case, base: ((case.plugin / "a").symlink_to(case.plugin / "b"), (case.plugin / "b").symlink_to(case.plugin / "a")))
row("tree-fifo", T, "a named pipe", "fail", lambda case, base: os.mkfifo(case.plugin / "pipe"))
row("tree-ds-store-symlink-outside", T, "a .DS_Store symlink pointing outside (skipped)", "pass",
    lambda case, base: (case.plugin / ".DS_Store").symlink_to(_outside(case) / "secret.txt"))
row("tree-empty-folder", T, "an empty folder", "pass", lambda case, base: (case.plugin / "empty").mkdir())
row("tree-pycache", T, "a __pycache__ folder", "pass", lambda case, base: write(case, "__pycache__/x.cpython-311.pyc", b"\x00" * 64))
row("tree-non-utf8-file-name", T, "a file name that is not UTF-8", "pass",
    lambda case, base: (case.plugin / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n"))
row("tree-name-byte-order", T, "file names whose order depends on case and non-ASCII", "pass",
    lambda case, base: [write(case, n, n) for n in ("\u00e9.txt", "Z.txt", "z.txt", "\U0001f600.txt", "_.txt")])


@mutant("tree-manifest-symlink-inside", T, "the manifest is a symlink to a file inside", "pass")
def _(case: Case, base) -> None:
    manifest = case.plugin / "rlviz-plugin.yaml"
    manifest.rename(case.plugin / "real-manifest.yaml")
    manifest.symlink_to(case.plugin / "real-manifest.yaml")


@mutant("tree-manifest-symlink-outside", T, "manifest is a symlink to a file outside", "fail")
def _(case: Case, base) -> None:
    manifest = case.plugin / "rlviz-plugin.yaml"
    target = _outside(case) / "rlviz-plugin.yaml"
    target.write_bytes(manifest.read_bytes())
    manifest.unlink()
    manifest.symlink_to(target)


row("tree-script-not-executable", T, "replay.sh without the execute bit (run by sh)", "pass",
    lambda case, base: (case.plugin / "replay.sh").chmod(0o600))
row("tree-large-file", T, "a 5 MiB file in the plugin", "pass", lambda case, base: write(case, "big.bin", b"\x00" * (5 << 20)))

# == probe answers ================================================================================================
P = "probe"
GOOD = b'{"supported":true,"confidence":0.9,"format":"nemo-gym-rollouts"}'
for _name, _defect, _expect, _data in [
    ("probe-not-json", "not JSON", "fail:probe/protocol", b"not json\n"),
    ("probe-empty", "no output", "fail:probe/protocol", b""),
    ("probe-unknown-field", "extra key score", "fail:probe/protocol", GOOD[:-1] + b',"score":1}'),
    ("probe-case-folded-keys", "keys Supported, CONFIDENCE, Format", "pass", b'{"Supported":true,"CONFIDENCE":0.9,"Format":"nemo-gym-rollouts"}'),
    ("probe-missing-confidence", "no confidence", "fail:probe/protocol",
     b'{"supported":true,"format":"nemo-gym-rollouts"}'),
    ("probe-confidence-null", "confidence null", "fail:probe/protocol", GOOD.replace(b"0.9", b"null")),
    ("probe-confidence-above-1", "confidence 1.5", "fail:probe/protocol", GOOD.replace(b"0.9", b"1.5")),
    ("probe-confidence-negative", "confidence -0.1", "fail:probe/protocol", GOOD.replace(b"0.9", b"-0.1")),
    ("probe-confidence-overflow", "confidence 1e400 (not a float64)", "fail:probe/protocol",
     GOOD.replace(b"0.9", b"1e400")),
    ("probe-confidence-underflow", "confidence 1e-400 (reads as 0)", "pass", GOOD.replace(b"0.9", b"1e-400")),
    ("probe-confidence-integer", "confidence 1 written as an integer", "pass", GOOD.replace(b"0.9", b"1")),
    ("probe-confidence-string", 'confidence "0.9"', "fail:probe/protocol", GOOD.replace(b"0.9", b'"0.9"')),
    ("probe-supported-string", 'supported "true"', "fail:probe/protocol", GOOD.replace(b"true", b'"true"')),
    ("probe-supported-null", "supported null", "fail:probe/protocol", GOOD.replace(b"true", b"null")),
    ("probe-unsupported-empty-format", "supported false, format empty", "fail:probe/unsupported",
     b'{"supported":false,"confidence":0,"format":""}'),
    ("probe-unsupported", "supported false", "fail:probe/unsupported",
     b'{"supported":false,"confidence":0,"reason":"not mine"}'),
    ("probe-supported-without-format", "supported without format", "fail:probe/protocol",
     b'{"supported":true,"confidence":1}'),
    ("probe-format-null", "format null", "fail:probe/protocol", GOOD.replace(b'"nemo-gym-rollouts"', b"null")),
    ("probe-format-with-spaces", "format with spaces around it (kept as is)", "pass", GOOD.replace(b'"nemo-gym-rollouts"', b'" nemo-gym-rollouts "')),
    ("probe-leading-form-feed", "form feed before the JSON (not JSON whitespace)", "fail:probe/protocol",
     b"\x0c" + GOOD),
    ("probe-leading-nbsp", "U+00A0 before the JSON", "fail:probe/protocol", b"\xc2\xa0" + GOOD),
    ("probe-trailing-unit-separator", "U+001F after the JSON", "fail:probe/protocol", GOOD + b"\x1f"),
    ("probe-trailing-whitespace", "JSON whitespace after the answer", "pass", GOOD + b"\n \t\r\n"),
    ("probe-leading-whitespace", "JSON whitespace before the answer", "pass", b"  \n\t" + GOOD),
    ("probe-crlf", "answer ends with CRLF", "pass", GOOD + b"\r\n"),
    ("probe-two-objects", "two JSON objects", "fail:probe/protocol", GOOD + b"\n{}"),
    ("probe-trailing-garbage", "text after the object", "fail:probe/protocol", GOOD + b" ok"),
    ("probe-array", "a JSON array", "fail:probe/protocol", b"[" + GOOD + b"]"),
    ("probe-null", "JSON null", "fail:probe/protocol", b"null"),
    ("probe-bom", "UTF-8 byte order mark", "fail:probe/protocol", b"\xef\xbb\xbf" + GOOD),
    ("probe-reason-invalid-utf8", "reason with a Latin-1 byte", "pass", GOOD[:-1] + b',"reason":"caf\xe9"}'),
    ("probe-reason-lone-surrogate", "reason with an unpaired surrogate escape", "pass", GOOD[:-1] + b',"reason":"\\ud800"}'),
    ("probe-duplicate-key", "supported given twice (the last wins)", "pass", b'{"supported":false,"supported":true,' + GOOD[1:]),
    ("probe-deep-trailing-value", "a second value nested 10001 deep", "fail:probe/protocol",
     GOOD + b"[" * 10001 + b"]" * 10001),
]:
    row(_name, P, _defect, _expect, probe_answer(_data))

row("probe-nondeterministic-confidence", P, "second probe answers another confidence", "fail:probe/nondeterministic",
    lambda case, base: replay(case, base, runs={1: GOOD.replace(b"0.9", b"0.8")}))
row("probe-nondeterministic-reason", P, "second probe gives another reason", "fail:probe/nondeterministic",
    lambda case, base: replay(case, base, probe=GOOD, runs={1: GOOD[:-1] + b',"reason":"again"}'}))
row("probe-same-answer-other-spelling", P, "second answer spelled differently, same values", "pass",
    lambda case, base: replay(case, base, probe=GOOD, runs={1: b' { "format" : "nemo-gym-rollouts", '
                                                               b'"confidence" : 9e-1, "supported" : true }'}))
row("probe-exit-status", P, "probe exits 3", "fail:probe/execution",
    lambda case, base: replay(case, base, after='[ "$1" = probe ] && exit 3\n'))

# == stream records ================================================================================================
S = "stream"
row("stream-blank-line", S, "a blank line", "fail:stream/protocol", stream_bytes(lambda b: b.replace(b"\n", b"\n\n", 1)))
row("stream-crlf", S, "CRLF line ends", "pass", stream_bytes(lambda b: b.replace(b"\n", b"\r\n")))
row("stream-no-final-newline", S, "no newline after the last record", "pass", stream_bytes(lambda b: b.rstrip(b"\n")))
row("stream-vertical-tab-line", S, "a line holding only U+000B", "fail:stream/protocol",
    stream_bytes(lambda b: b.replace(b"\n", b"\n\x0b\n", 1)))
row("stream-trailing-empty-line", S, "an empty line at the end", "fail:stream/protocol", stream_bytes(lambda b: b + b"\n"))
row("stream-bom", S, "UTF-8 byte order mark", "fail:stream/protocol", stream_bytes(lambda b: b"\xef\xbb\xbf" + b))
row("stream-invalid-json", S, "a line cut short", "fail:stream/protocol", line_bytes(1, lambda ln: ln[:-5]))
row("stream-trailing-garbage", S, "text after a record", "fail:stream/protocol", line_bytes(1, lambda ln: ln + b" x"))
row("stream-two-values-one-line", S, "two objects on one line", "fail:stream/protocol", line_bytes(1, lambda ln: ln + b"{}"))
row("stream-null-line", S, "a null line", "fail:stream/protocol", extra_line(b"null"))
row("stream-array-line", S, "an array line", "fail:stream/protocol", extra_line(b"[]"))
row("stream-nan", S, "NaN in metadata", "fail:stream/protocol", extra_line(new_event(metadata='{"x":NaN}')))
row("stream-whitespace-around-record", S, "spaces and tabs around a record", "pass", line_bytes(1, lambda ln: b" \t" + ln + b" \t"))
row("stream-cr-cr-line-end", S, "a line ending in two CRs (one is JSON whitespace)", "pass", line_bytes(1, lambda ln: ln + b"\r\r"))
row("stream-raw-control-character", S, "a raw tab inside a string", "fail:stream/protocol",
    extra_line(new_event(metadata='{"x":"a\tb"}')))
row("stream-unknown-record-type", S, "record_type span", "fail:stream/protocol",
    extra_line(b'{"record_type":"span","id":"s"}'))
row("stream-record-type-capitalized", S, 'record_type "Event"', "fail:stream/protocol",
    extra_line(new_event(record_type='"Event"')))
row("stream-record-type-missing", S, "no record_type", "fail:stream/protocol", extra_line(b'{"id":"x"}'))
row("stream-record-type-not-string", S, "record_type 5", "fail:stream/protocol", extra_line(new_event(record_type="5")))
row("stream-key-uppercase", S, "key ID instead of id", "pass", extra_line(new_event().replace(b'"id"', b'"ID"')))
row("stream-key-record-type-mixed-case", S, "key Record_Type", "pass", extra_line(new_event().replace(b'"record_type"', b'"Record_Type"')))
row("stream-key-long-s", S, "key ſource (long s folds to s)", "pass", extra_line(new_event(source='{"path":"%s"}' % "blackjack.example_rollouts.jsonl")
                                                 .replace(b'"source"', '"\u017fource"'.encode())))
row("stream-key-kelvin-sign", S, "key Kind (Kelvin sign folds to k)", "pass", extra_line(new_event().replace(b'"kind"', '"\u212aind"'.encode())))
row("stream-key-with-dash", S, "trajectory-id", "fail:stream/protocol",
    extra_line(new_event().replace(b'"trajectory_id"', b'"trajectory-id"')))
row("stream-key-escaped", S, "key id written as i\\u0064", "pass", extra_line(new_event().replace(b'"id"', b'"i\\u0064"')))
row("stream-unknown-field", S, "unknown field telemetry", "fail:stream/protocol", extra_line(new_event(telemetry="1")))
row("stream-unknown-field-in-source", S, "unknown field column in source", "fail:stream/protocol",
    extra_line(new_event(source='{"path":"blackjack.example_rollouts.jsonl","column":3}')))
row("stream-unknown-field-in-context", S, "unknown field in context", "fail:stream/protocol",
    extra_line(new_event(context='{"provenance":"source_native","summary":"s","extra":1}')))
row("stream-null-name", S, "run name null", "pass", records(lambda r: first(r, "run").update(name=None)))
row("stream-null-metadata", S, "metadata null", "pass", extra_line(new_event(metadata="null")))
row("stream-null-source-and-context", S, "source and context null", "pass", extra_line(new_event(source="null", context="null")))
row("stream-null-timestamp", S, "timestamp null", "pass", extra_line(new_event(timestamp="null")))
row("stream-null-after-id", S, "id given again as null (keeps the first)", "pass", extra_line(new_event().replace(b'"id":"mut-e"', b'"id":"mut-e","id":null')))
row("stream-sequence-null", S, "sequence null (reads as 0)", "pass", records(lambda r: events(r)[0].update(sequence=None)))
row("stream-sequence-missing", S, "sequence missing (reads as 0)", "pass", records(lambda r: events(r)[0].pop("sequence")))
row("stream-sequence-minus-zero", S, "sequence -0", "pass", stream_bytes(lambda b: b.replace(b'"sequence":0,', b'"sequence":-0,', 1)))
row("stream-complete-without-warnings", S, "complete without warnings", "pass", stream_bytes(lambda b: b.replace(b',"warnings":0}', b"}")))
row("stream-complete-warnings-null", S, "complete warnings null", "pass", stream_bytes(lambda b: b.replace(b'"warnings":0}', b'"warnings":null}')))
row("stream-sequence-int64-max", S, "sequence 2**63-1", "pass", extra_line(new_event(sequence=str(2 ** 63 - 1))))
row("stream-sequence-int64-overflow", S, "sequence 2**63", "fail:stream/protocol", extra_line(new_event(sequence=str(2 ** 63))))
row("stream-sequence-float", S, "sequence 1.0e6 written as a float", "fail:stream/protocol",
    extra_line(new_event(sequence="1000000.0")))
row("stream-sequence-exponent", S, "sequence 1e7", "fail:stream/protocol", extra_line(new_event(sequence="1e7")))
row("stream-sequence-negative", S, "sequence -1", "fail:stream/protocol", records(lambda r: events(r)[0].update(sequence=-1)))
row("stream-source-line-overflow", S, "source.line 2**63", "fail:stream/protocol",
    extra_line(new_event(source='{"path":"blackjack.example_rollouts.jsonl","line":%d}' % 2 ** 63)))
row("stream-source-line-negative", S, "source.line -1", "fail:stream/provenance",
    extra_line(new_event(source='{"path":"blackjack.example_rollouts.jsonl","line":-1}')))
row("stream-complete-warnings-overflow", S, "complete warnings 2**63", "fail:stream/protocol",
    stream_bytes(lambda b: b.replace(b'"warnings":0}', b'"warnings":%d}' % 2 ** 63)))
row("stream-complete-warnings-negative", S, "complete warnings -1", "fail:stream/protocol",
    stream_bytes(lambda b: b.replace(b'"warnings":0}', b'"warnings":-1}')))
row("stream-complete-records-huge", S, "complete records 1e30", "fail:stream/protocol",
    stream_bytes(lambda b: b[:b.rindex(b'"records":')] + b'"records":1000000000000000000000000000000,"warnings":0}\n'))
row("stream-context-tokens-overflow", S, "context.input_tokens 2**63", "fail:stream/protocol",
    extra_line(new_event(context='{"provenance":"source_native","input_tokens":%d}' % 2 ** 63)))
row("stream-context-capacity-zero", S, "context.capacity 0", "fail:stream/protocol",
    extra_line(new_event(context='{"provenance":"source_native","capacity":0}')))
row("stream-metadata-huge-integer", S, "a 5000-digit integer in metadata", "pass", extra_line(new_event(metadata='{"n":%s}' % ("9" * 5000))))
row("stream-signal-value-overflowing-float", S, "signal value 1e400", "pass",
    extra_line(b'{"record_type":"signal","id":"mut-s","trajectory_id":"%s","name":"n","value":1e400}' % TRAJ.encode()))
row("stream-signal-value-huge-integer", S, "signal value of 5000 digits", "pass",
    extra_line(b'{"record_type":"signal","id":"mut-s","trajectory_id":"%s","name":"n","value":%s}'
               % (TRAJ.encode(), b"1" * 5000)))
row("stream-signal-value-object", S, "signal value {}", "fail:stream/protocol",
    extra_line(b'{"record_type":"signal","id":"mut-s","trajectory_id":"%s","name":"n","value":{}}' % TRAJ.encode()))
row("stream-signal-value-null", S, "signal value null", "fail:stream/protocol",
    extra_line(b'{"record_type":"signal","id":"mut-s","trajectory_id":"%s","name":"n","value":null}' % TRAJ.encode()))
row("stream-invalid-utf8-in-text", S, "a Latin-1 byte in event data", "pass", extra_line(new_event(data='"caf\xe9"').replace("\xe9".encode(), b"\xe9")))
row("stream-invalid-utf8-ids-collide", S, "ids a\\xff and a\\xfe (both a U+FFFD)", "fail:stream/protocol",
    lambda case, base: extra_line(new_event(id='"a\xff"').replace("\xff".encode(), b"\xff") + b"\n"
                                  + new_event(id='"a\xfe"', sequence=str(TAIL_SEQ + 1)).replace("\xfe".encode(), b"\xfe"),
                                  count=False)(case, base) or _recount(case))
row("stream-truncated-utf8-ids-differ", S, "ids a\\xe2\\x82 and a\\xff (two U+FFFD against one)", "pass",
    lambda case, base: extra_line(new_event(id='"a\xe2\x82"').replace("\xe2\x82".encode(), b"\xe2\x82") + b"\n"
                                  + new_event(id='"a\xff"', sequence=str(TAIL_SEQ + 1)).replace("\xff".encode(), b"\xff"),
                                  count=False)(case, base) or _recount(case))
row("stream-lone-surrogates-collide", S, "ids a\\ud800 and a\\udc00 (both a U+FFFD)", "fail:stream/protocol",
    lambda case, base: extra_line(new_event(id='"a\\ud800"') + b"\n"
                                  + new_event(id='"a\\udc00"', sequence=str(TAIL_SEQ + 1)), count=False)(case, base)
    or _recount(case))
row("stream-lone-surrogate-vs-replacement", S, "ids a\\ud800 and a\\ufffd", "fail:stream/protocol",
    lambda case, base: extra_line(new_event(id='"a\\ud800"') + b"\n"
                                  + new_event(id='"a\\ufffd"', sequence=str(TAIL_SEQ + 1)), count=False)(case, base)
    or _recount(case))
row("stream-surrogate-pair", S, "an id with a surrogate pair escape", "pass", extra_line(new_event(id='"a\\ud83d\\ude00"')))
row("stream-source-path-nul", S, "a NUL byte in source.path", "fail:stream/provenance",
    extra_line(new_event(source='{"path":"blackjack\\u0000.jsonl"}')))
row("stream-nesting-1500", S, "metadata nested 1500 deep", "pass", extra_line(new_event(metadata='{"x":' + "[" * 1500 + "]" * 1500 + "}")))
row("stream-nesting-10000", S, "a record nested 10000 deep", "pass", extra_line(new_event(metadata='{"x":' + "[" * 9998 + "]" * 9998 + "}")))
row("stream-nesting-10001", S, "nesting 10001 deep", "fail:stream/protocol",
    extra_line(new_event(metadata='{"x":' + "[" * 9999 + "]" * 9999 + "}")))
row("stream-duplicate-id", S, "an event reuses the run id", "fail:stream/protocol",
    extra_line(new_event(id='"run@blackjack.example_rollouts.jsonl"')))
row("stream-case-unknown-run", S, "case of an unknown run", "fail:stream/protocol",
    records(lambda r: first(r, "case").update(run_id="nope")))
row("stream-parent-id-empty", S, "trajectory parent_id and branch_id empty", "pass", records(lambda r: first(r, "trajectory").update(parent_id="", branch_id="")))
row("stream-event-parent-empty", S, "event parent_id empty", "pass", records(lambda r: events(r)[0].update(parent_id="")))
row("stream-signal-event-empty", S, "signal event_id empty", "pass", records(lambda r: first(r, "signal").update(event_id="")))
row("stream-event-parent-later", S, "an event's parent comes later", "fail:stream/protocol",
    records(lambda r: events(r)[0].update(parent_id=events(r)[1]["id"])))
row("stream-event-kind-unknown", S, "kind thought", "fail:stream/protocol", records(lambda r: events(r)[0].update(kind="thought")))
row("stream-sequence-not-increasing", S, "two events with one sequence", "fail:stream/protocol",
    records(lambda r: events(r)[1].update(sequence=events(r)[0]["sequence"])))
row("stream-trajectory-status-other", S, "trajectory status finished", "pass", records(lambda r: first(r, "trajectory").update(status="finished")))
row("stream-timestamp-not-rfc3339", S, "timestamp yesterday", "pass", records(lambda r: events(r)[0].update(timestamp="yesterday")))
row("stream-id-600-characters", S, "an id of 600 characters", "pass", extra_line(new_event(id='"%s"' % ("i" * 600))))
_ART = '{"record_type":"artifact","id":"mut-a","trajectory_id":"%s","media_type":"text/plain",%s}'
row("stream-artifact-path-and-empty-text", S, "artifact with a path and an empty text", "pass", extra_line((_ART % (TRAJ, '"path":"x.txt","text":""')).encode()))
row("stream-artifact-json-null-and-text", S, "artifact with json null and a text", "pass", extra_line((_ART % (TRAJ, '"json":null,"text":"t"')).encode()))
row("stream-artifact-json-false-and-text", S, "json false and text", "fail:stream/protocol",
    extra_line((_ART % (TRAJ, '"json":false,"text":"t"')).encode()))
row("stream-artifact-no-content", S, "no path, text or json", "fail:stream/protocol",
    extra_line((_ART % (TRAJ, '"name":"n"')).encode()))
row("stream-artifact-sha256-uppercase", S, "sha256 in capitals", "fail:stream/protocol",
    extra_line((_ART % (TRAJ, '"text":"t","sha256":"%s"' % ("AB" * 32))).encode()))
row("stream-artifact-sha256-empty", S, "artifact sha256 empty", "pass", extra_line((_ART % (TRAJ, '"text":"t","sha256":""')).encode()))
_CTX = '{"provenance":"source_native",%s}'
row("stream-context-derived-blank-derivation", S, "adapter-derived context, derivation blank", "fail:stream/protocol",
    extra_line(new_event(context='{"provenance":"adapter_derived","derivation":"  ","input_tokens":3}')))
row("stream-context-empty-list-only", S, "context with only an empty list", "fail:stream/protocol",
    extra_line(new_event(context=_CTX % '"retained_event_ids":[]')))
row("stream-context-empty-list-and-fact", S, "context with an empty list and a token count", "pass",
    extra_line(new_event(context=_CTX % '"retained_event_ids":[],"input_tokens":3')))
row("stream-context-summary-blank", S, "only a blank summary", "fail:stream/protocol",
    extra_line(new_event(context=_CTX % '"summary":" "')))
row("stream-context-null-reference", S, "context list with null", "fail:stream/protocol",
    extra_line(new_event(context=_CTX % '"dropped_event_ids":[null]')))
row("stream-context-operation-empty", S, "context operation empty", "pass", extra_line(new_event(context=_CTX % '"operation":"","input_tokens":5')))
row("stream-context-reference-ok", S, "context naming an earlier event", "pass", extra_line(new_event(context=_CTX % '"retained_event_ids":["evt@L1.0"]')))
row("stream-complete-not-final", S, "a record after complete", "fail:stream/protocol",
    stream_bytes(lambda b: b + new_event() + b"\n"))
row("stream-no-complete", S, "no complete record", "fail:stream/protocol", stream_bytes(lambda b: b[:b.rindex(b"{")]))
row("stream-two-completes", S, "complete twice", "fail:stream/protocol", stream_bytes(lambda b: b + b[b.rindex(b"{"):]))
row("stream-complete-count-wrong", S, "complete counts one record too many", "fail:stream/protocol",
    stream_bytes(lambda b: b[:b.rindex(b'"records":')] + b'"records":%d,"warnings":0}\n'
                 % (int(json.loads(b.splitlines()[-1])["records"]) + 1)))
row("stream-empty", S, "no output at all", "fail:stream/protocol", stream_bytes(lambda b: b""))
row("stream-only-complete", S, "a stream of nothing but complete", "pass", stream_bytes(lambda b: b'{"record_type":"complete","records":0,"warnings":0}\n'))
_SRC = '{"path":"%s"%s}'
row("stream-source-escapes-root", S, "source path ../x", "fail:stream/provenance",
    extra_line(new_event(source=_SRC % ("../adapter.py", ""))))
row("stream-source-absolute-outside", S, "source path /etc/hostname", "fail:stream/provenance",
    extra_line(new_event(source=_SRC % ("/etc/hostname", ""))))
row("stream-source-missing-file", S, "source file that does not exist", "fail:stream/provenance",
    extra_line(new_event(source=_SRC % ("missing.jsonl", ""))))
row("stream-source-range-past-end", S, "byte range past the end", "fail:stream/provenance",
    extra_line(new_event(source=_SRC % ("blackjack.example_rollouts.jsonl", ',"byte_offset":10900,"byte_length":100'))))
row("stream-source-offset-past-end", S, "byte offset past the end", "fail:stream/provenance",
    extra_line(new_event(source=_SRC % ("blackjack.example_rollouts.jsonl", ',"byte_offset":999999'))))
row("stream-source-dotdot-through-missing-folder", S, "source path nowhere/../file (cleaned before it is resolved)", "pass",
    extra_line(new_event(source=_SRC % ("nowhere/../blackjack.example_rollouts.jsonl", ""))))
row("stream-source-folder-with-offset", S, "source path . with byte_offset 0", "pass", extra_line(new_event(source=_SRC % (".", ',"byte_offset":0'))))
row("stream-source-path-empty", S, "source path empty", "fail:stream/provenance", extra_line(new_event(source=_SRC % ("", ""))))
row("stream-duplicate-source-merges", S, "source given twice (the objects merge)", "pass",
    extra_line(new_event(source='{"path":"blackjack.example_rollouts.jsonl"},"source":{"line":3}')))
row("stream-duplicate-context-merges", S, "context given twice (the objects merge)", "pass",
    extra_line(new_event(context='{"provenance":"source_native"},"context":{"input_tokens":3}')))
row("stream-case-variant-id-wins", S, "id and ID both given (the last wins)", "pass",
    extra_line(new_event().replace(b'"id":"mut-e"', b'"id":"run@blackjack.example_rollouts.jsonl","ID":"mut-e"')))


def _recount(case: Case) -> None:
    """Fix the complete count after inserting several lines at once."""
    path = case.plugin / "stream.out"
    lines = path.read_bytes().rstrip(b"\n").split(b"\n")
    complete = json.loads(lines[-1])
    complete["records"] = len(lines) - 1
    path.write_bytes(b"\n".join(lines[:-1] + [json.dumps(complete, separators=(",", ":")).encode()]) + b"\n")


row("stream-nondeterministic", S, "second stream differs in one value", "fail:stream/nondeterministic",
    lambda case, base: replay(case, base, runs={3: base.stream.replace(b'"value":-1.0', b'"value":-2.0', 1)}))
row("stream-nondeterministic-spacing", S, "second stream spaces one record differently", "fail:stream/nondeterministic",
    lambda case, base: replay(case, base, runs={3: base.stream.replace(b'{"record_type":"run"', b'{ "record_type":"run"', 1)}))
row("stream-second-pass-invalid", S, "second stream has a broken record", "fail:stream/protocol",
    lambda case, base: replay(case, base, runs={3: base.stream.replace(b'"kind":"message"', b'"kind":"thought"', 1)}))
row("stream-second-pass-only-source-vanishes", S, "the source disappears after the first stream", "fail:stream/provenance",
    lambda case, base: replay(case, base, after='[ "$n" = 3 ] && rm -f "$plugin/testdata/blackjack.example_rollouts.jsonl"\n'))

# == limits ====================================================================================================
L = "limits"
def _padded_stream(total: int):
    """The base stream, its lines padded with trailing spaces (at most 8 MiB a line) to ``total`` bytes;
    kept outside the plugin (replayed from the state folder)."""
    def apply(case: Case, base) -> None:
        lines = base.stream.rstrip(b"\n").split(b"\n")
        pad = total - sum(len(line) + 1 for line in lines)
        out = []
        for line in lines[:-1]:
            room = min(pad, (8 << 20) - len(line))
            out.append(line + b" " * room + b"\n")
            pad -= room
        data = b"".join(out) + lines[-1] + b"\n"
        assert pad == 0 and len(data) == total
        replay(case, base)
        (case.state / "stream.out").write_bytes(data)
    return apply


def _big_record(size: int):
    """One event whose JSON text is exactly ``size`` bytes (padded metadata), replayed from the state folder."""
    def apply(case: Case, base) -> None:
        head = new_event(metadata='{"pad":"')
        record = head + b"x" * (size - len(head) - len(b'"}}')) + b'"}}'
        lines = base.stream.rstrip(b"\n").split(b"\n")
        complete = json.loads(lines[-1])
        complete["records"] += 1
        replay(case, base)
        (case.state / "stream.out").write_bytes(b"\n".join(lines[:-1] + [record, json.dumps(complete).encode()]) + b"\n")
    return apply


row("limits-record-8mib", L, "a record of exactly 8 MiB", "pass", _big_record(8 << 20))
row("limits-record-8mib-plus-1", L, "one record of 8 MiB + 1 byte", "fail:stream/protocol", _big_record((8 << 20) + 1))
row("limits-stdout-32mib", L, "stream output of exactly 32 MiB", "pass", _padded_stream(32 << 20))
row("limits-stdout-32mib-plus-1", L, "stream output of 32 MiB + 1 byte", "fail:stream/execution", _padded_stream((32 << 20) + 1))
row("limits-stderr-1mib", L, "stderr of exactly 1 MiB", "pass", lambda case, base: replay(case, base, after="head -c 1048576 /dev/zero >&2\n"))
row("limits-stderr-1mib-plus-1", L, "stderr of 1 MiB + 1 byte", "fail:probe/execution",
    lambda case, base: replay(case, base, after="head -c 1048577 /dev/zero >&2\n"))
row("limits-probe-flood", L, "probe prints 40 MiB", "fail:probe/execution",
    lambda case, base: replay(case, base, after='[ "$1" = probe ] && head -c 41943040 /dev/zero\n'))

# == timing ====================================================================================================
row("timing-probe-over-10s", "timing", "first probe runs 11 s (RLViz allows 10 s per process)", "fail:probe/execution",
    lambda case, base: replay(case, base, before='[ "$n" = 0 ] && sleep 11\n'), slow=True)
row("timing-validation-over-30s", "timing", "each run takes 7.8 s: 31 s in all (RLViz allows 30 s)",
    "fail:stream/execution", lambda case, base: replay(case, base, before="sleep 7.8\n"), slow=True)
row("timing-validation-under-30s", "timing", 'each run takes 5 s (20 s in all)', "pass", lambda case, base: replay(case, base, before="sleep 5\n"), slow=True)
row("timing-short-sleeps", "timing", 'each run takes 0.2 s', "pass", lambda case, base: replay(case, base, before="sleep 0.2\n"))

# == process behaviour ============================================================================================
X = "process"
_COMPLETE_LATER = ('if [ "$1" = stream ]; then head -n -1 stream.out; (sleep 0.3; tail -n 1 stream.out) & exit 0; fi\n')
row("process-child-writes-after-exit", X, "a child writes the complete record 0.3 s after the adapter exits", "pass", lambda case, base: replay(case, base, before=_COMPLETE_LATER))
row("process-child-holds-output-1.5s", X, "a child keeps stdout open 1.5 s after the adapter exits",
    "fail:probe/execution", lambda case, base: replay(case, base, after="(sleep 1.5) &\n"))
row("process-child-holds-stderr-1.5s", X, "a child keeps stderr open 1.5 s after the adapter exits",
    "fail:probe/execution", lambda case, base: replay(case, base, after="(sleep 1.5 >/dev/null) &\n"))
row("process-detached-child", X, "a child that closed its output outlives the adapter", "pass",
    lambda case, base: replay(case, base, after="(sleep 1.5 >/dev/null 2>&1 &)\n"))
row("process-exit-after-output", X, "stream exits 1 after a complete output", "fail:stream/execution",
    lambda case, base: replay(case, base, after='[ "$1" = stream ] && exit 1\n'))
row("process-killed", X, "the adapter is killed by a signal", "fail:probe/execution",
    lambda case, base: replay(case, base, before="kill -9 $$\n"))
row("process-stderr-noise", X, "progress on stderr", "pass", lambda case, base: replay(case, base, after='echo "progress: done" >&2\n'))
row("process-reads-stdin", X, "reads stdin (/dev/null)", "pass", lambda case, base: replay(case, base, before="cat > /dev/null\n"))
row("process-echoes-working-folder", X, "the run name is the working folder", "fail:stream/nondeterministic",
    lambda case, base: replay(case, base, stream=base.stream.replace(b'"name":"blackjack.example_rollouts.jsonl"',
                                                                     b'"name":"@CWD@"', 1),
                              before='[ "$1" = stream ] && { sed "s|@CWD@|$PWD|" stream.out; exit 0; }\n'))
row("process-echoes-request-path", X, "the run name is the request file's path", "fail:stream/nondeterministic",
    lambda case, base: replay(case, base, stream=base.stream.replace(b'"name":"blackjack.example_rollouts.jsonl"',
                                                                     b'"name":"@REQ@"', 1),
                              before='[ "$1" = stream ] && { sed "s|@REQ@|$3|" stream.out; exit 0; }\n'))
row("process-modifies-plugin-in-probe", X, "the first probe adds a file to the plugin folder", "fail:probe/execution",
    lambda case, base: replay(case, base, before='[ "$n" = 0 ] && echo changed > "$plugin/touched.txt"\n'))
row("process-modifies-plugin-in-stream", X, "the first stream edits the plugin's README", "fail:stream/execution",
    lambda case, base: replay(case, base, before='[ "$n" = 2 ] && echo edited >> "$plugin/README.md"\n'))
row("process-writes-into-snapshot", X, "writes a file into its working folder", "pass", lambda case, base: replay(case, base, before="echo x > scratch.txt\n"))
row("process-checks-environment", X, "requires PYTHONDONTWRITEBYTECODE=1", "pass",
    lambda case, base: replay(case, base, before='[ "$PYTHONDONTWRITEBYTECODE" = 1 ] || exit 9\n'))
row("process-command-missing", X, "command ./missing.sh", "fail:probe/execution",
    lambda case, base: set_command(case, ["./missing.sh"]))


@mutant("process-command-not-executable", X, "command ./replay.sh without the execute bit", "fail:probe/execution")
def _(case: Case, base) -> None:
    replay(case, base)
    set_command(case, ["./replay.sh"])
    (case.plugin / "replay.sh").chmod(0o644)


@mutant("process-command-relative-script", X, "command ./replay.sh", "pass")
def _(case: Case, base) -> None:
    replay(case, base)
    path = case.plugin / "replay.sh"
    path.write_text("#!/bin/sh\n" + path.read_text())
    path.chmod(0o755)
    set_command(case, ["./replay.sh"])


row("process-closes-stdout-early", X, "closes stdout, then runs 0.3 s more", "pass",
    lambda case, base: replay(case, base, after="exec >&-\nsleep 0.3\n"))
row("process-wrapped-generated-adapter", X, "the generated adapter behind a shell wrapper", "pass",
    lambda case, base: (write(case, "wrap.sh", 'sleep 0.1\nexec python3 adapter.py "$@"\n'),
                        set_command(case, ["sh", "wrap.sh"])))
row("process-generated-adapter-exits-2", X, "the generated adapter gets a bad argument", "fail:probe/execution",
    lambda case, base: set_command(case, ["python3", "adapter.py", "--unknown-option"]))


@mutant("source-missing", "process", "the source does not exist", "fail:source/provenance")
def _(case: Case, base) -> None:
    case.source = case.source.parent / "absent.jsonl"


@mutant("source-fifo", "process", "the source is a named pipe", "fail:source/provenance")
def _(case: Case, base) -> None:
    case.source = case.state / "pipe.jsonl"
    os.mkfifo(case.source)


@mutant("source-folder", "process", "the source is a folder (the adapter says unsupported)", "fail:probe/unsupported")
def _(case: Case, base) -> None:
    case.source = case.plugin / "testdata"
