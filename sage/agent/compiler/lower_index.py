"""Lowerings of the indexed primitives: gather, scatter, index_copy and index_add (and histc /
bincount, which the registry files under index_add).

Each reads one node's operands, views them as the library kernels' [O, D, I] shapes, and
refuses (Unsupported, naming the op and why) what the kernels cannot take: strided views,
unequal index/source shapes, dtypes without a kernel type.
"""

from __future__ import annotations

import math

from sage.agent.compiler.generic.lift import canonical, canonical_call, lift
from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.emit import Launch, library_launch
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Node, Program, Ref, contiguous_strides
from sage.agent.compiler.schedule import Schedule
from sage.kernels import HEADER, Target


def _dense(node: Node, ref: Ref, what: str) -> None:
    if not ref.layout.is_dense():
        raise Unsupported(f"{node.describe()}: the {what} is a strided view (the kernel reads dense rows)")


def _dim(node: Node, rank: int) -> int:
    dim = next((v for v in node.scalars if isinstance(v, int) and not isinstance(v, bool)), 0)
    return dim % max(rank, 1)


def _index(node: Node, idx: Ref | None) -> Ref:
    if idx is None:
        raise Unsupported(f"{node.describe()}: a constant index operand")
    if idx.dtype not in ("int64", "int32"):
        raise Unsupported(f"{node.describe()}: {idx.dtype} indices")
    _dense(node, idx, "index")
    return idx


def _name(prog: Program, ref: Ref) -> str:
    return prog.buffers[ref.buf].name


# -- gather ----------------------------------------------------------------------------------------
def gather_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """torch.gather(x, dim, idx): out[..., k, ...] = x[..., idx[..., k, ...], ...] along dim."""
    from sage.kernels.library.gather_elems import GatherElemsSpec, gather_elems_args, gather_elems_source

    node = group.nodes[0]
    x, out = node.ins[0], node.outs[0]
    if x is None:
        raise Unsupported(f"{node.describe()}: a constant source")
    idx = _index(node, node.ins[1])
    if out.layout.numel == 0:
        return None
    rank = len(x.shape)
    dim = _dim(node, rank)
    if len(idx.shape) != rank or any(a != b for j, (a, b) in enumerate(zip(idx.shape, x.shape)) if j != dim):
        raise Unsupported(f"{node.describe()}: index shape {idx.shape} differs from the source {x.shape} "
                          "off the gathered axis")
    if x.layout.numel == 0:
        raise Unsupported(f"{node.describe()}: indices into an empty axis")
    _dense(node, x, "source")
    if out.layout.offset or out.layout.strides != contiguous_strides(out.shape) and not out.layout.is_dense():
        raise Unsupported(f"{node.describe()}: the output is a strided view")
    spec = GatherElemsSpec(name=name, outer=math.prod(x.shape[:dim]), rows=x.shape[dim] if rank else 1,
                           inner=math.prod(x.shape[dim + 1:]), count=idx.shape[dim] if rank else 1,
                           dtype=x.dtype, index_dtype=idx.dtype, x=_name(prog, x), index=_name(prog, idx),
                           out=_name(prog, out), x_offset=x.layout.offset, index_offset=idx.layout.offset)
    return library_launch(node.describe(), name, group.describe(), lambda: gather_elems_source(lift(spec), target, sched.block_dim),
                          gather_elems_args(spec))


def _then(first: Launch | None, name: str, second: Launch, args: list[str]) -> Launch:
    """`second` launched after `first` (the copy that initialises an out-of-place result), as one
    host function `{name}_launch(*args)`."""
    if first is None:
        return second
    body = [s.replace(HEADER, "", 1) for s in (first.source, second.source)]
    # inside a shape-generic trace the kernels call their buffers by their lifted names
    params, calls = canonical(args), [canonical_call(launch.call) for launch in (first, second)]
    launcher = f"\n\ndef {name}_launch({', '.join(params)}):\n    {calls[0]}\n    {calls[1]}\n"
    return Launch(HEADER + "\n".join(body) + launcher, f"{name}_launch({', '.join(args)})", second.label, args)


def _initial_copy(node: Node, prog: Program, name: str, target: Target) -> Launch | None:
    """An out-of-place scatter starts from a copy of its first operand."""
    from sage.agent.compiler.lowerings import copy_launch

    x, out = node.ins[0], node.outs[0]
    if node.inplace:
        return None
    if x is None:
        raise Unsupported(f"{node.describe()}: a constant destination")
    return copy_launch(prog, x, _name(prog, out), f"{name}c", target)


