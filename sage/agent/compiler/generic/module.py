"""A generated kernel module whose sizes are tiling fields, made to take them at launch.

A library generator traced on a symbolic spec (`lift.py`) writes a module whose module-level
constants, classes and helpers may mention tiling fields (`td0`, `td1`, ...: formulas of
the launch's parameters, `sage.kernels.symbolic`). As in Ascend C, where the kernel gets a
pointer to its `TilingData` and reads it at entry (`GET_TILING_DATA`), every kernel
function takes one more argument, `tiling` (a tuple of the fields' values for this launch),
unpacks it first, and defines what depends on it (the kernel class, the size constants)
inside its body; what does not depend on it stays at module level, shared by every
launch. The host launcher takes the same tuple and hands it to the kernel it launches.
"""

from __future__ import annotations

import ast
import re

FIELD = re.compile(r"\btd\d+\b")
TILING = "tiling"


def _is_kernel(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Name) and d.id == "kernel" for d in node.decorator_list)


def _names_defined(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _kernel_calls(node: ast.AST, kernels: set[str]) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
            and isinstance(n.func.value, ast.Name) and n.func.value.id in kernels]


def _host_calls(node: ast.AST, hosts: set[str]) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in hosts]


def take_tiling(source: str, fields: int) -> str:
    """`source` (a generated module, header and all) with its kernels taking the tiling
    struct of `fields` fields (td0 .. td{fields-1}) as their last argument."""
    lines = source.split("\n")
    tree = ast.parse(source)
    unpack = f"{', '.join(f'td{k}' for k in range(fields))}{',' if fields == 1 else ''} = {TILING}" \
        if fields else None
    kernels = {n.name for n in tree.body if _is_kernel(n)}
    hosts = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not _is_kernel(n) and _kernel_calls(n, kernels)]
    # a launcher calling launchers (a lowering's several kernels, one host call) takes it too
    while True:
        names = {h.name for h in hosts}
        more = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n not in hosts and not _is_kernel(n)
                and _host_calls(n, names)]
        if not more:
            break
        hosts += more
    host_names = {h.name for h in hosts}

    # a module-level statement's lines (ast.get_source_segment splits the whole source on
    # every call: quadratic in a module of thousands of lines)
    def segment(node: ast.stmt) -> list[str]:
        return lines[_first(node) - 1:node.end_lineno]

    # what mentions a field, directly or through another module-level name that does
    candidates = [(node, _names_defined(node), _names_used(node), bool(FIELD.search("\n".join(segment(node)))))
                  for node in tree.body if _names_defined(node) and not _is_kernel(node) and node not in hosts]
    dependent: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node, names, used, mentions in candidates:
            if names <= dependent:
                continue
            if mentions or used & dependent:
                dependent |= names
                changed = True
    moved = [n for n in tree.body if _names_defined(n) & dependent and not _is_kernel(n) and n not in hosts]
    edits: list[tuple[int, int, list[str]]] = []      # (first line, last line) -> replacement lines

    for node in tree.body:
        if node in moved:
            edits.append((_first(node), node.end_lineno, []))
            continue
        if not isinstance(node, ast.FunctionDef):
            continue
        calls = _kernel_calls(node, kernels) + _host_calls(node, host_names)
        if not _is_kernel(node) and node not in hosts:
            continue
        text = segment(node)
        text = _with_calls_taking_tiling(text, _first(node), calls)
        body_at = node.body[0].lineno - _first(node)
        indent = " " * node.body[0].col_offset
        text[node.lineno - _first(node)] = _add_param(text[node.lineno - _first(node)])
        prologue = [unpack] if unpack else []
        if _is_kernel(node):
            # only what this kernel reaches: a module of several kernels (a transposed top-k's
            # copy in, sort and two copies out) gave each of them every kernel's class, four
            # times the text (level1/9_top_k: 57 KB a launch)
            for m in _reached(node, moved):
                prologue += [ln for ln in segment(m)]
        else:
            # the host launcher: the size constants it reads (module constants that need the fields)
            used = _names_used(node)
            prologue += [ln for m in moved if isinstance(m, ast.Assign) and _names_defined(m) & used
                         for ln in segment(m)]
        prologue = [indent + ln if ln else ln for ln in prologue]
        edits.append((_first(node), node.end_lineno, text[:body_at] + prologue + text[body_at:]))
    for first, last, new in sorted(edits, reverse=True):
        lines[first - 1:last] = new
    return "\n".join(lines)


def _reached(node: ast.stmt, moved: list[ast.stmt]) -> list[ast.stmt]:
    """The moved statements `node` uses, directly or through one another, in module order."""
    names = _names_used(node)
    kept: set[int] = set()
    changed = True
    while changed:
        changed = False
        for k, m in enumerate(moved):
            if k not in kept and _names_defined(m) & names:
                kept.add(k)
                names |= _names_used(m)
                changed = True
    return [m for k, m in enumerate(moved) if k in kept]


def _first(node: ast.stmt) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def _add_param(line: str) -> str:
    m = re.match(r"^(\s*def \w+\()(.*)(\)\s*:\s*)$", line)
    if m is None:
        raise ValueError(f"a def line written over several lines: {line!r}")
    params = m.group(2).strip()
    return f"{m.group(1)}{params + ', ' if params else ''}{TILING}{m.group(3)}"


def _with_calls_taking_tiling(text: list[str], first: int, calls: list[ast.Call]) -> list[str]:
    """Kernel launches `kern[n](...)` in `text` (lines of a def starting at line `first`)
    with the tiling struct as their last argument."""
    for call in sorted(calls, key=lambda c: (c.end_lineno, c.end_col_offset), reverse=True):
        row = call.end_lineno - first
        line = text[row]
        col = _utf8_col(line, call.end_col_offset) - 1       # the closing parenthesis
        assert line[col] == ")", line
        sep = ", " if call.args or call.keywords else ""
        text[row] = line[:col] + sep + TILING + line[col:]
    return text


def _utf8_col(line: str, byte_col: int) -> int:
    return len(line.encode()[:byte_col].decode())


__all__ = ["FIELD", "TILING", "take_tiling"]
