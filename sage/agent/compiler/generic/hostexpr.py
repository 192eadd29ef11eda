"""Host expressions for a kernel's parameters: how forward() computes each size from its inputs.

A traced launch's parameters (`lift.py`) are sizes, strides and constants of one case. The
host must compute them for whatever case it is given, from what it has: the input tensors'
shapes and the Python arguments. `Candidates` lists, for one case, every value such an
expression can take (each dimension, each run of consecutive dimensions multiplied, each
tensor's element count, each scalar argument, as given or rounded to a tensor dtype as
`torch.as_tensor(alpha, dtype=x.dtype)` does, the host then passing it unrounded); a
parameter's candidates are those with its
value, and the cases that share one kernel keep the candidates every one of them agrees
on (`rules.py`). A parameter no expression explains is a literal: the rule holding it
applies only to cases with that value.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sage.bench.case_support import dtype_name

# Preference among candidates with the same value, most general first: a dimension before
# the element count before a product of dimensions; a literal last, except for 0 and 1
# (sizes that are structure, like torch's specialisation of 0/1 sizes).
_ORDER = {"dim": 0, "numel": 1, "prod": 2, "xprod": 3, "bdim": 3, "bnumel": 3, "bprod": 4, "scalar": 5, "float": 5, "item": 6, "round": 7,
          "flag": 7, "mul": 8, "scaled": 8, "derived": 8, "lit": 9}
ROUNDINGS = ("float16", "bfloat16", "float32")
# Expressions that read no single dimension: a rule made of them serves every rank.
RANK_FREE = frozenset({"numel", "bnumel", "scalar", "float", "item", "round", "flag", "mul", "lit"})
# ("scaled" with an axis divided out reads a dimension: not rank-free)
# Products of how many scalar arguments are candidates (a forward's `input_scale * alpha *
# scale` is one constant of the graph; Python multiplies left to right, so each order is one).
MAX_FACTORS = 3
# Host helpers for the broadcast of the tensor arguments (torch.broadcast_shapes), written
# once in a kernel file whose rules use them: a broadcast result's sizes come from several
# inputs, a different one per case (logaddexp of [2] and [4, 16, 1, 1] is [4, 16, 1, 2]).
BROADCAST_HELPERS = '''def bshape(ts):
    rank = 0
    for t in ts:
        rank = max(rank, t.dim())
    out = []
    for k in range(rank):
        d = 1
        for t in ts:
            j = k - (rank - t.dim())
            if j >= 0 and t.shape[j] != 1:
                d = t.shape[j]
        out.append(d)
    return out


def bsize(ts, lo, hi):
    shape = bshape(ts)
    n = 1
    for d in shape[lo:hi if hi >= 0 else len(shape)]:
        n = n * d
    return n
'''


@dataclass(frozen=True)
class HostExpr:
    """One host expression: `kind` over flat argument `arg` (its text `expr`)."""

    kind: str                        # dim | prod | xprod | numel | bdim | bprod | bnumel | scalar | float | flag | item | round | mul | scaled | lit
    arg: int = -1                    # the flat argument it reads (-1: none)
    lo: int = 0                      # dim: the dimension; prod: first dimension; item: index
    hi: int = 0                      # prod: one past the last dimension
    dtype: str = ""                  # round: the dtype the scalar is rounded to
    value: Any = None                # lit: the value
    args: tuple[int, ...] = ()       # bdim/bprod/bnumel: the tensors broadcast; mul: the scalars multiplied;
    #                                  scaled: (the int scalar, the dimension divided out or -1);
    #                                  xprod: (tensor, lo, hi, tensor, dim): a run of one tensor's
    #                                  dimensions times another's dimension

    def text(self, flat: list[str]) -> str:
        e = flat[self.arg] if self.arg >= 0 else ""
        if self.kind == "dim":
            return f"{e}.shape[{self.lo}]"
        if self.kind == "prod":
            return "(" + " * ".join(f"{e}.shape[{k}]" for k in range(self.lo, self.hi)) + ")"
        if self.kind == "numel":
            return f"{e}.numel()"
        if self.kind == "scalar":
            return e
        if self.kind == "float":
            return f"float({e})"
        if self.kind == "flag":
            return f"int({e})"
        if self.kind == "item":
            return f"{e}[{self.lo}]"
        if self.kind == "round":
            # the Python float at full precision, where the graph held it rounded to a tensor
            # dtype (`torch.as_tensor(alpha, dtype=x.dtype)`): the float64 truth computes with
            # the unrounded value, and a float32 kernel then rounds once (an fp16 alpha of
            # 8.1536 off by 3e-4 made elu's exp(-95 x) terms break the rule where eager's
            # own rounding cancelled); dispatch and tilings are decided on the rounded value,
            # as traced
            return e
        if self.kind == "xprod":
            i, lo, hi, j, m = self.args
            return "(" + " * ".join([f"{flat[i]}.shape[{k}]" for k in range(lo, hi)] + [f"{flat[j]}.shape[{m}]"]) + ")"
        # the tensors broadcast (only the b* kinds' args name tensors: scaled's are a scalar and an axis)
        ts = "(" + "".join(f"{flat[i]}, " for i in self.args) + ")" if self.kind.startswith("b") else ""
        if self.kind == "bdim":
            return f"bshape({ts})[{self.lo}]"
        if self.kind in ("bprod", "bnumel"):
            return f"bsize({ts}, {self.lo}, {self.hi if self.kind == 'bprod' else -1})"
        if self.kind == "mul":
            text = flat[self.args[0]]
            for i in self.args[1:]:
                text = f"({text} * {flat[i]})"
            return text
        if self.kind == "scaled":
            size = f"{e}.numel()" if self.args[1] < 0 else f"({e}.numel() // {e}.shape[{self.args[1]}])"
            return f"({size} * {flat[self.args[0]]})"
        return literal(self.value)

    def evaluate(self, args: list) -> Any:
        a = args[self.arg] if self.arg >= 0 else None
        if self.kind == "dim":
            return int(a.shape[self.lo])
        if self.kind == "prod":
            return math.prod(int(d) for d in a.shape[self.lo:self.hi])
        if self.kind == "numel":
            return int(a.numel())
        if self.kind == "xprod":
            i, lo, hi, j, m = self.args
            return math.prod(int(d) for d in args[i].shape[lo:hi]) * int(args[j].shape[m])
        if self.kind == "scalar":
            return a
        if self.kind == "float":
            return float(a)
        if self.kind == "flag":
            return int(a)
        if self.kind == "item":
            return a[self.lo]
        if self.kind == "round":
            return round_to(float(a), self.dtype)
        if self.kind in ("bdim", "bprod", "bnumel"):
            shape = torch.broadcast_shapes(*(tuple(args[i].shape) for i in self.args))
            if self.kind == "bdim":
                return int(shape[self.lo])
            return math.prod(int(d) for d in shape[self.lo:self.hi if self.kind == "bprod" else len(shape)])
        if self.kind == "mul":
            v = args[self.args[0]]
            for i in self.args[1:]:
                v = v * args[i]
            return v
        if self.kind == "scaled":
            n = int(a.numel())
            d = int(a.shape[self.args[1]]) if self.args[1] >= 0 else 1
            return (n // d if d else 0) * args[self.args[0]]
        return self.value

    @property
    def source(self) -> tuple:
        """What it reads, up to rounding: a scalar argument as given, as a float or rounded
        to a dtype is one quantity (which of them the graph used is numerics, not a guess
        about which input a size came from)."""
        if self.kind in ("scalar", "float", "round", "flag"):
            return ("arg", self.arg)
        return (self.kind, self.arg, self.lo, self.hi, self.dtype, self.args)

    @property
    def reads(self) -> frozenset[int]:
        """The scalar arguments it uses (none: a tensor's shape or nothing)."""
        if self.kind == "mul":
            return frozenset(self.args)
        if self.kind == "scaled":
            return frozenset({self.args[0]})
        return frozenset({self.arg}) if self.kind in ("scalar", "float", "item", "round", "flag") else frozenset()


def literal(v: Any) -> str:
    if isinstance(v, torch.dtype):
        return repr(dtype_name(v))    # how the kernel receives it (sage.bench.tasks.kernel_args)
    if isinstance(v, float) and not math.isfinite(v):
        return "float('nan')" if math.isnan(v) else ("float('inf')" if v > 0 else "float('-inf')")
    return repr(v)


def round_to(x: float, dtype: str) -> float:
    """x rounded to `dtype` (round to nearest even, overflow to inf), as numpy/torch do."""
    if dtype == "bfloat16":
        return float(torch.tensor(x, dtype=torch.float64).to(torch.bfloat16).to(torch.float64))
    return float(np.asarray(x, dtype=np.float64).astype(dtype).astype(np.float64))


class Candidates:
    """Every host expression of one case's arguments, by value."""

    def __init__(self, flat_args: list, long_row_limit: int | None = None) -> None:
        self.by_value: dict[Any, list[HostExpr]] = {}
        self.ranks = {i: a.dim() for i, a in enumerate(flat_args) if isinstance(a, torch.Tensor)}
        for i, a in enumerate(flat_args):
            if isinstance(a, torch.Tensor):
                shape = [int(d) for d in a.shape]
                for k, d in enumerate(shape):
                    self._add(d, HostExpr("dim", i, k))
                self._add(math.prod(shape), HostExpr("numel", i))
                for lo in range(len(shape)):
                    for hi in range(lo + 2, len(shape) + 1):
                        if (lo, hi) != (0, len(shape)):
                            self._add(math.prod(shape[lo:hi]), HostExpr("prod", i, lo, hi))
            elif isinstance(a, bool):
                # a flag the kernel takes at launch as 0/1 (top-k's largest)
                self._add(int(a), HostExpr("flag", i))
            elif a is None:
                continue
            elif isinstance(a, (int, float)):
                self._add(a, HostExpr("scalar", i))
                if isinstance(a, int):
                    # an int the graph took as a float constant (x + n with n = -3 is add(x, -3.0))
                    self._add(float(a), HostExpr("float", i))
                if isinstance(a, float):
                    # also when the rounding changes nothing (-95.0 in float16): the class of
                    # cases whose alpha does round is then open to it
                    for dt in ROUNDINGS:
                        self._add(round_to(a, dt), HostExpr("round", i, dtype=dt))
            elif isinstance(a, (list, tuple)) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in a):
                for j, v in enumerate(a):
                    self._add(v, HostExpr("item", i, j))
        self._broadcasts(flat_args)
        self._cross_products(flat_args)
        self._products(flat_args)
        self._scaled(flat_args)
        from sage.agent.compiler.generic.derived import extend    # derived.py builds on HostExpr

        extend(self._add, flat_args, long_row_limit)

    def _broadcasts(self, flat_args: list) -> None:
        tensors = tuple(i for i, a in enumerate(flat_args) if isinstance(a, torch.Tensor))
        if len(tensors) < 2:
            return
        try:
            shape = [int(d) for d in torch.broadcast_shapes(*(tuple(flat_args[i].shape) for i in tensors))]
        except RuntimeError:
            return
        self._add(math.prod(shape), HostExpr("bnumel", args=tensors))
        for k, d in enumerate(shape):
            self._add(d, HostExpr("bdim", lo=k, args=tensors))
        for lo in range(len(shape)):
            for hi in range(lo + 2, len(shape) + 1):
                if (lo, hi) != (0, len(shape)):
                    self._add(math.prod(shape[lo:hi]), HostExpr("bprod", lo=lo, hi=hi, args=tensors))

    def _cross_products(self, flat_args: list) -> None:
        """A run of one tensor's dimensions times a dimension of another (or a non-adjacent one
        of its own): a batched matmul's result has B * M * N elements, B and M from one operand
        and N from the other, a count no run of one tensor's dimensions gives. Factors 0 and 1
        add nothing a shorter product does not."""
        shapes = {i: [int(d) for d in a.shape] for i, a in enumerate(flat_args) if isinstance(a, torch.Tensor)}
        for i, shape in shapes.items():
            for lo in range(len(shape)):
                for hi in range(lo + 1, len(shape) + 1):
                    if min(shape[lo:hi]) <= 1:
                        break
                    run = math.prod(shape[lo:hi])
                    for j, other in shapes.items():
                        for m, d in enumerate(other):
                            if d <= 1 or (j == i and lo - 1 <= m <= hi) or (j, m) < (i, lo) and hi - lo == 1:
                                continue      # a run of its own (`prod`), or a pair already offered
                            self._add(run * d, HostExpr("xprod", args=(i, lo, hi, j, m)))

    def _products(self, flat_args: list) -> None:
        scalars = [i for i, a in enumerate(flat_args) if isinstance(a, (int, float)) and not isinstance(a, bool)]
        for n in range(2, MAX_FACTORS + 1):
            for order in itertools.permutations(scalars, n):
                if not any(isinstance(flat_args[i], float) for i in order):
                    continue               # a product of ints is a size: a dimension explains it, or a literal
                expr = HostExpr("mul", args=order)
                try:
                    self._add(expr.evaluate(flat_args), expr)
                except OverflowError:
                    continue

    def _scaled(self, flat_args: list) -> None:
        """A tensor's element count, whole or with one axis divided out, times an int scalar:
        top-k's result is the input with its axis's length replaced by k (numel / n * k), a
        count no dimension or product of dimensions gives (rank-free when whole)."""
        ints = [i for i, a in enumerate(flat_args) if isinstance(a, int) and not isinstance(a, bool)]
        for i, a in enumerate(flat_args):
            if not isinstance(a, torch.Tensor):
                continue
            for j in ints:
                for d in [-1, *range(a.dim())]:
                    expr = HostExpr("scaled", i, args=(j, d))
                    self._add(expr.evaluate(flat_args), expr)

    def _add(self, value: Any, expr: HostExpr) -> None:
        key = _key(value)
        if key is not None:
            self.by_value.setdefault(key, []).append(expr)

    def of(self, value: Any, position: int | None = None, rank: int | None = None) -> list[HostExpr]:
        """The expressions with this value, most general first, the literal among them. For
        dimension `position` of a result of `rank` dimensions, an input's dimension at the
        same position (of an input of that rank first) comes before any other."""
        found = list(self.by_value.get(_key(value), []))
        lit = HostExpr("lit", value=value.plain() if hasattr(value, "plain") else value)
        structural = isinstance(value, int) and value in (0, 1)

        def order(e: HostExpr) -> tuple:
            same = e.kind in ("dim", "bdim") and e.lo == position
            return (not same, not (same and self.ranks.get(e.arg) == rank), _ORDER[e.kind])

        found.sort(key=order)
        return [lit] + found if structural else found + [lit]


def _key(value: Any) -> Any:
    """Values compared as what they are: an int parameter matches int expressions (a float
    one, float ones; 2 and 2.0 are different parameters), NaN matches nothing but itself."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ("i", int(value))
    if isinstance(value, float):
        v = float(value)
        return ("f", "nan") if math.isnan(v) else ("f", v)
    return None


__all__ = ["BROADCAST_HELPERS", "Candidates", "HostExpr", "RANK_FREE", "literal", "round_to"]