# -- index_copy / index_add ------------------------------------------------------------------------
def index_scatter_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """index_copy / index_add (and their in-place forms): out[.., idx[c], ..] (+)= src[.., c, ..]."""
    from sage.kernels.library.scatter_rows import ScatterRowsSpec, scatter_rows_args, scatter_rows_source

    node = group.nodes[0]
    if node.op == "index_add" and node.kwargs.get("alpha", 1) != 1:
        raise Unsupported(f"{node.describe()}: alpha != 1")
    # index_put(x, (idx,), values, accumulate) by one row index is index_copy / index_add along dim 0.
    accumulate = node.op == "index_add" or (node.op in ("index_put", "_unsafe_index_put") and any(
        v is True for v in node.scalars + [node.kwargs.get("accumulate")]))
    out, src = node.outs[0], node.ins[2]
    idx = _index(node, node.ins[1])
    if src is None:
        raise Unsupported(f"{node.describe()}: a constant source")
    if out.layout.numel == 0:
        return None
    rank = len(out.shape)
    dim = _dim(node, rank)
    _dense(node, out, "destination")
    # index_put's values may be one element put in every row (index_copy's src never is).
    broadcast = src.layout.numel > 0 and all(s == 0 for s in src.layout.strides) or (
        node.op != "index_copy" and node.op != "index_add" and src.layout.numel == 1)
    if not broadcast:
        _dense(node, src, "source")
    if len(idx.shape) > 1:
        raise Unsupported(f"{node.describe()}: a {len(idx.shape)}-d index")
    count = idx.layout.numel
    if count == 0:
        return _initial_copy(node, prog, name, target)
    ordered = _ordered_accumulate(node, prog, name, sched, target, group, accumulate and not broadcast, dim)
    if ordered is not None:
        return ordered
    spec = ScatterRowsSpec(name=f"{name}s", outer=math.prod(out.shape[:dim]), rows=out.shape[dim] if rank else 1,
                           inner=math.prod(out.shape[dim + 1:]), count=count, dtype=out.dtype,
                           index_dtype=idx.dtype, accumulate=accumulate, src_broadcast=broadcast,
                           out=_name(prog, out), index=_name(prog, idx), src=_name(prog, src),
                           out_offset=out.layout.offset, index_offset=idx.layout.offset,
                           src_offset=src.layout.offset)
    args = scatter_rows_args(spec)
    scatter = library_launch(node.describe(), spec.name, group.describe(),
                             lambda: scatter_rows_source(lift(spec), target, sched.block_dim), args)
    first = _initial_copy(node, prog, name, target)
    names = list(dict.fromkeys((first.args if first else []) + args))
    return _then(first, name, scatter, names)


def _ordered_accumulate(node: Node, prog: Program, name: str, sched: Schedule, target: Target, group: Group,
                        accumulate: bool, dim: int) -> Launch | None:
    """A half-precision index_add / index_put(accumulate) of single elements (out one line along
    `dim`) as the element scatter's add (the line whole or in bands, its indices whole or in
    chunks): one owner sums each element's values in float32 and rounds once. Atomic adds from
    many blocks land in any order, and in fp16/bf16 each order rounds differently (level1/19
    case 12: bf16 repeats two ulp away from eager); torch's CPU kernel rounds after every add in
    index order, which drifts past the rule's 8-ulp cap where many values repeat (level1/19 case
    14: 8.5 ulp off the float64 truth). None: the atomic row scatter takes it."""
    from sage.kernels.library.scatter_elems import ScatterElemsSpec, row_tile, scatter_elems_args, scatter_elems_source
    from sage.kernels.library.scatter_row_chunks import index_chunk

    x, out, src, idx = node.ins[0], node.outs[0], node.ins[2], node.ins[1]
    if not accumulate or out.dtype not in ("float16", "bfloat16") or out.layout.numel != out.shape[dim] or x is None:
        return None
    _dense(node, x, "destination")
    spec = ScatterElemsSpec(name=f"{name}s", outer=1, rows=out.shape[dim], inner=1, count=idx.layout.numel,
                            dtype=out.dtype, index_dtype=idx.dtype, x=_name(prog, x), index=_name(prog, idx),
                            src=_name(prog, src), out=_name(prog, out), x_offset=x.layout.offset,
                            index_offset=idx.layout.offset, src_offset=src.layout.offset, reduce="add", wide=True)
    if row_tile(spec) < 1 and index_chunk(spec) < 1 or out.layout.offset:
        return None
    return library_launch(node.describe(), spec.name, group.describe(),
                          lambda: scatter_elems_source(lift(spec), target, sched.block_dim), scatter_elems_args(spec))


