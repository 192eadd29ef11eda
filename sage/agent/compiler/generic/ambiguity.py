"""The checks a case class needs so that a size its cases could not pin down is not guessed.

A class's cases agree on several host expressions for one parameter when their sizes
coincide (a matmul traced only at 128 x 64 @ 64 x 128 has M = N = 128, and M * K equals
both operands' element counts). The class keeps one expression and takes only arguments on
which the others still agree (`Rule.ambiguities`). Written out pairwise, those checks grow
with the square of the coincidences (attention over [1, 2, 128, 64] had 60 of them), so
this module keeps only the ones the others do not already imply: each expression is a
product of dimensions (an element count, a run of dimensions, two dimensions multiplied, a
broadcast's dimension), dimensions found equal by a kept check are one, and a dimension the
class's `dims_pattern` check pins to 1 drops out of every product. Whatever is not such a
product (a scalar argument, a broadcast's size in a rank-free class) is compared as itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from sage.agent.compiler.generic.hostexpr import HostExpr

Pair = tuple["HostExpr", "HostExpr"]


class _Classes:
    """Union-find over hashable keys."""

    def __init__(self) -> None:
        self.up: dict[Any, Any] = {}

    def find(self, k: Any) -> Any:
        while self.up.get(k, k) != k:
            k = self.up[k]
        return k

    def union(self, a: Any, b: Any) -> bool:
        a, b = self.find(a), self.find(b)
        if a == b:
            return False
        self.up[max(a, b, key=repr)] = min(a, b, key=repr)
        return True


def needed(pairs: list[Pair], flat: list, ranked: bool) -> list[Pair]:
    """The pairs (in their order) that the kept ones before them do not imply."""
    atoms = _Atoms(flat, ranked)
    dims = _Classes()
    kept: list[Pair] = []
    rest: list[Pair] = []
    for a, b in pairs:                       # dimension against dimension first: they join atoms
        fa, fb = atoms.factors(a), atoms.factors(b)
        if fa is not None and fb is not None and len(fa) == len(fb) == 1:
            if dims.union(fa[0], fb[0]):
                kept.append((a, b))
        else:
            rest.append((a, b))
    products = _Classes()
    for a, b in rest:
        na, nb = atoms.normal(a, dims), atoms.normal(b, dims)
        if na != nb and products.union(na, nb):
            kept.append((a, b))
    return [p for p in pairs if p in kept]


class _Atoms:
    """Expressions as products of dimensions of one case's arguments."""

    def __init__(self, flat: list, ranked: bool) -> None:
        self.flat = flat
        self.ranked = ranked

    def _dim(self, i: int, k: int) -> tuple | None:
        """A dimension as an atom, or None where the class pins it to 1."""
        if self.ranked and int(self.flat[i].shape[k]) == 1:
            return None
        return ("d", i, k)

    def factors(self, e: HostExpr) -> list | None:
        """Its dimensions (1s dropped), or None when it is not a product of dimensions."""
        if not self.ranked:
            if e.kind == "numel":
                return [("n", self._like(e.arg))]
            if e.kind == "bnumel" and self._whole(e.args) is not None:
                return [("n", self._like(self._whole(e.args)))]
            return None
        if e.kind == "dim":
            out = [self._dim(e.arg, e.lo)]
        elif e.kind == "prod":
            out = [self._dim(e.arg, k) for k in range(e.lo, e.hi)]
        elif e.kind == "numel":
            out = [self._dim(e.arg, k) for k in range(self.flat[e.arg].dim())]
        elif e.kind == "xprod":
            i, lo, hi, j, m = e.args
            out = [self._dim(i, k) for k in range(lo, hi)] + [self._dim(j, m)]
        elif e.kind in ("bdim", "bprod", "bnumel"):
            rank = max(self.flat[i].dim() for i in e.args)
            lo, hi = (e.lo, e.lo + 1) if e.kind == "bdim" else (e.lo, e.hi) if e.kind == "bprod" else (0, rank)
            out = [self._broadcast_dim(e.args, rank, k) for k in range(lo, hi)]
        elif e.kind == "lit" and e.value == 1 and not isinstance(e.value, bool):
            out = []
        else:
            return None
        return [d for d in out if d is not None]

    def _broadcast_dim(self, args: tuple[int, ...], rank: int, k: int) -> tuple | None:
        """The kernel file's `bshape` takes the last tensor whose aligned dimension is not 1;
        with the ranks and 0/1 pattern fixed by the class, that tensor is known."""
        found = None
        for i in args:
            j = k - (rank - self.flat[i].dim())
            if j >= 0 and int(self.flat[i].shape[j]) != 1:
                found = (i, j)
        return None if found is None else self._dim(*found)

    def implies(self, e: HostExpr, category: int) -> bool:
        """Whether the class's `dims_pattern` check already gives `e` this 0/1/many category:
        a product of dimensions each pinned to "two or more" is neither 0 nor 1."""
        if not self.ranked:
            return False
        f = self.factors(e)
        if f is None:
            return False
        if category == 1:
            return not f
        return category == 2 and bool(f) and all(int(self.flat[d[1]].shape[d[2]]) >= 2 for d in f)

    def _whole(self, args: tuple[int, ...]) -> int | None:
        """A rank-free class checks that a tensor of the broadcast's shape has it (`bshape`
        over every tensor argument): the first such tensor, if `args` are all of them."""
        tensors = tuple(i for i, a in enumerate(self.flat) if isinstance(a, torch.Tensor))
        if tuple(args) != tensors or len(tensors) < 2:
            return None
        whole = torch.broadcast_shapes(*(self.flat[i].shape for i in tensors))
        return next((i for i in tensors if self.flat[i].shape == whole), None)

    def _like(self, i: int) -> int:
        """A rank-free class checks that equal-shaped tensors stay equal: the first of them."""
        shape = self.flat[i].shape
        return next(j for j, a in enumerate(self.flat) if isinstance(a, torch.Tensor) and a.shape == shape)

    def normal(self, e: HostExpr, dims: _Classes) -> tuple:
        f = self.factors(e)
        if f is None:
            return ("x", e.source, repr(e.value) if e.kind == "lit" else "")
        return tuple(sorted((dims.find(d) for d in f), key=repr))


def category_implied(e: HostExpr, category: int, flat: list, ranked: bool) -> bool:
    """Whether a class's 0/1/many test of `e` says nothing its shape checks do not."""
    return _Atoms(flat, ranked).implies(e, category)


__all__ = ["category_implied", "needed"]
