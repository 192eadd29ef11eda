"""Lowerings of the scan, sort and topk primitives (one-node groups) to library kernels.

Each reads the node's arguments as aten passed them (positional scalars, then keywords),
views the dense operand as [outer, axis, inner] and refuses, naming the op, what the
kernels cannot take.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from sage.agent.compiler.generic.lift import canonical, canonical_call, lift
from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.emit import Launch, library_launch
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Layout, Node, Program, Ref, contiguous_strides
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


def _input(node: Node) -> Ref:
    if node.ins[0] is None:
        raise Unsupported(f"{node.describe()}: a constant operand")
    return node.ins[0]


def _axis(dim: int, x: Ref) -> int:
    return dim % len(x.shape) if x.shape else 0


def _split(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    return math.prod(shape[:dim]), shape[dim] if shape else 1, math.prod(shape[dim + 1:])


def scan_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """cumsum / cumprod along any axis (sage.kernels.library.scan)."""
    from sage.kernels.library.scan import ScanSpec, scan_args, scan_source

    node = group.nodes[0]
    x, out = _input(node), node.outs[0]
    if out.layout.numel == 0:
        return None
    dim = _axis(call_args(node)["dim"], x)
    _dense(node, [x, out], prog)
    prim = op_def(node.call.name).prim
    outer, length, inner = _split(x.shape, dim)
    spec = ScanSpec(name=name, outer=outer, length=length, inner=inner, dtype=x.dtype, out_dtype=out.dtype,
                    op=prim.op if prim is not None else "sum", x=prog.buffers[x.buf].name,
                    out=prog.buffers[out.buf].name, x_offset=x.layout.offset)
    if out.layout.offset:
        raise Unsupported(f"{node.describe()}: an output at an offset")
    return library_launch(group.nodes[0].describe(), name, group.describe(),
                          lambda: scan_source(lift(spec), target, sched.block_dim), scan_args(spec))


def sort_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """sort / argsort (values and int64 indices) along any axis (sage.kernels.library.sort_rows)."""
    node = group.nodes[0]
    args = call_args(node)
    return _order_launch(group, prog, name, sched, target, args["dim"], bool(args["descending"]), None)


def topk_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """topk (values and int64 indices) along any axis, always in sorted order (sorted=False
    leaves the order to the implementation; torch's CPU order is its own)."""
    node = group.nodes[0]
    args = call_args(node)
    return _order_launch(group, prog, name, sched, target, args["dim"], bool(args["largest"]), int(args["k"]))


def _order_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target, dim: int,
                  descending: bool, k: int | None) -> Launch | None:
    from sage.kernels.library.sort_rows import KEY, SortSpec, merge_workspace, sort_args, sort_source

    node = group.nodes[0]
    x, values, indices = _input(node), node.outs[0], node.outs[1]
    if values.layout.numel == 0:
        return None
    rank = len(x.shape)
    dim = _axis(dim, x)
    _dense(node, [x, values, indices], prog)
    if rank and dim != rank - 1 and math.prod(x.shape[dim + 1:]) != 1:
        return _transposed_order(group, prog, name, sched, target, dim, descending, k)
    if values.layout.offset or indices.layout.offset:
        raise Unsupported(f"{node.describe()}: an output at an offset")
    length = x.shape[dim] if rank else 1
    rows = x.layout.numel // max(length, 1)
    spec = SortSpec(name=name, rows=rows, length=length, k=length if k is None else k, dtype=x.dtype,
                    descending=int(descending), topk=k is not None, x=prog.buffers[x.buf].name,
                    values=prog.buffers[values.buf].name, indices=prog.buffers[indices.buf].name,
                    x_offset=x.layout.offset, index_dtype=indices.dtype)
    if k == 0:
        return None
    try:
        work = merge_workspace(spec, target)
    except ValueError as exc:
        raise Unsupported(f"{node.describe()}: {exc}") from None
    if work:     # rows too long for UB: a merge sort through GM, each core's rows in a workspace
        keys = prog.new_buffer(KEY[spec.dtype], work)
        index = prog.new_buffer("int32", work)
        dead = not prog.readers(indices.buf) and all(r.buf != indices.buf for r in prog.outputs)
        spec = replace(spec, work_keys=keys.name, work_index=index.name, values_only=dead)
    return library_launch(group.nodes[0].describe(), name, group.describe(),
                          lambda: sort_source(lift(spec), target, sched.block_dim), sort_args(spec))


