"""Lowerings of the scan, sort and topk primitives (one-node groups) to library kernels.

Each reads the node's arguments as aten passed them (positional scalars, then keywords),
views the dense operand as [outer, axis, inner] and refuses, naming the op, what the
kernels cannot take.
"""

from __future__ import annotations

import math
from typing import Any

from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.emit import Launch
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Node, Program, Ref, contiguous_strides
from sage.agent.compiler.schedule import Schedule
from sage.kernels import Target, op_def

# Each op's Python arguments after the tensor, in aten's order, with their defaults.
_SIGNATURES: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {
    ("cumsum", "default"): (("dim", None),),
    ("cumprod", "default"): (("dim", None),),
    ("sort", "default"): (("dim", -1), ("descending", False)),
    ("sort", "stable"): (("stable", None), ("dim", -1), ("descending", False)),
    ("argsort", "default"): (("dim", -1), ("descending", False)),
    ("argsort", "stable"): (("stable", None), ("dim", -1), ("descending", False)),
    ("topk", "default"): (("k", None), ("dim", -1), ("largest", True), ("sorted", True)),
}


def call_args(node: Node) -> dict[str, Any]:
    """The node's Python arguments by name (positional scalars, keywords, defaults)."""
    sig = _SIGNATURES.get((node.op, node.call.overload))
    if sig is None:
        raise Unsupported(f"{node.describe()}: the {node.call.overload} overload is not understood")
    names = [name for name, _ in sig]
    if node.op == "sort" and node.call.overload == "stable":
        names = names[1:]                # stable is keyword-only; dim, descending may be positional
    args = dict(sig)
    args.update(zip(names, node.scalars))
    args.update({k: v for k, v in node.kwargs.items() if k in args})
    return args


def _dense(node: Node, refs: list[Ref], prog: Program) -> None:
    for ref in refs:
        if ref.layout.strides != contiguous_strides(ref.shape) and ref.layout.numel > 1:
            raise Unsupported(f"{node.describe()}: a strided view (strides {ref.layout.strides}); "
                              "the kernel reads and writes dense rows")


def _split(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    return math.prod(shape[:dim]), shape[dim] if shape else 1, math.prod(shape[dim + 1:])


def scan_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """cumsum / cumprod along any axis (sage.kernels.library.scan)."""
    from sage.kernels.library.scan import ScanSpec, scan_args, scan_source

    node = group.nodes[0]
    x, out = node.ins[0], node.outs[0]
    if x is None:
        raise Unsupported(f"{node.describe()}: a constant operand")
    if out.layout.numel == 0:
        return None
    dim = call_args(node)["dim"]
    rank = len(x.shape)
    dim = dim % rank if rank else 0
    _dense(node, [out], prog)
    if x.layout.strides != contiguous_strides(x.shape) and x.layout.numel > 1:
        raise Unsupported(f"{node.describe()}: a strided input (strides {x.layout.strides})")
    prim = op_def(node.call.name).prim
    outer, length, inner = _split(x.shape, dim)
    spec = ScanSpec(name=name, outer=outer, length=length, inner=inner, dtype=x.dtype, out_dtype=out.dtype,
                    op=prim.op if prim is not None else "sum", x=prog.buffers[x.buf].name,
                    out=prog.buffers[out.buf].name, x_offset=x.layout.offset)
    if out.layout.offset:
        raise Unsupported(f"{node.describe()}: an output at an offset")
    try:
        source = scan_source(spec, target, sched.block_dim)
    except ValueError as exc:
        raise Unsupported(f"{node.describe()}: {exc}") from None
    args = scan_args(spec)
    return Launch(source, f"{name}_launch({', '.join(args)})", group.describe(), args)


def sort_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """sort / argsort (values and int64 indices) along the last axis (sage.kernels.library.sort_rows)."""
    node = group.nodes[0]
    args = call_args(node)
    return _order_launch(group, prog, name, sched, target, args["dim"], bool(args["descending"]), None)


def topk_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """topk (sorted values and int64 indices) along the last axis."""
    node = group.nodes[0]
    args = call_args(node)
    if not args["sorted"]:
        # unsorted top-k may come in any order; the sorted one is a valid answer only if the
        # caller does not compare order, which torch does not promise either way
        pass
    return _order_launch(group, prog, name, sched, target, args["dim"], bool(args["largest"]), int(args["k"]))


def _order_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target, dim: int,
                  descending: bool, k: int | None) -> Launch | None:
    from sage.kernels.library.sort_rows import SortSpec, sort_args, sort_source

    node = group.nodes[0]
    x = node.ins[0]
    values, indices = node.outs[0], node.outs[1]
    if x is None:
        raise Unsupported(f"{node.describe()}: a constant operand")
    if values.layout.numel == 0:
        return None
    rank = len(x.shape)
    dim = dim % rank if rank else 0
    if rank and dim != rank - 1 and math.prod(x.shape[dim + 1:]) != 1:
        raise Unsupported(f"{node.describe()}: a sort along axis {dim} of {rank} (the kernel sorts the last axis; "
                          "a transposed copy first is not written yet)")
    _dense(node, [x, values, indices], prog)
    if values.layout.offset or indices.layout.offset:
        raise Unsupported(f"{node.describe()}: an output at an offset")
    length = x.shape[dim] if rank else 1
    rows = x.layout.numel // max(length, 1)
    spec = SortSpec(name=name, rows=rows, length=length, k=length if k is None else k, dtype=x.dtype,
                    descending=descending, topk=k is not None, x=prog.buffers[x.buf].name,
                    values=prog.buffers[values.buf].name, indices=prog.buffers[indices.buf].name,
                    x_offset=x.layout.offset)
    if k == 0:
        return None
    try:
        source = sort_source(spec, target, sched.block_dim)
    except ValueError as exc:
        raise Unsupported(f"{node.describe()}: {exc}") from None
    args = sort_args(spec)
    return Launch(source, f"{name}_launch({', '.join(args)})", group.describe(), args)
