"""Each group kind's lowering: a library kernel generator and the host line that launches it."""

from __future__ import annotations

import math
from collections.abc import Callable

from sage.agent.compiler import lower_index
from sage.agent.compiler.generic.lift import lift
from sage.agent.compiler.build import CONSTANT_OP, Unsupported
from sage.agent.compiler.emit import Launch, library_launch
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Program, Ref, contiguous_strides
from sage.agent.compiler.merge import program_of
from sage.agent.compiler.lower_attention import attention_launch
from sage.agent.compiler.lower_conv import conv_launch
from sage.agent.compiler.lower_scan_sort import scan_launch, sort_launch, topk_launch
from sage.agent.compiler.schedule import Schedule
from sage.agent.compiler.tilelower import tile_spec
from sage.kernels import (
    Access, Inp, Knobs, Op, Target, TileOutput, TileSpec, TileTooBig, render, tile_args, tile_geometry, tile_source,
)


def lower_group(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """The group's launch, or None when it has nothing to do (a zero-size iteration)."""
    if group.kind == "tile":
        if not group.stores or (group.tile is not None and 0 in group.tile.full):
            return None                  # a zero-size iteration writes nothing
        spec = tile_spec(group, prog, name, fp32=sched.fp32_compute, row_axis=sched.row_axis)
        return tile_launch(spec, sched.knobs(), target, group.describe())
    lower = PRIMITIVE_LOWERINGS.get(group.kind)
    if lower is None:
        raise Unsupported(f"{group.nodes[0].describe()}: the {group.kind} lowering is not written yet")
    return lower(group, prog, name, sched, target)


class TileDoesNotFit(Unsupported):
    """No tile of the group's program fits in UB (rows that are kept whole are too long)."""


def tile_launch(spec: TileSpec, knobs: Knobs, target: Target, label: str) -> Launch | None:
    if math.prod(spec.dims) == 0:
        return None
    lifted = lift(spec)
    try:
        source = tile_source(lifted, knobs, target=target)
    except TileTooBig as exc:
        raise TileDoesNotFit(f"{label}: {exc}") from None
    outs = "; ".join(render(o.expr) for o in spec.outputs)
    args = tile_args(spec)
    geo = tile_geometry(spec, knobs, target=target)
    # a program whose blocks meet at SyncAll cannot share its launch with other programs' blocks
    program = program_of(spec, geo.tiles) if geo.row_parts == 1 else None
    # the bytes it moves, over the lifted sizes: a merged launch deals its blocks by them
    weight = program_of(lifted, geo.tiles).nbytes if program is not None else None
    return Launch(source, f"{spec.name}_launch({', '.join(args)})", f"{label}: {outs}", args, program, weight)


def copy_launch(prog: Program, src: Ref, dst_name: str, name: str, target: Target) -> Launch | None:
    """dst (a fresh dense buffer) = src (any layout): a tile program of one identity."""
    shape = tuple(d for d in src.shape if d != 1) or (1,)
    full = [(d, s) for d, s in zip(src.shape, src.layout.strides) if d != 1] or [(1, 0)]
    buf = prog.buffers[src.buf]
    leaf = Access(arg=buf.name, dtype=src.dtype, numel=buf.numel, strides=tuple(s for _, s in full),
                  offset=src.layout.offset)
    out = Access(arg=dst_name, dtype=src.dtype, numel=max(math.prod(shape), 1), strides=contiguous_strides(shape))
    spec = TileSpec(name=name, dims=shape, row=len(shape) - 2 if len(shape) > 1 else None, leaves=(leaf,),
                    outputs=(TileOutput(expr=Op("identity", (Inp(0),)), access=out),),
                    compute=src.dtype if src.dtype in ("float32", "float16", "int32") else "float32")
    return tile_launch(spec, Knobs(tile_len=8192, copy_mode="auto"), target, f"copy to {dst_name}")


# -- matrix products -----------------------------------------------------------------------------
def matmul_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    from sage.agent.compiler.fusion import PRODUCT
    from sage.kernels import MatOperand, MmOut, MmSpec, mm_args, mm_source

    node = group.nodes[0]
    a, b, out = node.ins[0], node.ins[1], node.outs[0]
    assert a is not None and b is not None
    batched = len(out.shape) == 3
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    batch = out.shape[0] if batched else 1
    if 0 in (m, n, batch):
        return None
    if k == 0:
        raise Unsupported(f"{node.describe()}: a product over K = 0")
    ma, mb = _operand(prog, a, batched, "A", node), _operand(prog, b, batched, "B", node)
    acc = "int32" if a.dtype == "int8" else "float32"
    direct = _direct_store(group, out, acc)
    epilogue = None
    mm_out = None
    if direct is not None:
        buf = prog.buffers[direct.buf]
        mm_out = MmOut(arg=buf.name, dtype=direct.dtype, numel=buf.numel, offset=direct.layout.offset,
                       batch_stride=direct.layout.strides[0] if batched else 0, row_stride=direct.layout.strides[-2])
    else:
        epilogue = _epilogue_spec(group, prog, f"{name}e", (batch, m, n), acc, PRODUCT)
    spec = MmSpec(name=name, batch=batch, m=m, n=n, k=k, a=ma, b=mb, out=mm_out, epilogue=epilogue)
    try:
        source = mm_source(lift(spec), sched.cube_knobs(), target=target, epilogue_knobs=sched.knobs())
    except ValueError as exc:
        raise Unsupported(f"{node.describe()}: {exc}") from None
    args = mm_args(spec)
    label = group.describe() + (f": epilogue {'; '.join(render(o.expr) for o in epilogue.outputs)}" if epilogue else "")
    return Launch(source, f"{name}_launch({', '.join(args)})", label, args)


def _operand(prog: Program, ref: Ref, batched: bool, what: str, node) -> "MatOperand":
    from sage.kernels import MatOperand

    lay = ref.layout
    rows, cols = lay.shape[-2], lay.shape[-1]
    rs, cs = lay.strides[-2], lay.strides[-1]
    if cols == 1:
        cs = 1
    if rows == 1 and cs != 1:
        rs = 1
    if cs != 1 and rs != 1:
        raise Unsupported(f"{node.describe()}: operand {what} has neither contiguous rows nor columns "
                          f"(strides {lay.strides})")
    bs = (lay.strides[0] if lay.shape[0] > 1 else 0) if batched else 0
    buf = prog.buffers[ref.buf]
    return MatOperand(arg=buf.name, dtype=ref.dtype, numel=buf.numel, offset=lay.offset, batch_stride=bs,
                      row_stride=rs, col_stride=cs)


def _direct_store(group: Group, out: Ref, acc: str) -> Ref | None:
    """The product alone, written where the cube can put it (dense rows, a dtype Fixpipe writes)."""
    from sage.agent.compiler.fusion import PRODUCT
    from sage.agent.compiler.tilegroup import LeafRef

    if len(group.stores) != 1:
        return None
    _, ref, expr = group.stores[0]
    while isinstance(expr, Op) and expr.name == "identity":
        expr = expr.args[0]
    if not (isinstance(expr, LeafRef) and expr.buf == PRODUCT):
        return None
    ok_dtype = ref.dtype in (("int32",) if acc == "int32" else ("float32", "float16", "bfloat16"))
    if not ok_dtype or ref.layout.strides[-1] != 1 or ref.shape != out.shape:
        return None
    return ref


def _epilogue_spec(group: Group, prog: Program, name: str, dims: tuple[int, int, int], acc: str,
                   product: int) -> TileSpec:
    """The epilogue as a tile program over (batch, M, N), the workspace as its leaf 0."""
    from sage.agent.compiler.tilegroup import LeafRef, leaves_of
    from sage.agent.compiler.tilelower import _compute_dtype, _number
    from sage.kernels import Iota

    tile = group.tile
    assert tile is not None
    lead = 3 - len(tile.full)
    batch, m, n = dims

    def widen(strides: tuple[int, ...]) -> tuple[int, ...]:
        return (0,) * lead + tuple(strides)

    ids: dict = {}
    ws = Access(arg="ws", dtype=acc, numel=batch * m * n, strides=(m * n, n, 1))
    leaves: list = [ws]
    for _, _, expr in group.stores:
        for leaf in reversed(leaves_of(expr)):
            if leaf.buf == product:
                ids.setdefault(leaf, 0)
            elif leaf not in ids:
                ids[leaf] = len(leaves)
                if leaf.buf is None:
                    leaves.append(Iota(coefs=widen(leaf.gmap.strides), offset=leaf.gmap.offset))
                else:
                    buf = prog.buffers[leaf.buf]
                    leaves.append(Access(arg=buf.name, dtype=buf.dtype, numel=buf.numel,
                                         strides=widen(leaf.gmap.strides), offset=leaf.gmap.offset))
    outputs = []
    for _, ref, expr in group.stores:
        gm = tile.gmap(ref.layout, ref.shape)
        assert gm is not None
        buf = prog.buffers[ref.buf]
        outputs.append(TileOutput(expr=_number(expr, ids), access=Access(
            arg=buf.name, dtype=ref.dtype, numel=buf.numel, strides=widen(gm.strides), offset=gm.offset)))
    compute = _compute_dtype(leaves, outputs, True)
    return TileSpec(name=name, dims=dims, row=1, leaves=tuple(leaves), outputs=tuple(outputs), compute=compute)


# -- row gathers ---------------------------------------------------------------------------------
def gather_rows_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """index_select(x, dim, idx) of a dense x into a dense output: one copy per (outer, index)."""
    from sage.kernels.library.gather_rows import GatherRowsSpec, gather_rows_args, gather_rows_source

    node = group.nodes[0]
    x, idx, out = node.ins[0], node.ins[1], node.outs[0]
    if x is None or idx is None:
        raise Unsupported(f"{node.describe()}: a constant operand")
    dim = next((v for v in node.scalars if isinstance(v, int)), 0) % max(len(x.shape), 1)
    if out.layout.numel == 0:
        return None
    if x.layout.numel == 0:
        raise Unsupported(f"{node.describe()}: indices into an empty axis")
    if out.layout.offset:
        raise Unsupported(f"{node.describe()}: an output at an offset")
    for ref, what in ((x, "source"), (out, "output")):
        if not ref.layout.is_dense() or ref.layout.strides != contiguous_strides(ref.shape):
            raise Unsupported(f"{node.describe()}: the {what} is a strided view (the row gather copies dense rows)")
    if idx.layout.strides not in ((1,), (0,)) and len(idx.shape) == 1 and idx.shape[0] > 1:
        raise Unsupported(f"{node.describe()}: strided indices")
    if idx.dtype not in ("int64", "int32"):
        raise Unsupported(f"{node.describe()}: {idx.dtype} indices")
    outer = math.prod(x.shape[:dim])
    inner = math.prod(x.shape[dim + 1:])
    count = idx.layout.numel
    if inner == 1 and (outer * count > 65536 or _whole_rows_cheaper(x, count, target)
                       and _row_fits(x, count, idx.dtype)):
        return _gather_last_axis(node, prog, name, sched, target, outer, x, idx, out)
    if outer * count > 65536 and inner < 8:
        raise Unsupported(f"{node.describe()}: {outer * count} copies of {inner} element(s) each: an element-wise "
                          "gather along an inner axis other than the last is not written yet")
    spec = GatherRowsSpec(name=name, outer=outer, rows=x.shape[dim], inner=inner, count=count, dtype=x.dtype,
                          index_dtype=idx.dtype, x=prog.buffers[x.buf].name, index=prog.buffers[idx.buf].name,
                          out=prog.buffers[out.buf].name, x_offset=x.layout.offset, index_offset=idx.layout.offset)
    return library_launch(node.describe(), name, group.describe(), lambda: gather_rows_source(lift(spec), target, sched.block_dim),
                          gather_rows_args(spec))


def constant_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """A small captured tensor's values written by a one-core kernel (library/constant.py)."""
    from sage.kernels.library.constant import constant_source

    node = group.nodes[0]
    out = prog.buffers[node.outs[0].buf]
    values = node.call.scalars[0]
    if not values:
        return None
    return library_launch(node.describe(), name, f"constant {out.name}[{len(values)}]",
                          lambda: constant_source(name, out.dtype, values), [out.name])


# A one-node group's primitive kind (sage.kernels.registry Prim.kind) -> its lowering.
PrimitiveLowering = Callable[[Group, Program, str, Schedule, Target], "Launch | None"]
PRIMITIVE_LOWERINGS: dict[str, PrimitiveLowering] = {
    CONSTANT_OP: constant_launch,
    "matmul": matmul_launch,
    "attention": attention_launch,
    "conv": conv_launch,
    "index_select": gather_rows_launch,
    "gather": lower_index.gather_launch,
    "index_copy": lower_index.index_scatter_launch,
    "index_add": lower_index.histogram_launch,        # histc and bincount are index_adds of ones
    "scatter": lower_index.scatter_launch,
    "scan": scan_launch,
    "sort": sort_launch,
    "topk": topk_launch,
}


def _whole_rows_cheaper(x: Ref, count: int, target: Target) -> bool:
    """Picking `count` elements out of each row of x: streaming the row into UB once and one
    Gather beats one GM copy per element when the row is shorter than the copies' fixed costs
    (a GM copy costs the streaming time of K bytes on top of its own, the preset's bw(B) fit:
    a 1000-entry weight table read at 4096 indices is 4 KB against 4096 x 14.9 KB)."""
    from sage.kernels.library.source import DTYPE_SIZE
    from sage.npu.hardware import load_preset

    fixed = load_preset(target.preset).transfer.gm_to_ub.k_bytes
    return x.shape[-1] * DTYPE_SIZE[x.dtype] < count * fixed


def _row_fits(x: Ref, count: int, index_dtype: str) -> bool:
    """A row of x fits in UB with the indices, whole or in chunks (the last-axis gather's tile)."""
    from sage.kernels.library.gather_chunks import index_chunk
    from sage.kernels.library.gather_elems import GatherElemsSpec, row_tile

    probe = GatherElemsSpec(name="probe", outer=1, rows=x.shape[-1], inner=1, count=count, dtype=x.dtype,
                            index_dtype=index_dtype, shared_index=True)
    return row_tile(probe) >= 1 or index_chunk(probe) >= 1


def _gather_last_axis(node, prog: Program, name: str, sched: Schedule, target: Target, outer: int, x: Ref, idx: Ref,
                      out: Ref) -> Launch:
    """index_select along the last axis: whole rows in UB and one Gather instruction per row,
    every row with the same indices (a copy per element would be one DataCopy each)."""
    from sage.kernels.library.gather_elems import GatherElemsSpec, gather_elems_args, gather_elems_source

    spec = GatherElemsSpec(name=name, outer=outer, rows=x.shape[-1], inner=1, count=idx.layout.numel, dtype=x.dtype,
                           index_dtype=idx.dtype, x=prog.buffers[x.buf].name, index=prog.buffers[idx.buf].name,
                           out=prog.buffers[out.buf].name, x_offset=x.layout.offset, index_offset=idx.layout.offset,
                           shared_index=True)
    return library_launch(node.describe(), name, node.describe(), lambda: gather_elems_source(lift(spec), target, sched.block_dim),
                          gather_elems_args(spec))