def _transposed_order(group: Group, prog: Program, name: str, sched: Schedule, target: Target, dim: int,
                      descending: bool, k: int | None) -> Launch | None:
    """Along an inner axis: copy x with that axis last into a temporary, sort its rows, and
    copy values and indices back in the original axis order (four kernels, one host call).
    Every operand is seen as [outer, axis, inner] (dense, so the axes before and after merge):
    the copies are the same kernels whatever the rank and the axis (level1/9_top_k's ranks 2
    to 4 along axes 0 to 2 had a copy kernel per rank and axis)."""
    from sage.kernels import HEADER, suffixed

    node = group.nodes[0]
    x, values, indices = node.ins[0], node.outs[0], node.outs[1]
    assert x is not None
    outer, length, inner_n = _split(tuple(x.shape), dim)
    kept = values.shape[dim]
    order, back = (0, 2, 1), (0, 2, 1)
    tx = prog.new_buffer(x.dtype, x.layout.numel)
    out_shape = (outer, inner_n, kept)
    tv = prog.new_buffer(values.dtype, values.layout.numel)
    ti = prog.new_buffer("int32", values.layout.numel)     # int32: the tile copy widens it
    sort_node = Node(index=node.index, op=node.op, call=node.call,
                     ins=[Ref(tx.id, Layout.dense((outer, inner_n, length)), x.dtype)],
                     outs=[Ref(tv.id, Layout.dense(out_shape), values.dtype), Ref(ti.id, Layout.dense(out_shape), "int32")])
    inner = _order_launch(Group(index=group.index, kind=group.kind, nodes=[sort_node]), prog, f"{name}s", sched,
                          target, 2, descending, k)
    x3 = Layout.dense((outer, length, inner_n), x.layout.offset)
    launches = [_relayout(prog, Ref(x.buf, x3.permute(order), x.dtype), tx.name, x.dtype, f"{name}p", target),
                inner]
    for buf, ref, tag in ((tv, values, "v"), (ti, indices, "i")):
        view = Ref(buf.id, Layout.dense(out_shape).permute(back), buf.dtype)
        launches.append(_relayout(prog, view, prog.buffers[ref.buf].name, ref.dtype, f"{name}{tag}", target))
    parts = [launch for launch in launches if launch is not None]
    args = list(dict.fromkeys(a for launch in parts for a in launch.args))
    # each part's module-level names (constants, helpers) get their own suffix: the tile
    # generators all define the same ones
    source = HEADER + "\n".join(suffixed(launch.source, f"_p{i}") for i, launch in enumerate(parts))
    calls = ""
    for i, launch in enumerate(parts):
        # inside a shape-generic trace the kernels call their buffers by their lifted names
        head, _, rest = canonical_call(launch.call).partition("(")
        calls += f"\n    {head}_p{i}({rest}"
    source += f"\n\ndef {name}_launch({', '.join(canonical(args))}):{calls}\n"
    return Launch(source, f"{name}_launch({', '.join(args)})",
                  f"{group.describe()} along axis {dim}: transposed in and out by copies", args)


def _relayout(prog: Program, src: Ref, dst_name: str, dst_dtype: str, name: str, target: Target) -> Launch | None:
    """dst (dense, in src's axis order, as dst_dtype) = src (a permuted view): one tile
    program of one identity."""
    from sage.agent.compiler.lowerings import tile_launch
    from sage.kernels import Access, Inp, Knobs, Op, TileOutput, TileSpec

    shape = tuple(d for d in src.shape if d != 1) or (1,)
    strides = tuple(s for d, s in zip(src.shape, src.layout.strides) if d != 1) or (0,)
    buf = prog.buffers[src.buf]
    leaf = Access(arg=buf.name, dtype=src.dtype, numel=buf.numel, strides=strides, offset=src.layout.offset)
    out = Access(arg=dst_name, dtype=dst_dtype, numel=math.prod(shape), strides=contiguous_strides(shape))
    compute = src.dtype if src.dtype in ("float32", "float16", "int32") else "float32"
    spec = TileSpec(name=name, dims=shape, row=len(shape) - 2 if len(shape) > 1 else None, leaves=(leaf,),
                    outputs=(TileOutput(expr=Op("identity", (Inp(0),)), access=out),), compute=compute)
    return tile_launch(spec, Knobs(), target, f"copy to {dst_name}")
