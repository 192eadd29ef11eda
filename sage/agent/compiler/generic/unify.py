"""Kernels of one task written once as a template over their code paths (issue 31: file size).

`templates.py` shares kernels that are the same token for token but for dtypes and
numbers. A task whose cases each bring their own dtype and broadcast pattern (logical_and:
34 cases, 30 kernels) has kernels that differ in a few statements (a broadcast input read
once per row instead of per tile, one more loop index, a cast chain) and are the same
elsewhere. As an Ascend C kernel written once as `template <typename T, int MODE>` keeps the
shared code once and puts the mode-specific statements under `if constexpr (MODE == ...)`,
these are written as one function `kernel_unified_<k>(V, DT0, N1, ...)`: statements every
kernel has once, the others under `if V in (...)` (V: which kernel), tokens that differ
(dtype names, numbers) as parameters. Each kernel is the function called with its V and
values, which returns its launcher; the branches on V are Python `if`s on a constant,
decided before any DSL instruction runs, so each kernel executes exactly its own
statements.

The statements are aligned per block (module, class, function, loop) with difflib; a
compound statement whose header matches is merged inside. A kernel's tiling fields
(`tdK`, unpacked from its `tiling` tuple, numbered per kernel) are read as `tiling[K]`, so
that the field index is one more number to pass.
"""

from __future__ import annotations

import ast
import difflib
import functools
import io
import re
import tokenize
from dataclasses import dataclass, field

from sage.agent.compiler.generic.templates import DTYPE_NAMES

_SKIP = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENDMARKER)
_UNPACK = re.compile(r"^\s*td0(, td\d+)*,? = tiling\n", re.M)
_FIELD = re.compile(r"\btd(\d+)\b")
# a group is kept only if it saves this fraction of its members' own text (else they stay apart)
_MIN_GAIN = 0.15


@dataclass
class _Leaf:
    """A simple statement (or a compound one merged as a whole): its text per kernel."""

    key: tuple
    texts: dict[int, str] = field(default_factory=dict)


@dataclass
class _Block:
    """A compound statement with a body (def, class, for, while, if without else)."""

    key: tuple
    heads: dict[int, str] = field(default_factory=dict)
    body: list = field(default_factory=list)


@functools.lru_cache(maxsize=1 << 16)
def _tokens(text: str) -> tuple[tokenize.TokenInfo, ...]:
    return tuple(t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _SKIP)


def _variable(t: tokenize.TokenInfo) -> bool:
    return t.type == tokenize.NUMBER or (t.type == tokenize.NAME and t.string in DTYPE_NAMES)


def _key(text: str) -> tuple:
    return tuple((t.type, "" if _variable(t) else t.string) for t in _tokens(text))


def _dedent(lines: list[str], col: int) -> str:
    return "\n".join(ln[col:] if ln[:col].strip() == "" else ln.lstrip() for ln in lines)


def _items(source: str, lines: list[str], body: list[ast.stmt]) -> list:
    out = []
    for node in body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        col = node.col_offset
        inner = getattr(node, "body", None)
        blocky = isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.While, ast.If)) and \
            not getattr(node, "orelse", None) and inner and inner[0].lineno > node.lineno
        if blocky:
            head = _dedent(lines[first - 1:inner[0].lineno - 1], col)
            out.append(_Block(("B", _key(head)), {-1: head}, _items(source, lines, inner)))
        else:
            text = _dedent(lines[first - 1:node.end_lineno], col)
            out.append(_Leaf(("L", _key(text)), {-1: text}))
    return out


def _parse(text: str) -> list:
    text = _FIELD.sub(r"tiling[\1]", _UNPACK.sub("", text))
    return _items(text, text.split("\n"), ast.parse(text).body)


def _own(items: list, v: int) -> list:
    """Items parsed for kernel -1, relabelled as kernel v."""
    for it in items:
        if isinstance(it, _Leaf):
            it.texts = {v: it.texts[-1]}
        else:
            it.heads = {v: it.heads[-1]}
            _own(it.body, v)
    return items


