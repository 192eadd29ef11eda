"""Python text of a host formula with only the parentheses precedence needs.

`symbolic.render` brackets every operation, so a sum of 200 terms nests 200 parentheses
deep, past the Python tokenizer's nesting limit (200: "too many nested parentheses",
level1/26_avg_pool3d's UB-footprint guard). Writing the text with precedence in mind keeps
a left-leaning chain (`a + b + c + ...`) flat, the way `ast.unparse` writes it, without
first parsing the bracketed text (which is what failed). The precedence table follows the
Python reference, "Operator precedence":
https://docs.python.org/3/reference/expressions.html#operator-precedence
"""

from __future__ import annotations

from typing import Callable

from sage.kernels.host_helpers import HOST_HELPERS
from sage.kernels.symbolic import Formula, render

# binding strength, weakest first: comparisons < + - < * / // % < unary minus < **
_CMP, _ARITH, _TERM, _FACTOR, _POWER, _ATOM = range(6)
_LEVEL = {"<": _CMP, "<=": _CMP, ">": _CMP, ">=": _CMP, "==": _CMP, "!=": _CMP,
          "+": _ARITH, "-": _ARITH, "*": _TERM, "/": _TERM, "//": _TERM, "%": _TERM, "**": _POWER}
_CALLS = {"abs": "abs", "floor": "math.floor", "ceil": "math.ceil"}


def tight(f: Formula, name: Callable[[int], str], operand: bool = False) -> str:
    """Python text of formula `f` (parameter k written `name(k)`), with the value
    `symbolic.render(f, name)` has; with `operand`, bracketed if it is a comparison (an
    operand of a chained comparison such as `a <= b < c`)."""
    return _operand(f, name, _ARITH) if operand else _text(f, name)[0]


def _text(f: Formula, name: Callable[[int], str]) -> tuple[str, int]:
    """(text, how strongly it binds)."""
    kind = f[0]
    if kind == "p":
        return name(f[1]), _ATOM
    if kind == "c":
        text = render(f, name)
        # a negative literal is a unary minus to the parser
        return text, (_FACTOR if text.startswith("-") else _ATOM)
    if kind == "k":
        return _text(f[2], name)
    if kind == "neg":
        return "-" + _operand(f[1], name, _FACTOR), _FACTOR
    if kind in _CALLS:
        return f"{_CALLS[kind]}({tight(f[1], name)})", _ATOM
    if kind in HOST_HELPERS:
        return f"{kind}({', '.join(tight(a, name) for a in f[1:])})", _ATOM
    level = _LEVEL[kind]
    if level == _CMP:
        # a comparison inside a comparison would chain (a < b == c): bracket both sides
        left, right = _operand(f[1], name, _ARITH), _operand(f[2], name, _ARITH)
    elif level == _POWER:
        # right-associative, and its left operand binds tighter than a unary minus
        left, right = _operand(f[1], name, _ATOM), _operand(f[2], name, _FACTOR)
    else:
        # left-associative: a left operand of the same level needs no brackets; the left
        # spine is walked in a loop, as a sum of hundreds of terms is hundreds deep
        spine = [f]
        while spine[-1][1][0] in _LEVEL and _LEVEL[spine[-1][1][0]] == level:
            spine.append(spine[-1][1])
        text = _operand(spine[-1][1], name, level)
        for node in reversed(spine):
            text += f" {node[0]} {_operand(node[2], name, level + 1)}"
        return text, level
    return f"{left} {kind} {right}", level


def _operand(f: Formula, name: Callable[[int], str], need: int) -> str:
    """`f`'s text in a place that needs something binding at least as strongly as `need`."""
    text, level = _text(f, name)
    return text if level >= need else f"({text})"


__all__ = ["tight"]
