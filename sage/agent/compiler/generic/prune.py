"""Kernel modules without what they do not use, and the helpers many of them share written once.

A library generator writes a whole toolbox into every module (index ramps, gather offset
tables, size constants for buffers the program may not have); one module per case made
that cost little, one file holding every kernel of a task makes it the bulk of the file.
`prune` drops the module-level definitions nothing reaches from the launcher; `hoist`
takes the helper functions that use no module-level name of their module (buf_bytes,
make_ramp, ...) out of the modules, once each for the whole file.
"""

from __future__ import annotations

import ast
import io
import tokenize


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _span(node: ast.stmt) -> tuple[int, int]:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return first, node.end_lineno or node.lineno


def _name_lines(source: str) -> list[tuple[str, int]]:
    return [(tok.string, tok.start[0]) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.NAME]


def prune(source: str, roots: set[str]) -> str:
    """`source` without the module-level functions, classes and constants that no root (the
    launcher, and what it reaches) uses, transitively."""
    tree = ast.parse(source)
    tokens = _name_lines(source)
    nodes = [n for n in tree.body if _defined(n)]
    keep = set(roots)
    changed = True
    while changed:
        changed = False
        used: set[str] = set()
        for n in nodes:
            if _defined(n) & keep:
                lo, hi = _span(n)
                used |= {name for name, line in tokens if lo <= line <= hi}
        for n in nodes:
            names = _defined(n)
            if names & used and not names <= keep:
                keep |= names
                changed = True
    lines = source.split("\n")
    for n in sorted(nodes, key=lambda n: -n.lineno):
        if not _defined(n) & keep:
            lo, hi = _span(n)
            del lines[lo - 1:hi]
    return "\n".join(lines)


def hoist(modules: list[str]) -> tuple[str, set[str], list[str]]:
    """(the shared helpers' text, their names, the modules without them): a module-level
    function that reads no other module-level name of its module, written the same in every
    module defining it."""
    seen: dict[str, str] = {}
    clash: set[str] = set()
    spans: list[list[tuple[int, int]]] = []
    for source in modules:
        tree = ast.parse(source)
        top = set().union(*(_defined(n) for n in tree.body))
        mine = []
        for n in tree.body:
            if not isinstance(n, ast.FunctionDef) or n.decorator_list:
                continue
            free = {x.id for x in ast.walk(n) if isinstance(x, ast.Name)} - {n.name}
            if free & top:
                continue
            text = ast.get_source_segment(source, n) or ""
            if seen.setdefault(n.name, text) != text:
                clash.add(n.name)
            mine.append((n.name, _span(n)))
        spans.append(mine)
    names = set(seen) - clash
    out = []
    for source, mine in zip(modules, spans):
        lines = source.split("\n")
        for name, (lo, hi) in sorted(mine, key=lambda s: -s[1][0]):
            if name in names:
                del lines[lo - 1:hi]
        out.append("\n".join(lines))
    shared = "\n\n".join(seen[n] for n in sorted(names))
    return (shared + "\n" if shared else ""), names, out


def compact(source: str) -> str:
    """`source` without blank lines and comment lines inside definitions, and with at most one
    blank line between them (the module's leading comments, what the program computes, stay)."""
    out: list[str] = []
    for line in source.split("\n"):
        stripped = line.strip()
        if line.startswith((" ", "\t")) and (not stripped or stripped.startswith("#")):
            continue
        if not stripped and (not out or not out[-1].strip()):
            continue
        out.append(line)
    return "\n".join(out)


__all__ = ["compact", "hoist", "prune"]
