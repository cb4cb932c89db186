"""Field reads, indexes, slices, chains, pipes and flattening: the paths of JMESPath."""

from __future__ import annotations

from .pyexpr import ATOM, COND, Expr, _call, _literal, _name, literal_source, string_source
from .shapes import _path_keys, _picks


class PathsMixin:
    """Node compilers of :class:`~mapc.expressions.compiler.FunctionCompiler` (see :mod:`.emitter`)."""

    def _literal(self, node, cur):
        return _literal(node["value"])

    def _current(self, node, cur):
        return _name(cur, nonnull=cur in self._nonnull)

    _identity = _current

    def _variable(self, node, cur):
        self.uses_scope = True
        return Expr(f"scope.get({string_source(node['value'])})", ATOM, pure=True)

    def _field(self, node, cur):
        key = literal_source(node["value"])
        guarded = Expr(f"{cur}.get({key}) if isinstance({cur}, dict) else None", COND, pure=True)
        if cur not in self._dicts or guarded.src in self._memo:  # (read before, held)
            return guarded
        return Expr(f"{cur}.get({key})", ATOM, pure=True)

    def _index(self, node, cur):
        i = node["value"]
        bound = f"len({cur}) > {i}" if i >= 0 else f"len({cur}) >= {-i}"
        return Expr(
            f"{cur}[{i}] if isinstance({cur}, list) and {bound} else None", COND, pure=True
        )

    def _slice(self, node, cur):
        start, stop, step = ("" if v is None else str(v) for v in node["children"])
        text = f"{start}:{stop}" + (f":{step}" if step else "")
        return Expr(f"{cur}[{text}] if isinstance({cur}, list) else None", COND, pure=True,
                    )

    def _chain(self, children: list[dict], cur: str) -> Expr:
        e = self.compile(children[0], cur)
        for child in children[1:]:
            e = self.compile(child, self.bind(e).src)
        return e

    def _subexpression(self, node, cur):
        # `a.b[0].c`: one `jp_path` call, from the value of `a` when that is already held
        chain = _path_keys(node)
        if chain is not None and (len(chain[1]) > 1 or chain[0] and chain[0]["type"] == "variable"):
            first, keys = chain
            base = self.operands([self.compile(first, cur)])[0] if first else _name(cur)
            if isinstance(keys[0], str) and len(keys) > 2 and base.name:
                read = f"{base.src}.get({literal_source(keys[0])})"
                for src in (read, f"{read} if isinstance({base.src}, dict) else None"):
                    if src in self._memo:
                        base, keys = _name(self._memo[src]), keys[1:]
                        break
            tup = ", ".join(literal_source(k) for k in keys)
            tup = f"({tup},)" if len(keys) == 1 else f"({tup})"
            return _call(self.use_helper("jp_path"), [base.src, tup], pure=base.pure)
        return self._chain(node["children"], cur)

    _index_expression = _subexpression

    def _pipe(self, node, cur):
        children = []
        stack = [node]
        while stack:  # flatten left-nested pipes: a | b | c
            n = stack.pop()
            if n["type"] == "pipe":
                stack.extend(reversed(n["children"]))
            else:
                children.append(n)
        return self._chain(_picks(children), cur)

    def _pick(self, node, cur):
        """``x[?c] | [0]`` (or ``[-1]``): the first (last) element that passes, found without
        testing the others when the tests cannot raise; else the whole list, indexed."""
        filtered, index = node["children"]
        left, right, condition = filtered["children"]
        base = self.bind(self.compile(left, cur))
        picked = self._project(base, right, False, condition, pick=index["value"])
        if picked is None:
            whole = self._project(base, right, False, condition)
            picked = self.compile(index, self.bind(whole).src)
        return picked

    def _flatten(self, node, cur):
        base = self.compile(node["children"][0], cur)
        return _call(self.use_helper("jp_flatten"), [base.src], pure=base.pure)
