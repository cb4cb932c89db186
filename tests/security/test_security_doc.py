"""docs/security.md names real files and the real opt-in command."""

from __future__ import annotations

import re

from security_support import ROOT


def test_every_file_the_security_page_names_exists():
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:tests|mapc|templates)/[^`*<> ]+)`", text))
    assert len(paths) >= 15, paths
    missing = []
    for path in paths:  # a file, or `file::test_name` for one test in it
        name, _, test = path.partition("::")
        file = ROOT / name.rstrip("/")
        if not file.exists() or (test and f"def {test}(" not in file.read_text(encoding="utf-8")):
            missing.append(path)
    assert sorted(missing) == [], missing


def test_the_long_run_command_uses_the_variable_the_tests_read():
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert "MAPC_FUZZ_EXAMPLES=2000 python -m pytest tests/security tests/test_expressions_fuzz.py" in text
    support = (ROOT / "tests" / "security" / "security_support.py").read_text(encoding="utf-8")
    assert 'os.environ.get("MAPC_FUZZ_EXAMPLES"' in support
    assert 'os.environ.get("MAPC_FUZZ_EXAMPLES"' in (ROOT / "tests" / "test_expressions_fuzz.py").read_text()
