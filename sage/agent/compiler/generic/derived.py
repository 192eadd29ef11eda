"""Host expressions over sizes the host derives from its arguments: a padded or resized
shape, a sum of a size and an argument, a size as a float, a ratio of sizes.

The plain candidates (`hostexpr.py`) read one tensor's dimensions, their products and the
scalar arguments. A padding's output is the input grown by the pad amounts, an
interpolation's is the input's batch and channels with `size` (or `floor(d * scale)`)
spatial dimensions, a repeat's each dimension times its count, a concatenation's the sum of
its pieces along the axis argument: their sizes, strides and element counts are sums and
ratios no plain candidate gives, so each case of `F.pad`, `F.interpolate` or `torch.cat` was
a case class of its own (level1/15_pad 158 KB: 51 classes for 51 cases, issue 31). Here the host computes them as Ascend C's host
tiling does from the op's attributes: a host helper (sage/kernels/host_helpers.py) gives the
derived shape, and every dimension, product of consecutive dimensions and element count of
it, its mixes with the input's shape (the first pass of a separable resize: resized rows,
input columns), the offset of the input inside the padded output, where each piece of a
concatenation starts, a dimension plus one list item, a table with one spare row, the
floats of these sizes and the ratios of input to output dimensions are candidates of one case like the plain ones. As for
those, the cases of one class keep only the expressions every one of them agrees on
(`rules.py`), and the dispatch is checked against each case compiled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from sage.kernels.host_helpers import HOST_HELPERS
from sage.agent.compiler.generic.hostexpr import HostExpr


# op -> (the host code's text of it, its value), over its parts' texts and values
ARITHMETIC: dict[str, tuple[str, Any]] = {
    "add": ("({0} + {1})", lambda a, b: a + b),
    "float": ("float({0})", float),
    "ratio": ("(float({0}) / float({1}))", lambda a, b: float(a) / float(b)),
    "recip": ("(1.0 / {0})", lambda a: 1.0 / a),
    "twice": ("(2 * {0})", lambda a: 2 * a),
    "less1": ("({0} - 1)", lambda a: a - 1),
    # a table with one spare row along an axis: d + 1 rows, numel + numel / d elements
    "plus1": ("({0} + 1)", lambda a: a + 1),
    "grown": ("({0} + {0} // max({1}, 1))", lambda n, d: n + n // max(d, 1)),
}


@dataclass(frozen=True)
class Derived(HostExpr):
    """`op` over `parts`: ("call", helper, (arg, ...)) a helper's int; ("shape", helper, (arg, ...), lo, hi, mix) the product of dimensions
    [lo, hi) of a derived shape (hi -1: to its end; `mix` k: its first k dimensions, then the
    input tensor's, that tensor being the helper's first argument); ("add", e, f) a sum;
    ("float", e); ("ratio", e, f) float(e) / float(f); ("recip", e) 1.0 / e; ("less1", e) e - 1;
    ("twice", e) 2 e."""

    op: str = ""
    parts: tuple = ()

    def text(self, flat: list[str]) -> str:
        if self.op == "call":
            return _call_text(self.parts[0], self.parts[1], self.value, flat, self.parts[2:])
        if self.op == "shape":
            helper, args, lo, hi, mix = self.parts
            shape = _call_text(helper, args, self.value, flat, ())
            if mix:
                shape = f"mixed_shape({shape}, {flat[args[0]]}.shape, {mix})"
            return f"shape_prod({shape}, {lo}, {hi})"
        return ARITHMETIC[self.op][0].format(*(p.text(flat) for p in self.parts))

    def evaluate(self, args: list) -> Any:
        if self.op == "call":
            return _call_value(self.parts[0], self.parts[1], args, self.parts[2:])
        if self.op == "shape":
            helper, idx, lo, hi, mix = self.parts
            shape = _call_value(helper, idx, args, ())
            if mix:
                shape = HOST_HELPERS["mixed_shape"](shape, tuple(args[idx[0]].shape), mix)
            return HOST_HELPERS["shape_prod"](shape, lo, hi)
        return ARITHMETIC[self.op][1](*(p.evaluate(args) for p in self.parts))

    @property
    def reads(self) -> frozenset[int]:
        if self.op in ("shape", "call"):
            return frozenset(i for i in self.parts[1] if i not in self.value)
        return frozenset().union(*(p.reads for p in self.parts))


# Helpers taking a scalar (the axis) and a tuple of every tensor's shape: a concatenation.
LISTED = frozenset({"cat_shape", "cat_offset"})


def _call_text(helper: str, idx: tuple, tensors: tuple, flat: list[str], extra: tuple) -> str:
    if helper in LISTED:
        shapes = "(" + "".join(f"{flat[i]}.shape, " for i in idx[1:]) + ")"
        args = [flat[idx[0]], shapes]
    else:
        args = [_arg_text(flat, i, i in tensors) for i in idx]
    return f"{helper}({', '.join(args + [repr(e) for e in extra])})"


def _call_value(helper: str, idx: tuple, args: list, extra: tuple) -> Any:
    if helper in LISTED:
        return HOST_HELPERS[helper](args[idx[0]], tuple(_arg_value(args[i]) for i in idx[1:]), *extra)
    return HOST_HELPERS[helper](*(_arg_value(args[i]) for i in idx), *extra)


def _arg_text(flat: list[str], i: int, tensor: bool) -> str:
    return f"{flat[i]}.shape" if tensor else flat[i]


def _arg_value(a: Any) -> Any:
    return tuple(int(d) for d in a.shape) if isinstance(a, torch.Tensor) else a


def _ints(a: Any) -> bool:
    return isinstance(a, (list, tuple)) and bool(a) and all(isinstance(v, int) and not isinstance(v, bool) for v in a)


def _floats(a: Any) -> bool:
    return isinstance(a, float) or isinstance(a, (list, tuple)) and bool(a) and \
        all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in a)


def _shapes(flat: list) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
    """(helper, its argument indices, the tensor arguments among them) for every derived shape
    these arguments allow: a padding by an int list, a resize to an int list or by floats."""
    out = []
    tensors = tuple(i for i, a in enumerate(flat) if isinstance(a, torch.Tensor))
    ranks = {flat[i].dim() for i in tensors}
    if len(tensors) >= 2 and len(ranks) == 1:          # a concatenation along an int argument's axis
        rank = next(iter(ranks))
        for j, a in enumerate(flat):
            if isinstance(a, int) and not isinstance(a, bool) and -rank <= a < rank:
                out.append(("cat_shape", (j, *tensors), tensors))
    for t, x in enumerate(flat):
        if not isinstance(x, torch.Tensor):
            continue
        for j, a in enumerate(flat):
            if _ints(a) and len(a) % 2 == 0 and len(a) // 2 <= x.dim():
                out.append(("padded_shape", (t, j), (t,)))
            if _ints(a) and len(a) >= x.dim():       # x.repeat(*a): each dimension times its count
                out.append(("repeated_shape", (t, j), (t,)))
            if x.dim() >= 3 and _ints(a) and len(a) == x.dim() - 2:
                out.append(("sized_shape", (t, j), (t,)))
            if x.dim() >= 3 and _floats(a) and (isinstance(a, float) or len(a) == x.dim() - 2):
                out.append(("scaled_shape", (t, j), (t,)))
    return out


def extend(add: Any, flat: list, long_row_limit: int | None = None) -> None:
    """Adds the derived candidates of one case's arguments through `add(value, expr)`; with
    `long_row_limit`, the chunks of a case traced with its long reductions split at it."""
    base_dims: list[tuple[HostExpr, int]] = []
    for i, x in enumerate(flat):
        if isinstance(x, torch.Tensor):
            base_dims += [(HostExpr("dim", i, k), int(d)) for k, d in enumerate(x.shape)]
    for helper, idx, tensors in _shapes(flat):
        shape = _call_value(helper, idx, flat, ())
        x = flat[tensors[0]]
        if shape is None or tuple(shape) == tuple(x.shape):
            continue
        for mix in range(0, len(shape)):
            if mix and (helper in LISTED or len(shape) != x.dim()):
                continue
            full = HOST_HELPERS["mixed_shape"](shape, tuple(x.shape), mix) if mix else shape
            for lo in range(len(full)):
                for hi in [*range(lo + 1, len(full) + 1)]:
                    e = Derived("derived", value=tensors, op="shape",
                                parts=(helper, idx, lo, -1 if hi == len(full) else hi, mix))
                    size = math.prod(full[lo:hi])
                    add(size, e)
                    if mix == 0 and hi == lo + 1:
                        add(float(size), Derived("derived", op="float", parts=(e,)))
                        add(float(size - 1), Derived("derived", op="float", parts=(Derived("derived", op="less1", parts=(e,)),)))
                        if lo < x.dim() and int(x.shape[lo]) != size and size > 0 and x.shape[lo] > 0:
                            d = HostExpr("dim", idx[0], lo)
                            add(float(x.shape[lo]) / float(size), Derived("derived", op="ratio", parts=(d, e)))
                            add(float(size) / float(x.shape[lo]), Derived("derived", op="ratio", parts=(e, d)))
                            if size > 1 and x.shape[lo] > 1:
                                add(float(x.shape[lo] - 1) / float(size - 1), Derived("derived", op="ratio", parts=(
                                    Derived("derived", op="less1", parts=(d,)), Derived("derived", op="less1", parts=(e,)))))
        if helper == "cat_shape":       # where each piece starts in the result
            for k in range(1, len(tensors)):
                add(_call_value("cat_offset", idx, flat, (k, 0)),
                    Derived("derived", value=tensors, op="call", parts=("cat_offset", idx, k, 0)))
                add(_call_value("cat_offset", idx, flat, (k, 1)),
                    Derived("derived", value=tensors, op="call", parts=("cat_offset", idx, k, 1)))
        if helper == "padded_shape":
            add(HOST_HELPERS["pad_offset"](tuple(x.shape), flat[idx[1]]),
                Derived("derived", value=tensors, op="call", parts=("pad_offset", idx)))
    for i, x in enumerate(flat):
        # a table of x's rows and one spare row (torch_npu's swiglu_quant gathers each row's
        # smooth scale from [G + 1, N], row G zero: its (G + 1) * N elements were a literal
        # that pinned every case of public level2/10 to a class of its own)
        if isinstance(x, torch.Tensor) and x.dim() >= 2 and x.numel() > 0:
            n, e = int(x.numel()), HostExpr("numel", i)
            for k in range(x.dim()):
                add(n + n // int(x.shape[k]), Derived("derived", op="grown", parts=(e, HostExpr("dim", i, k))))
                add(int(x.shape[k]) + 1, Derived("derived", op="plus1", parts=(HostExpr("dim", i, k),)))
    for d, v in base_dims:
        if v <= 1:
            continue      # a dimension of 1 is structure (dims_pattern): its 0.0 and 1.0 would only be coincidences
        add(float(v), Derived("derived", op="float", parts=(d,)))
        less1 = Derived("derived", op="less1", parts=(d,))
        add(float(v - 1), Derived("derived", op="float", parts=(less1,)))
        # a reflection's period (reflect padding: 2 (d - 1))
        add(float(2 * (v - 1)), Derived("derived", op="float", parts=(Derived("derived", op="twice", parts=(less1,)),)))
    for j, a in enumerate(flat):
        if _ints(a):
            for k, item in enumerate(a):
                add(float(item), Derived("derived", op="float", parts=(HostExpr("item", j, k),)))
                for d, v in base_dims:
                    add(v + item, Derived("derived", op="add", parts=(d, HostExpr("item", j, k))))
        if isinstance(a, float) and a != 0:
            add(1.0 / a, Derived("derived", op="recip", parts=(HostExpr("scalar", j),)))
    # a mean's 1 / n over a run of dimensions (layer norm's normalized shape), and n itself
    # as a float (a division by the spatial size H * W)
    for i, x in enumerate(flat):
        if isinstance(x, torch.Tensor):
            shape = [int(d) for d in x.shape]
            for lo in range(len(shape)):
                for hi in range(lo + 1, len(shape) + 1):
                    n = math.prod(shape[lo:hi])
                    if n > 1:
                        e = HostExpr("dim", i, lo) if hi == lo + 1 else \
                            HostExpr("numel", i) if (lo, hi) == (0, len(shape)) else HostExpr("prod", i, lo, hi)
                        add(1.0 / n, Derived("derived", op="recip", parts=(e,)))
                        if hi > lo + 1:
                            add(float(n), Derived("derived", op="float", parts=(e,)))
            _grouped_runs(add, i, shape, flat)
            if long_row_limit is not None:
                _long_row_chunks(add, i, shape, long_row_limit, flat)


def _group_args(flat: list) -> list[int]:
    """Int arguments that may split a run of dimensions into groups (a group norm's groups)."""
    return [j for j, a in enumerate(flat) if isinstance(a, int) and not isinstance(a, bool) and a > 1]


def _grouped_runs(add: Any, i: int, shape: list[int], flat: list) -> None:
    """A run of dimensions divided by an int argument that divides it, and the leading
    dimensions times that argument: a group norm's group (C / G * H * W elements, its mean's
    1 / n) and its rows (N * G), and the channels of a group (C / G); without these each
    group norm case was a class of its own (public level1/11_group_norm: 70 classes, 73 cases)."""
    runs = [(lo, len(shape)) for lo in range(len(shape))] + [(lo, lo + 1) for lo in range(len(shape) - 1)]
    for j in _group_args(flat):
        for lo, hi in runs:
            n = math.prod(shape[lo:hi])
            if n % flat[j] != 0 or n == flat[j]:
                continue
            end = -1 if hi == len(shape) else hi
            # the group's size; the leading dimensions times the groups; 1 / size; size as a float
            whats = [0] + ([1] if lo > 0 and end == -1 else []) + ([2, 3] if n // flat[j] > 1 else [])
            for what in whats:
                add(HOST_HELPERS["grouped_run"](tuple(shape), flat[j], lo, end, what),
                    Derived("derived", value=(i,), op="call", parts=("grouped_run", (i, j), lo, end, what)))


def _long_row_chunks(add: Any, i: int, shape: list[int], limit: int, flat: list) -> None:
    """A reduction over a trailing run too long for UB is traced in chunks (sage/kernels/
    long_rows.py): the chunk length is the largest divisor of the run's length up to a limit,
    so the chunk, the number of chunks and the rows of the chunked reduction (the leading
    dimensions times the chunks) are no product of dimensions. The host computes them as the
    compiler did (`long_row_split`) at the limit the case was traced with; without these, every
    spatial size of an instance norm's backward was a case class of its own (public level2/14:
    49 classes, 50 cases). A group norm's row is a run divided by an int argument (the
    groups), its chunked rows the leading dimensions times the groups times the chunks
    (`grouped_row_split`). Offered only for such a case: elsewhere they would be coincidences
    the class checks must keep apart (ambiguity.py)."""
    groups = _group_args(flat)
    for lo in range(len(shape)):
        run = math.prod(shape[lo:])
        if run <= limit:
            break
        for what in (0, 1, 2):
            v = HOST_HELPERS["long_row_split"](tuple(shape), lo, len(shape), limit, what)
            if v > 1:
                add(v, Derived("derived", value=(i,), op="call", parts=("long_row_split", (i,), lo, -1, limit, what)))
            for j in groups:
                v = HOST_HELPERS["grouped_row_split"](tuple(shape), flat[j], lo, len(shape), limit, what)
                if v > 1:
                    add(v, Derived("derived", value=(i,), op="call",
                                   parts=("grouped_row_split", (i, j), lo, -1, limit, what)))


__all__ = ["Derived", "extend"]
