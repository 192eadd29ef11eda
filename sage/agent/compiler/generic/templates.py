"""Kernels that differ only in their element types and constants, written once as a template.

A task with many dtypes (a comparison over int8, int16, int32, ..., each with its own
broadcast pattern) compiles to kernels whose texts are the same token for token apart from
dtype names (`AllocTensor(int16)` / `AllocTensor(int32)`) and numbers (`ALIGN = 16` / `8`),
as a C++ kernel templated on its element type is one source. Such kernels are written once,
as a function of those tokens (`kernel_template_0(DT0, N0, ...)`) whose body is the module
with each differing token replaced by its parameter; each kernel is the template called
with its own values, which returns its launcher. Replacing a token by a name bound to the
same value changes nothing the kernel does.
"""

from __future__ import annotations

import io
import tokenize

from sage.kernels import HEADER

# The DSL's element type names (a NAME token a template may take as a parameter).
DTYPE_NAMES = frozenset({"float32", "float16", "half", "bfloat16", "int8", "uint8", "int16", "uint16", "int32",
                         "uint32", "int64", "bool_"})


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type != tokenize.COMMENT]


def _variable(tok: tokenize.TokenInfo) -> bool:
    return tok.type == tokenize.NUMBER or tok.type == tokenize.NAME and tok.string in DTYPE_NAMES


def _key(tokens: list[tokenize.TokenInfo]) -> tuple:
    return tuple((t.type, "" if _variable(t) else t.string) for t in tokens
                 if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT))


def templated(modules: list[str], entries: list[str], kind: str = "kernel") -> tuple[str, list[str | None]]:
    """(the templates' text, per module the call instantiating it (it returns its `<entry>`),
    or None when it is written on its own). `modules` are kernel modules without their header
    (or host tiling functions), `entries` the names each returns; the templates are named
    `<kind>_template_<k>`."""
    toks = [_tokens(m) for m in modules]
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(toks):
        groups.setdefault((entries[i], _key(t)), []).append(i)
    parts: list[str] = []
    lines: list[str | None] = [None] * len(modules)
    for members in groups.values():
        if len(members) < 2:
            continue
        k = len(parts)
        significant = [[t for t in toks[i] if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                                                tokenize.DEDENT)] for i in members]
        # one parameter per distinct column of values (a token that is the same in every member stays)
        columns: dict[tuple, str] = {}
        slots: dict[int, str] = {}
        for pos in range(len(significant[0])):
            values = tuple(s[pos].string for s in significant)
            if len(set(values)) > 1:
                name = columns.setdefault(values, f"{'DT' if significant[0][pos].type == tokenize.NAME else 'N'}"
                                                  f"{len(columns)}")
                slots[pos] = name
        body = _substituted(toks[members[0]], slots)
        params = list(columns.values())
        parts.append(f"def {kind}_template_{k}({', '.join(params)}):\n"
                     + "\n".join(("    " + ln) if ln.strip() else "" for ln in body.strip("\n").split("\n"))
                     + f"\n    return {entries[members[0]]}\n")
        for j, i in enumerate(members):
            args = [next(v[j] for v, n in columns.items() if n == p) for p in params]
            lines[i] = f"{kind}_template_{k}({', '.join(args)})"
    return "\n\n".join(parts), lines


def _substituted(tokens: list[tokenize.TokenInfo], slots: dict[int, str]) -> str:
    out = []
    pos = 0
    for t in tokens:
        if t.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            out.append(t)
            continue
        if pos in slots:
            t = t._replace(string=slots[pos])
        out.append(t)
        pos += 1
    return tokenize.untokenize(out)


def strip_header(text: str) -> str:
    return text.replace(HEADER, "", 1) if text.startswith(HEADER) else text


__all__ = ["DTYPE_NAMES", "strip_header", "templated"]