# -- bincount / histc ------------------------------------------------------------------------------
def histogram_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """bincount(x, minlength) and histc(x, bins, min, max): counts, the index_add of ones."""
    from sage.kernels.library.histogram import HistogramSpec, histogram_args, histogram_source

    node = group.nodes[0]
    if node.op not in ("bincount", "histc"):
        return index_scatter_launch(group, prog, name, sched, target)
    x, out = node.ins[0], node.outs[0]
    if x is None:
        raise Unsupported(f"{node.describe()}: a constant input")
    if len([r for r in node.ins if r is not None]) > 1 or (node.op == "bincount" and node.scalars[0] is not None):
        raise Unsupported(f"{node.describe()}: weighted counts")
    if out.layout.numel == 0:
        return None
    _dense(node, x, "input")
    lo = hi = None
    if node.op == "histc":
        lo, hi = float(node.scalars[1]), float(node.scalars[2])
        if lo >= hi:
            raise Unsupported(f"{node.describe()}: min >= max takes the range from the data")
    elif x.dtype not in ("int64", "int32", "int16", "int8", "uint8"):
        raise Unsupported(f"{node.describe()}: bincount of {x.dtype}")
    if x.layout.numel == 0:
        raise Unsupported(f"{node.describe()}: counts of an empty input (the output is a fill)")
    spec = HistogramSpec(name=name, numel=x.layout.numel, bins=out.layout.numel, dtype=x.dtype,
                         out_dtype=out.dtype, lo=lo, hi=hi, x=_name(prog, x), out=_name(prog, out),
                         x_offset=x.layout.offset)
    return library_launch(node.describe(), name, group.describe(), lambda: histogram_source(lift(spec), target, sched.block_dim),
                          histogram_args(spec))


# -- scatter ---------------------------------------------------------------------------------------
# Which scatter calls the element-scatter kernel takes: (op, overload) -> reads a src tensor.
_SCATTERS = {("scatter", "src"): True, ("scatter", "value"): False, ("scatter", "reduce"): True,
             ("scatter", "value_reduce"): False, ("scatter_add", "default"): True, ("scatter_reduce", "two"): True}
# The kernel's reduce for each spelling: scatter_'s reduce=, scatter_add, scatter_reduce's (include_self).
_REDUCES = {"add": "add", "multiply": "multiply", "sum": "add", "prod": "multiply"}


def _scatter_reduce(node: Node) -> str | None:
    if node.op == "scatter_add":
        return "add"
    if node.op == "scatter_reduce":
        how = next((v for v in node.scalars if isinstance(v, str)), None)
        if how not in _REDUCES or not node.kwargs.get("include_self", True):
            raise Unsupported(f"{node.describe()}: scatter_reduce {how!r} (include_self="
                              f"{node.kwargs.get('include_self', True)}); written: sum and prod with include_self")
        return _REDUCES[how]
    how = node.kwargs.get("reduce")
    if how is not None and how not in _REDUCES:
        raise Unsupported(f"{node.describe()}: reduce={how!r}")
    return None if how is None else _REDUCES[how]


