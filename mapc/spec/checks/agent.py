"""`agent`: a command to run or a trace to replay, its placeholders, environment and
requirements (nothing the operating system would refuse in argv or the environment)."""

from __future__ import annotations

from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.names import template_problem

PLACEHOLDERS = ("task_id", "seed", "candidate", "trace", "input_file", "project_root")


def build_agent(ctx: Context, data: dict | None) -> ir.Agent | None:
    """`agent`: exactly one of `command` and `replay`; placeholders, argv and environment the OS accepts."""
    if data is None:
        return None
    path = ("agent",)
    has_cmd, has_replay = "command" in data, "replay" in data
    if has_cmd == has_replay:
        ctx.error("agent_mode", path, "an agent needs exactly one of `command` (run it) or `replay` (a recorded trace)",
                  key=bool(path))
    if has_cmd and "trace" not in data:
        ctx.error("missing_key", path, "`command` needs `trace`: where the run leaves its trace",
                  hint='e.g. trace: "runs/{task_id}.jsonl"')
    for i, arg in enumerate(data.get("command") or []):
        _placeholders(ctx, arg, path + ("command", i), PLACEHOLDERS)
        _process_text(ctx, arg, path + ("command", i), "an argument")
    for i, arg in enumerate(data.get("prepare") or []):
        _placeholders(ctx, arg, path + ("prepare", i), ("project_root",))
        _process_text(ctx, arg, path + ("prepare", i), "an argument")
    for k, v in (data.get("env") or {}).items():
        _placeholders(ctx, v, path + ("env", k), PLACEHOLDERS)
        _process_text(ctx, v, path + ("env", k), "an environment value")
        if not k or "=" in k or "\0" in k:
            ctx.error("invalid_name", path + ("env", k), f"{k!r} cannot be an environment variable name",
                      hint="a name is not empty and holds no `=` or NUL character", key=True)
    for key in ("trace", "replay"):
        if key in data:
            _placeholders(ctx, data[key], path + (key,), tuple(p for p in PLACEHOLDERS if p != "trace"))
            _process_text(ctx, data[key], path + (key,), "a file path")
    req = data.get("requires") or {}
    envs, names = [], set()
    for i, e in enumerate(req.get("env") or []):
        if e["name"] in names:
            ctx.error("duplicate_id", path + ("requires", "env", i, "name"), f"variable {e['name']} is declared twice")
        names.add(e["name"])
        envs.append(ir.EnvRequirement(e["name"], e.get("required", True), e.get("sensitive", False), e["reason"]))
    files = [ir.FileRequirement(f["path_env"], f.get("required", True), f["reason"]) for f in req.get("files") or []]
    return ir.Agent(
        command=tuple(data["command"]) if has_cmd else None,
        timeout=float(data.get("timeout", 600)),
        trace=data.get("trace"),
        replay=data.get("replay"),
        env=tuple(sorted((data.get("env") or {}).items())),
        seed_env=data.get("seed_env"),
        prepare=tuple(data["prepare"]) if "prepare" in data else None,
        requires_env=tuple(envs),
        requires_files=tuple(files),
        path=path,
    )


def _process_text(ctx: Context, text: str, path: tuple, what: str) -> None:
    """The operating system cannot pass a NUL character in argv or the environment."""
    if isinstance(text, str) and "\0" in text:
        ctx.error("invalid_value", path, f"{what} cannot contain a NUL character (the operating system refuses it)",
                  hint="remove the \\0 (NUL) from the string")


def _placeholders(ctx: Context, text: str, path: tuple, allowed) -> None:
    """An `unknown_placeholder` error at the first `{` of ``text`` when it is no template over ``allowed``."""
    problem = template_problem(text, allowed)
    if problem:
        col = text.find("{")
        ctx.diags.append(ctx.spec.diag("unknown_placeholder", path, problem,
                                       mark=ctx.spec.expression_mark(path, max(col, 0))))
