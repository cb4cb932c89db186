"""RELAI's optional runtime manifest (``.relai/runtime-manifest.json``) and the
simulator environment RELAI checks it against before running any command."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mapc.targets.relai.validator.catalog import Findings

MANIFEST_SCHEMA = "relai.runtime_manifest.v1"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENV_FIELDS = frozenset({"name", "required", "sensitive", "reason"})
FILE_FIELDS = frozenset({"path_env", "required", "reason"})
VALUE_FIELDS = frozenset({"value", "default", "values"})


def check_manifest(data: dict, f: Findings) -> None:
    """Every runtime-manifest rule: names and reasons, never values."""
    if data.get("schema_version") != MANIFEST_SCHEMA:
        f.error("schema_version", "schema_version", f"must be {MANIFEST_SCHEMA!r}, got {data.get('schema_version')!r}")
    for key, fields, name_key in (("env", ENV_FIELDS, "name"), ("files", FILE_FIELDS, "path_env")):
        items = data.get(key, [])
        if not isinstance(items, list):
            f.error("manifest_invalid", key, "must be an array")
            continue
        seen = set()
        for i, item in enumerate(items):
            p = f"{key}[{i}]"
            if not isinstance(item, dict):
                f.error("manifest_invalid", p, "must be an object")
                continue
            name = item.get(name_key)
            if not isinstance(name, str) or not ENV_NAME.match(name):
                f.error("manifest_invalid", f"{p}.{name_key}", "must be an environment variable name")
            elif name in seen:
                f.warn("manifest_duplicate", f"{p}.{name_key}", f"{name} is declared twice")
            seen.add(name)
            if not isinstance(item.get("reason"), str) or not item["reason"].strip():
                f.error("manifest_invalid", f"{p}.reason", "every requirement needs a reason")
            for flag in ("required", "sensitive") if key == "env" else ("required",):
                if flag in item and not isinstance(item[flag], bool):
                    f.error("manifest_invalid", f"{p}.{flag}", "must be true or false")
            for extra in sorted(set(item) - fields):
                if extra in VALUE_FIELDS:
                    f.error("manifest_value", f"{p}.{extra}",
                            "the manifest declares names and reasons, never values",
                            hint="set values in the environment or .relai/simulator.env (keep it out of Git)")
                else:
                    f.warn("unknown_field", f"{p}.{extra}", f"RELAI's runtime manifest has no field {extra!r}")


def simulator_env(root: Path) -> dict[str, str]:
    """The environment RELAI gives commands: the process environment, then
    ``.relai/simulator.env`` (``KEY=VALUE`` lines). ``--env-file``/``--env``
    belong to ``relai simulate`` and have no equivalent here."""
    env = dict(os.environ)
    path = root / ".relai" / "simulator.env"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return env
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if key.startswith("export "):
            key = key[len("export "):].strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if ENV_NAME.match(key):
            env[key] = value
    return env


def unmet_requirements(data: dict[str, Any], env: dict[str, str], root: Path) -> list[str]:
    """Requirements the environment does not meet (names only, never values)."""
    problems = []
    for item in data.get("env") or []:
        if isinstance(item, dict) and item.get("required", True) and not env.get(str(item.get("name"))):
            problems.append(f"required environment variable {item.get('name')} is not set ({item.get('reason')})")
    for item in data.get("files") or []:
        if not isinstance(item, dict) or not item.get("required", True):
            continue
        value = env.get(str(item.get("path_env")))
        if not value:
            problems.append(f"{item.get('path_env')} must name a required file ({item.get('reason')})")
        elif not (root / value).is_file():
            problems.append(f"the file named by {item.get('path_env')} does not exist ({item.get('reason')})")
    return problems


def sensitive_values(data: dict[str, Any] | None, env: dict[str, str]) -> dict[str, str]:
    """Variable name -> value, for every sensitive variable that has a value."""
    out = {}
    for item in (data or {}).get("env") or []:
        if isinstance(item, dict) and item.get("sensitive") and env.get(str(item.get("name"))):
            out[item["name"]] = env[item["name"]]
    return out
