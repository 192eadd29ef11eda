"""The compiler's half of masked lanes: which `if` statements may run both arms, and how.

A lane group whose lanes disagree on an `if` may run both arms, each under a lane mask
(sage/npu/sim/masks.py), when the arms can do nothing but DSL calls: every statement of both
arms is a call of a name or an attribute (``Mins(...)``, ``self.ops.Mins(...)``) whose
arguments call nothing and bind nothing. Such an `if` is compiled as

    for _sage_arm_ in _arms_(test):
        if _sage_arm_:
            _callee_(f)(...)
        else:
            _callee_(g)(...)

`_arms_` gives ``(bool(test),)`` outside a lane group or where the lanes agree: the `if` as
written, its test evaluated once. `_callee_` returns the function it is given, refusing
(as a divergence on the test) any but a maskable DSL call while a mask is on: a kernel's own
function could change Python state for every lane. The names start with `_`, so kernel code
can neither name nor shadow them (sage.npu.restricted refuses such names).
"""

from __future__ import annotations

import ast

# nodes an argument of a masked arm's call may not contain: a call or a binding could act per
# group where it must act per lane
_DENY = (ast.Call, ast.NamedExpr, ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp,
         ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)


def _arm(body: list) -> bool:
    if not body:
        return False
    for stmt in body:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        func = stmt.value.func
        while isinstance(func, ast.Attribute):
            func = func.value
        if not isinstance(func, ast.Name):
            return False
        parts = [*stmt.value.args, *(k.value for k in stmt.value.keywords)]
        if any(k.arg is None for k in stmt.value.keywords) or any(
                isinstance(n, _DENY) for p in parts for n in ast.walk(p)):
            return False
    return True


def eligible(node: ast.If) -> bool:
    """Both arms of `node` (as parsed, before RestrictedPython rewrites attribute reads into
    calls) are call statements with call-free arguments."""
    return _arm(node.body) and _arm(node.orelse)


def rewrite(node: ast.If, new: ast.If) -> ast.For:
    """`new` (`node` as RestrictedPython rewrote it) in its masked form (see the module doc)."""
    for stmt in (*new.body, *new.orelse):
        func = stmt.value.func
        name = ast.copy_location(ast.Name("_callee_", ast.Load()), func)
        stmt.value.func = ast.copy_location(ast.Call(func=name, args=[func], keywords=[]), func)

    def at(part):  # the new nodes stand on the `if`'s line
        return ast.copy_location(part, node)
    loop = at(ast.For(target=at(ast.Name("_sage_arm_", ast.Store())),
                      iter=at(ast.Call(func=at(ast.Name("_arms_", ast.Load())), args=[new.test], keywords=[])),
                      body=[at(ast.If(test=at(ast.Name("_sage_arm_", ast.Load())), body=new.body,
                                      orelse=new.orelse))], orelse=[]))
    return ast.fix_missing_locations(loop)
