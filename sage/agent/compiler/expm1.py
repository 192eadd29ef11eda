"""exp(y) - 1 without cancelling: a series where y is small.

Near y = 0, exp(y) is 1 plus a little, and subtracting 1 keeps only the float32 rounding
error of exp(y) (6e-8 absolute) against a result of size |y|: a relative error of
6e-8 / |y|, 2e-4 at y = 3e-4 (level0/13_elu case 14, float32: alpha * scale *
(exp(-12.1 x) - 1) over 1e-4 off the float64 truth, eager as far off). The A2 vector unit
has no expm1, so where |y| < SMALL the kernel takes y (1 + y/2 (1 + y/3 (1 + y/4))), whose
next term is y^5 / 120 (relative 7e-9 at |y| = 0.03), and exp(y) - 1 elsewhere (relative
error at most 6e-8 / 0.03 = 2e-6 there).
"""

from __future__ import annotations

from sage.kernels import Const, Op, Reduce
from sage.kernels.chain import Expr, op

SMALL = 0.03


def accurate_expm1(e: Expr) -> Expr:
    """`e` with every exp(y) - 1 (sub(exp(y), 1) or add(exp(y), -1)) computed as expm1."""
    if isinstance(e, Reduce):
        return Reduce(e.kind, accurate_expm1(e.arg))
    if not isinstance(e, Op):
        return e
    args = tuple(accurate_expm1(a) for a in e.args)
    if len(args) == 2 and isinstance(args[0], Op) and args[0].name == "exp" and isinstance(args[1], Const) \
            and (e.name, args[1].value) in (("sub", 1.0), ("add", -1.0)):
        return _expm1(args[0].args[0])
    return Op(e.name, args, e.params)


def _expm1(y: Expr) -> Expr:
    series = op("mul", y, op("add", op("mul", op("mul", y, 0.5),
                                       op("add", op("mul", op("mul", y, 1.0 / 3.0),
                                                     op("add", op("mul", y, 0.25), 1.0)), 1.0)), 1.0))
    return op("where", op("lt", op("abs", y), SMALL), series, op("sub", op("exp", y), 1.0))


__all__ = ["SMALL", "accurate_expm1"]
