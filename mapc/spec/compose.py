"""Spec composition (`extends:`): build on a library spec or another spec file.

A project spec names its base by library name (`extends: inspect-ai-eval-log`,
see ``mapc specs``) or by a path relative to its own file
(`extends: ../base.yaml`). The base is loaded with the same positioned loader,
its own `extends` resolved first (cycles are an error), and then the project
is laid over it:

- `source`, `tables`, `records` and `targets` merge like a JSON Merge Patch
  (RFC 7386): mappings merge key by key, `null` removes an inherited key, any
  other value (a string, a list) replaces the inherited one;
- `evaluators` merge by `id`: a project entry replaces the base entry with the
  same id in place, new ids are appended;
- every other top-level key (`name`, `version`, `description`, `tasks`,
  `agent`, `fixtures`, `reward`, `usage`, ...) is replaced as a whole.

Every node keeps the position of the file it came from, so a diagnostic about
an inherited expression points into the base file. Relative paths (fixtures,
`tasks.from`) resolve against the file that wrote them (see
``mapc.spec.semantic``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mapc.core.diagnostics import Diagnostics
from mapc.spec.library import library_specs
from mapc.spec.loader import Budget, LoadedSpec, load_file
from mapc.spec.schema import NAME_PATTERN

#: Top-level keys whose mappings merge recursively (RFC 7386 merge patch).
MERGED_KEYS = ("source", "tables", "records", "targets")
#: Where event rules are merged by `name` (instead of the project's list replacing the base's).
RULES = ("records", "events", "rules")
#: Keys that say how a project rule combines with the inherited ones; gone once merged.
POSITION_KEYS = ("before", "after", "remove")
#: Keys that make a project's `rules` list merge by name; a list without any replaces the base's.
RULE_KEYS = ("name",) + POSITION_KEYS
#: Bound on the length of an `extends` chain (a cycle is reported before this).
MAX_DEPTH = 16
_SUFFIXES = (".yaml", ".yml")


def _is_library_name(ref: str) -> bool:
    return "/" not in ref and "\\" not in ref and not ref.endswith(_SUFFIXES) and bool(re.match(NAME_PATTERN, ref))


def locate(ref: str, spec_file: str) -> tuple[Path | None, str | None, str | None]:
    """Where `extends: ref` points: ``(path, error message, hint)``."""
    if _is_library_name(ref):
        specs = library_specs()
        if ref in specs:
            return specs[ref], None, None
        from mapc.spec.schema_check import suggest

        guess = suggest(ref, specs)
        return None, f"unknown library spec {ref!r}", (
            (f"{guess} " if guess else "")
            + f"`mapc specs` lists the library; to build on a file, give a path such as ./{ref}.yaml"
        )
    from mapc.spec.checks.names import path_problem

    if path_problem(ref):
        return None, f"the `extends` path {path_problem(ref)}", "give the path of a spec file"
    from mapc.core import safeio

    path = Path(ref)
    if not path.is_absolute():
        path = Path(spec_file).parent / path  # shown as the user would write it
    folder = Path(spec_file).parent
    try:
        real = safeio.contained_file(path, safeio.input_roots(folder))
    except FileNotFoundError:
        return None, f"spec file not found: {ref}", f"paths are relative to {Path(spec_file).name}'s folder"
    except (safeio.UnsafePath, OSError) as exc:
        return None, f"the base spec {ref} {exc}", safeio.outside_hint(folder.resolve())
    if not real.name.endswith(_SUFFIXES):
        return None, f"the base spec {ref} is not a .yaml or .yml file", "give the path of a spec file"
    return path, None, None


def resolve_extends(loaded: LoadedSpec, diags: Diagnostics, _chain: tuple[str, ...] = (),
                    budget: Budget | None = None) -> LoadedSpec:
    """The spec with its `extends` chain applied; problems go to ``diags``.

    ``budget``: what the project's own load left; every base spends from it (one budget for the
    whole chain, so sixteen files cost no more than one spec at the limits)."""
    data = loaded.data
    if not isinstance(data, dict) or "extends" not in data:
        for path, tag in loaded.tags.items():
            if tag == "!override":
                diags.add(loaded.diag("unused_override", path, "`!override` replaces an inherited value, and "
                                      "this spec extends none: it has no effect", severity="warning",
                                      hint="remove the tag, or add `extends:`"))
        return loaded
    ref = data["extends"]
    if not isinstance(ref, str) or not ref.strip():
        diags.add(loaded.diag("wrong_type", ("extends",), "`extends` must be a library spec name or a path",
                              hint="e.g. `extends: inspect-ai-eval-log` or `extends: ./base.yaml`"))
        return loaded
    chain = _chain + (str(Path(loaded.file).resolve()),)
    path, error, hint = locate(ref, loaded.file)
    if path is None:
        diags.add(loaded.diag("unknown_extends", ("extends",), error, hint=hint))
        return loaded
    if str(path.resolve()) in chain:
        names = " -> ".join(Path(p).name for p in chain + (str(path.resolve()),))
        diags.add(loaded.diag("extends_cycle", ("extends",), f"`extends` forms a cycle: {names}",
                              hint="a spec cannot build on itself, directly or through another spec"))
        return loaded
    if len(chain) >= MAX_DEPTH:
        diags.add(loaded.diag("extends_too_deep", ("extends",), f"`extends` chain is longer than {MAX_DEPTH} specs"))
        return loaded
    budget = budget or Budget()
    base, found = load_file(path, budget)
    if found or base.data is None:
        diags.extend(found)
        if base.data is None:
            diags.add(loaded.diag("invalid_extends", ("extends",), f"cannot load the base spec {ref!r}",
                                  hint=f"fix {path} first (see the errors above)"))
        return loaded
    if not isinstance(base.data, dict):
        diags.add(base.diag("wrong_type", (), "a spec must be a mapping of keys"))
        return loaded
    base = resolve_extends(base, diags, chain, budget)
    return merge(base, loaded, diags)


def merge(base: LoadedSpec, project: LoadedSpec, diags: Diagnostics | None = None) -> LoadedSpec:
    """Lay ``project`` over ``base``; positions are kept per node and file."""
    out = LoadedSpec(file=project.file, text=project.text)
    out.texts = {**base.texts, **project.texts}
    _Merger(out, base, project, diags).top()
    return out


class _Merger:
    def __init__(self, out: LoadedSpec, base: LoadedSpec, project: LoadedSpec, diags: Diagnostics | None = None):
        self.out, self.base, self.project = out, base, project
        self.diags = diags if diags is not None else Diagnostics()

    def top(self) -> None:
        b, p = self.base.data, self.project.data
        self._mark_node(self.project, (), ())
        out: dict[str, Any] = {}
        for key in list(b) + [k for k in p if k not in b]:
            path = (key,)
            if key == "extends":
                continue
            if key not in p:
                self._take(self.base, path, path)
                out[key] = b[key]
            elif key in b and key in MERGED_KEYS:
                value = self._patch(path, path, path)
                if value is not _DROP:
                    out[key] = value
            elif (key in b and key == "evaluators" and isinstance(b[key], list) and isinstance(p[key], list)
                  and not self._override(path)):
                out[key] = self._evaluators()
            elif key in b and p[key] is None:
                continue  # `key: null` removes an inherited key
            else:
                self._take(self.project, path, path)
                out[key] = p[key]
        self.out.data = out

    def _override(self, ppath: tuple) -> bool:
        return self.project.tags.get(ppath) == "!override"

    # -- merge patch --------------------------------------------------------
    def _patch(self, bpath: tuple, ppath: tuple, dst: tuple) -> Any:
        """RFC 7386: merge ``project[ppath]`` onto ``base[bpath]``, placed at ``dst``."""
        bval, pval = _get(self.base.data, bpath), _get(self.project.data, ppath)
        if pval is None:
            return _DROP
        if dst == RULES and isinstance(bval, list) and isinstance(pval, list) and not self._override(ppath):
            if any(isinstance(r, dict) and any(k in r for k in RULE_KEYS) for r in pval):
                return self._rules(bpath, ppath, dst)
        if not (isinstance(bval, dict) and isinstance(pval, dict)) or self._override(ppath):
            self._take(self.project, ppath, dst)
            return pval
        self._mark_node(self.base, bpath, dst)  # a tag the base gave this mapping stays ...
        self._mark_node(self.project, ppath, dst)  # ... unless the project's node says otherwise
        merged: dict[str, Any] = {}
        for key in list(bval) + [k for k in pval if k not in bval]:
            if key not in pval:
                self._take(self.base, bpath + (key,), dst + (key,))
                merged[key] = bval[key]
            elif key not in bval:
                if pval[key] is None:
                    continue  # deleting what is not there: nothing to do
                self._take(self.project, ppath + (key,), dst + (key,))
                merged[key] = pval[key]
            else:
                value = self._patch(bpath + (key,), ppath + (key,), dst + (key,))
                if value is not _DROP:
                    merged[key] = value
        return merged

    def _rules(self, bpath: tuple, ppath: tuple, dst: tuple) -> list:
        """Event rules merged by `name`: a project rule with a base rule's name is merged into it (or
        replaces it with `!override`, or deletes it with `remove: true`); other project rules are
        added; `before:`/`after:` place a rule next to a named one. The project's rules apply in
        the order written, so one may refer to a rule an earlier one added."""
        base, project = _get(self.base.data, bpath), _get(self.project.data, ppath)
        # (origin, index in its list) per merged rule; positions are copied at the end
        order: list[tuple[str, int]] = [("base", i) for i in range(len(base))]
        merged: dict[tuple[str, int], Any] = {("base", i): r for i, r in enumerate(base)}
        names: dict[tuple[str, int], str] = {k: r["name"] for k, r in merged.items()
                                              if isinstance(r, dict) and isinstance(r.get("name"), str)}
        seen: dict[str, int] = {}

        def where(name: str) -> int | None:
            return next((n for n, k in enumerate(order) if names.get(k) == name), None)

        for j, rule in enumerate(project):
            rpath = ppath + (j,)
            if not isinstance(rule, dict):
                order.append(("project", j))
                merged[("project", j)] = rule
                continue
            name = rule.get("name")
            if isinstance(name, str):
                if name in seen:
                    self._error("duplicate_id", rpath + ("name",), f"rule name {name!r} is already used by "
                                f"rules[{seen[name]}] of this spec", "give each rule its own name")
                    continue
                seen[name] = j
            at = where(name) if isinstance(name, str) else None
            anchor_key = "before" if "before" in rule else "after" if "after" in rule else None
            if "before" in rule and "after" in rule:
                self._error("conflicting_keys", rpath + ("after",), "a rule goes `before` one rule or `after` "
                            "one, not both", key=True)
                continue
            if rule.get("remove") is True:
                extra = [k for k in rule if k not in ("name", "remove")]
                if extra:
                    self._error("conflicting_keys", rpath + (extra[0],), "a `remove: true` rule takes only "
                                "`name`", key=True, hint="remove " + ", ".join(f"`{k}`" for k in extra))
                elif at is None:
                    self._unknown(rpath + ("name" if "name" in rule else "remove",), name,
                                  [names[k] for k in order if k in names], "remove")
                else:
                    del order[at]
                continue
            if at is not None:  # the project changes an inherited rule
                if self._override(rpath):
                    key = ("project", j)
                    merged[key] = rule
                    names[key] = name
                    order[at] = key
                else:
                    key = order[at]
                    merged[key] = ("patch", key[1], j)
            else:
                key = ("project", j)
                merged[key] = rule
                if isinstance(name, str):
                    names[key] = name
            if anchor_key is not None:
                anchor = rule[anchor_key]
                if at is not None:
                    order.remove(key)
                target = where(anchor) if isinstance(anchor, str) else None
                if target is None:
                    self._unknown(rpath + (anchor_key,), anchor, [names[k] for k in order if k in names],
                                  anchor_key)
                    target = len(order) if at is None else at
                    order.insert(min(target, len(order)), key)
                else:
                    order.insert(target + (anchor_key == "after"), key)
            elif at is None:
                order.append(key)
        return self._place_rules(order, merged, bpath, ppath, dst)

    def _place_rules(self, order, merged, bpath: tuple, ppath: tuple, dst: tuple) -> list:
        out: list = []
        self._mark_node(self.project, ppath, dst)
        for n, key in enumerate(order):
            item = merged[key]
            origin, i = key
            if isinstance(item, tuple) and item and item[0] == "patch":
                _, bi, j = item
                value = self._patch(bpath + (bi,), ppath + (j,), dst + (n,))
            elif origin == "base":
                self._take(self.base, bpath + (i,), dst + (n,))
                value = item
            else:
                self._take(self.project, ppath + (i,), dst + (n,))
                value = item
            if isinstance(value, dict) and any(k in value for k in POSITION_KEYS):
                value = {k: v for k, v in value.items() if k not in POSITION_KEYS}
                for k in POSITION_KEYS:
                    for table in (self.out.values, self.out.keys, self.out.scalars):
                        table.pop(dst + (n, k), None)
            out.append(value)
        return out

    def _error(self, code: str, path: tuple, message: str, hint: str | None = None, key: bool = False) -> None:
        self.diags.add(self.project.diag(code, path, message, hint=hint, key=key))

    def _unknown(self, path: tuple, name: Any, known: list, what: str) -> None:
        from mapc.spec.schema_check import suggest

        guess = suggest(name, known) if isinstance(name, str) else None
        listed = ", ".join(known[:12]) if known else "none: give the base's rules a `name` to refer to them"
        self._error("unknown_rule", path, f"`{what}` names no rule {name!r} (rules with a name: {listed})",
                    (f"{guess} " if guess else "") + "a rule is named by its `name:`")

    def _evaluators(self) -> list:
        base, project = self.base.data["evaluators"], self.project.data["evaluators"]
        by_id = {e["id"]: i for i, e in enumerate(project) if isinstance(e, dict) and isinstance(e.get("id"), str)}
        self._mark_node(self.project, ("evaluators",), ("evaluators",))
        merged: list = []
        used: set[int] = set()
        for i, ev in enumerate(base):
            j = by_id.get(ev.get("id")) if isinstance(ev, dict) else None
            if j is not None:
                self._take(self.project, ("evaluators", j), ("evaluators", len(merged)))
                merged.append(project[j])
                used.add(j)
            else:
                self._take(self.base, ("evaluators", i), ("evaluators", len(merged)))
                merged.append(ev)
        for j, ev in enumerate(project):
            if j not in used:
                self._take(self.project, ("evaluators", j), ("evaluators", len(merged)))
                merged.append(ev)
        return merged

    # -- positions ---------------------------------------------------------------
    def _mark_node(self, spec: LoadedSpec, src: tuple, dst: tuple) -> None:
        """Copy the position of one node (and its key and tag) without its children."""
        if src in spec.values:
            self.out.values[dst] = spec.values[src]
        if src in spec.keys:
            self.out.keys[dst] = spec.keys[src]
        if src in spec.scalars:
            self.out.scalars[dst] = spec.scalars[src]
        if src in spec.tags:
            self.out.tags[dst] = spec.tags[src]

    def _take(self, spec: LoadedSpec, src: tuple, dst: tuple) -> None:
        """Copy the positions of a whole subtree from ``spec``'s ``src`` to ``dst``."""
        self._mark_node(spec, src, dst)
        value = _get(spec.data, src)
        if isinstance(value, dict):
            for key in value:
                self._take(spec, src + (key,), dst + (key,))
        elif isinstance(value, list):
            for i in range(len(value)):
                self._take(spec, src + (i,), dst + (i,))


class _Drop:
    def __repr__(self) -> str:
        return "<drop>"


_DROP = _Drop()


def _get(data: Any, path: tuple) -> Any:
    for part in path:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data