def _scatter_geometry(node: Node, out: Ref, idx: Ref, src: Ref, dim: int) -> dict:
    """The element scatter's geometry when index (or src) is not shaped like out off the
    scattered axis ({} when both are: the kernel's [O, K, I] views). torch takes an index no
    larger than self off `dim` and no larger than src anywhere, and reads only the index's
    extent of src (ScatterGatherChecks.h); larger is refused, as torch refuses it."""
    rank = len(out.shape)
    if len(idx.shape) != rank or len(src.shape) != rank:
        raise Unsupported(f"{node.describe()}: index {idx.shape} / src {src.shape} of another rank than "
                          f"the destination's {out.shape}")
    if any(idx.shape[j] > src.shape[j] or j != dim and idx.shape[j] > out.shape[j] for j in range(rank)):
        raise Unsupported(f"{node.describe()}: index {idx.shape} larger than the destination {out.shape} "
                          f"off the scattered axis or than src {src.shape}")
    covers = all(idx.shape[j] == out.shape[j] for j in range(rank) if j != dim)
    if covers and tuple(src.shape) == tuple(idx.shape):
        return {}
    strides = [contiguous_strides(t.shape) for t in (out, idx, src)]

    def axes(js: range) -> list[tuple[int, int, int, int]]:
        """The index's axes in `js` of extent > 1 (the others add nothing to an offset), an axis
        merged into the one before it where every tensor's strides nest (row-major over both)."""
        merged: list[tuple[int, int, int, int]] = []
        for j in js:
            if idx.shape[j] == 1:
                continue
            ax = (idx.shape[j], *(s[j] for s in strides))
            if merged and all(a == ax[0] * b for a, b in zip(merged[-1][1:], ax[1:])):
                ax = (merged.pop()[0] * ax[0], *ax[1:])
            merged.append(ax)
        return merged

    lead, inner = axes(range(dim)), axes(range(dim + 1, rank))
    if math.prod(out.shape[dim + 1:]) == 1:        # along the last axis: rows, one per lead position
        return dict(lead=tuple(lead) or ((1, 0, 0, 0),), axis=(1, 1, 1), width=1, covers=covers)
    return dict(lead=tuple(lead + inner[:-1]), axis=tuple(s[dim] for s in strides),
                width=inner[-1][0] if inner else 1, covers=covers)


def scatter_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """torch.scatter(x, dim, idx, src): a copy of x with out[.., idx[.., k, ..], ..] = src[.., k, ..];
    scatter(x, dim, idx, value) writes the one value at every index; a reduce ('add', 'multiply';
    scatter_add; scatter_reduce sum/prod) combines it with the element there."""
    from sage.kernels.library.scatter_elems import (
        ScatterElemsSpec, copies_x, scatter_elems_args, scatter_elems_source)

    node = group.nodes[0]
    if (node.op, node.call.overload) not in _SCATTERS:
        raise Unsupported(f"{node.describe()}: only scatter with a src tensor or a value (reduce add/multiply), "
                          "scatter_add and scatter_reduce.two are written")
    reduce = _scatter_reduce(node)
    by_value = not _SCATTERS[node.op, node.call.overload]
    x, out = node.ins[0], node.outs[0]
    idx = _index(node, node.ins[1])
    value = float(next(v for v in reversed(node.scalars) if isinstance(v, (int, float)))) if by_value else None
    src = idx if by_value else node.ins[2]       # by value: only idx's shape and layout are asked below
    if x is None or src is None:
        raise Unsupported(f"{node.describe()}: a constant operand")
    if out.layout.numel == 0:
        return None
    if reduce is not None and out.dtype == "bool":
        raise Unsupported(f"{node.describe()}: a {reduce} reduce into bool")
    rank = len(out.shape)
    dim = _dim(node, rank)
    for ref, what in ((x, "destination"), (src, "source"), (out, "output")):
        _dense(node, ref, what)
    geo = _scatter_geometry(node, out, idx, src, dim)
    # torch's CPU scatter reduce of fp16/bf16 sums repeats in float and rounds once (the eager
    # result equals the float32 scatter rounded: level1/21 cases 14, 32, 37, 39, 40); wide does that
    spec = ScatterElemsSpec(name=f"{name}s", outer=math.prod(out.shape[:dim]), rows=out.shape[dim] if rank else 1,
                            inner=math.prod(out.shape[dim + 1:]), count=idx.shape[dim] if rank else 1,
                            dtype=out.dtype, index_dtype=idx.dtype, x=_name(prog, x), index=_name(prog, idx),
                            src=_name(prog, src), out=_name(prog, out), x_offset=x.layout.offset,
                            index_offset=idx.layout.offset, src_offset=src.layout.offset, value=value,
                            reduce=reduce, wide=reduce is not None and out.dtype in ("float16", "bfloat16"), **geo)
    if idx.layout.numel == 0:
        return _initial_copy(node, prog, name, target)
    args = scatter_elems_args(spec)
    scatter = library_launch(node.describe(), spec.name, group.describe(),
                             lambda: scatter_elems_source(lift(spec), target, sched.block_dim), args)
    # an index smaller than out leaves the rest of out to a copy of x first
    first = None if copies_x(spec, sched.block_dim or target.vector_cores) else _initial_copy(node, prog, name, target)
    return _then(first, name, scatter, list(dict.fromkeys((first.args if first else []) + args)))