def _merge(into: list, new: list, v: int) -> list:
    """`into` (merged items of earlier kernels) with kernel v's items aligned into it."""
    matcher = difflib.SequenceMatcher(None, [it.key for it in into], [it.key for it in new], autojunk=False)
    out: list = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for a, b in zip(into[i1:i2], new[j1:j2]):
                if isinstance(a, _Leaf):
                    a.texts[v] = b.texts[v]
                else:
                    a.heads[v] = b.heads[v]
                    a.body = _merge(a.body, b.body, v)
                out.append(a)
        else:
            out += into[i1:i2] + new[j1:j2]
    return out


def _kernels_of(it) -> frozenset[int]:
    return frozenset(it.texts if isinstance(it, _Leaf) else it.heads)


def _test(mine: frozenset[int], outer: frozenset[int]) -> str:
    """The condition selecting kernels `mine` among `outer` (the kernels reaching this block)."""
    others = outer - mine
    if len(others) < len(mine):
        return f"V != {min(others)}" if len(others) == 1 else f"V not in ({', '.join(map(str, sorted(others)))})"
    return f"V == {min(mine)}" if len(mine) == 1 else f"V in ({', '.join(map(str, sorted(mine)))})"


class _Writer:
    def __init__(self, n: int) -> None:
        self.n = n
        self.params: list[tuple[str, dict[int, str]]] = []     # (name, its value per kernel that reads it)

    def param(self, values: dict[int, str], kind: str) -> str:
        """A parameter holding `values` (per kernel): one already made if it agrees on every
        kernel both have values for (kernels that never read it pass None)."""
        for name, have in self.params:
            if name.startswith(kind) and all(have.get(v, x) == x for v, x in values.items()):
                have.update(values)
                return name
        self.params.append((f"{kind}{len(self.params)}", dict(values)))
        return self.params[-1][0]

    def text(self, texts: dict[int, str]) -> str:
        """The statement with each token that differs between kernels as a parameter."""
        order = sorted(texts)
        toks = {v: _tokens(texts[v]) for v in order}
        base = toks[order[0]]
        lines = texts[order[0]].split("\n")
        for pos in reversed(range(len(base))):
            values = {v: toks[v][pos].string for v in order}
            if len(set(values.values())) < 2:
                continue
            kind = "DT" if base[pos].type == tokenize.NAME else "N"
            name = self.param(values, kind)
            (r0, c0), (r1, c1) = base[pos].start, base[pos].end
            assert r0 == r1
            lines[r0 - 1] = lines[r0 - 1][:c0] + name + lines[r0 - 1][c1:]
        return "\n".join(lines)

    def body(self, items: list, outer: frozenset[int]) -> list[str]:
        out: list[str] = []
        k = 0
        while k < len(items):
            mine = _kernels_of(items[k])
            run = [items[k]]
            while k + len(run) < len(items) and _kernels_of(items[k + len(run)]) == mine:
                run.append(items[k + len(run)])
            k += len(run)
            lines = [ln for it in run for ln in self.item(it, mine)]
            if mine == outer:
                out += lines
            else:
                out += [f"if {_test(mine, outer)}:"] + ["    " + ln if ln else ln for ln in lines]
        return out

    def item(self, it, mine: frozenset[int]) -> list[str]:
        if isinstance(it, _Leaf):
            return self.text(it.texts).split("\n")
        head = self.text(it.heads).split("\n")
        return head + ["    " + ln if ln else ln for ln in self.body(it.body, mine)]


@functools.lru_cache(maxsize=1 << 16)
def _assigned(text: str) -> frozenset[str]:
    if "=" not in text:
        return frozenset()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return frozenset()
    return frozenset({n.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
            for n in ast.walk(t) if isinstance(n, ast.Name)})


def _def_name(it) -> str | None:
    m = re.search(r"^def (\w+)\(", it.heads[-1], re.M) if isinstance(it, _Block) else None
    return m.group(1) if m else None


