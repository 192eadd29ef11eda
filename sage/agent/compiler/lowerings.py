"""Each group kind's lowering: a library kernel generator and the host line that launches it."""

from __future__ import annotations

import math

from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.emit import Launch
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Program, Ref, contiguous_strides
from sage.agent.compiler.schedule import Schedule
from sage.agent.compiler.tilelower import tile_spec
from sage.kernels import (
    Access, Inp, Knobs, Op, Target, TileOutput, TileSpec, TileTooBig, render, tile_args, tile_source,
)


def lower_group(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    """The group's launch, or None when it has nothing to do (a zero-size iteration)."""
    if group.kind == "tile":
        if not group.stores:
            return None
        spec = tile_spec(group, prog, name, fp32=sched.fp32_compute, row_axis=sched.row_axis)
        return tile_launch(spec, sched.knobs(), target, group.describe())
    raise Unsupported(f"{group.nodes[0].describe()}: the {group.kind} lowering is not written yet")


def tile_launch(spec: TileSpec, knobs: Knobs, target: Target, label: str) -> Launch | None:
    if math.prod(spec.dims) == 0:
        return None
    try:
        source = tile_source(spec, knobs, target=target)
    except TileTooBig as exc:
        raise Unsupported(f"{label}: {exc}") from None
    outs = "; ".join(render(o.expr) for o in spec.outputs)
    args = tile_args(spec)
    return Launch(source, f"{spec.name}_launch({', '.join(args)})", f"{label}: {outs}", args)


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