def _scoped(parsed: list[list]) -> list[list]:
    """Python decides per function which names are its locals: a name one kernel assigns in
    its kernel function (a size read from the tiling) and another at module level (a constant)
    would be a local of the shared function for both, unbound in the second. The second gets
    a copy of its module-level assignment at the start of that function, so that the name is
    bound in every kernel's path."""
    local: dict[str, set[str]] = {}
    for items in parsed:
        for it in items:
            if _def_name(it):
                local.setdefault(_def_name(it), set()).update(
                    *(_assigned(b.texts[-1]) for b in it.body if isinstance(b, _Leaf)))
    for items in parsed:
        top = {n: it for it in items if isinstance(it, _Leaf) for n in _assigned(it.texts[-1])}
        for it in items:
            name = _def_name(it)
            if not name:
                continue
            own = set().union(*(_assigned(b.texts[-1]) for b in it.body if isinstance(b, _Leaf)))
            need = (local[name] - own) & set(top)
            while True:      # and what those assignments read that is local elsewhere too
                more = {n for m in need for n in re.findall(r"\b\w+\b", top[m].texts[-1].split("=", 1)[1])
                        if n in top and n in local[name] and n not in own} - need
                if not more:
                    break
                need |= more
            chosen = {id(top[n]) for n in need}
            copies = [_Leaf(t.key, dict(t.texts)) for t in items if id(t) in chosen]
            it.body = copies + it.body
    return parsed


def _template(parsed: list[list], members: list[int], entry: str, name: str) -> tuple[str, list[str]]:
    parsed = _scoped(parsed)
    merged: list = []
    for v, i in enumerate(members):
        merged = _merge(merged, _own(parsed[i], v), v)
    w = _Writer(len(members))
    body = w.body(merged, frozenset(range(len(members))))
    text = f"def {name}({', '.join(['V'] + [p for p, _ in w.params])}):\n" + "\n".join(
        "    " + ln if ln else ln for ln in body) + f"\n    return {entry}\n"
    calls = [f"{name}({', '.join([str(v)] + [values.get(v, 'None') for _, values in w.params])})"
             for v in range(len(members))]
    return text, calls


def _bytes(it) -> int:
    if isinstance(it, _Leaf):
        return len(next(iter(it.texts.values()))) + 1
    return len(next(iter(it.heads.values()))) + 1 + sum(_bytes(b) for b in it.body)


def _added(into: list, new: list) -> int:
    """Bytes kernel `new` would add to a template over `into`: its statements that align with
    none there (a cheap bound for grouping; the template itself is written once, at the end).
    Each `if V` around them costs a line too."""
    matcher = difflib.SequenceMatcher(None, [it.key for it in into], [it.key for it in new], autojunk=False)
    out = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out += sum(_added(a.body, b.body) for a, b in zip(into[i1:i2], new[j1:j2]) if isinstance(a, _Block))
        elif j2 > j1:
            out += 20 + sum(_bytes(b) for b in new[j1:j2])
    return out


def unified(modules: list[str], entries: list[str], kind: str = "kernel") -> tuple[str, list[str | None]]:
    """(the templates' text, per module the call making it (it returns its `<entry>`), or
    None when it is written on its own), as `templates.templated`. Modules are grouped
    greedily: each joins the group it adds the fewest bytes to, if that saves at least
    _MIN_GAIN of its own size; a group of one is no template."""
    groups: list[tuple[list[int], list]] = []     # (members, their merged items)
    for i, module in enumerate(modules):
        mine = _parse(module)
        own = sum(_bytes(it) for it in mine)
        best = None
        for k, (members, merged) in enumerate(groups):
            if entries[members[0]] != entries[i]:
                continue
            added = _added(merged, mine)
            if added <= (1 - _MIN_GAIN) * own and (best is None or added < best[0]):
                best = (added, k)
        if best is None:
            groups.append(([i], _own(mine, 0)))
        else:
            members, merged = groups[best[1]]
            groups[best[1]] = (members + [i], _merge(merged, _own(mine, len(members)), len(members)))
    parts: list[str] = []
    made: list[str | None] = [None] * len(modules)
    for members, _ in groups:
        if len(members) < 2:
            continue
        text, calls = _template([_parse(modules[j]) for j in members], list(range(len(members))),
                                entries[members[0]], f"{kind}_unified_{len(parts)}")
        parts.append(text)
        for j, call in zip(members, calls):
            made[j] = call
    return "\n\n".join(parts), made


__all__ = ["unified"]
