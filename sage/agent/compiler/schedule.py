"""Schedules: the knobs of one group's kernel, and what a group is for choosing them.

A `Schedule` holds every knob a lowering reads (tile, buffers, blocks, copy mode,
precision, the tile's row axis, whether a reduction over rows splits them across blocks;
the cube's base tile and K steps). A `GroupKey` names a
group and the facts a decision is keyed on when it is remembered: the op class, the
dtype, the shape regime (how many elements, how long a row) — what memory stores as
{op_class, dtype, shape regime, bottleneck} -> chosen knobs.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Program
from sage.kernels import CubeKnobs, Knobs


class Schedule(BaseModel):
    model_config = ConfigDict(frozen=True)

    tile_len: int = Field(4096, ge=32, le=65536)
    buffer_num: int = Field(2, ge=1, le=4)
    block_dim: int | None = Field(None, ge=1)
    copy_mode: Literal["pad", "auto"] = "auto"
    fp32_compute: bool = True
    row_axis: int | None = None
    row_split: bool = True
    base_m: int = Field(128, ge=16, multiple_of=16)
    base_n: int = Field(256, ge=16, multiple_of=16)
    base_k: int = Field(64, ge=16, multiple_of=16)
    l1_k: int = Field(256, ge=16, multiple_of=16)

    def knobs(self) -> Knobs:
        return Knobs(tile_len=self.tile_len, buffer_num=self.buffer_num, block_dim=self.block_dim,
                     copy_mode=self.copy_mode, fp32_compute=self.fp32_compute, row_split=self.row_split)

    def cube_knobs(self) -> CubeKnobs:
        return CubeKnobs(base_m=self.base_m, base_n=self.base_n, base_k=self.base_k, l1_k=self.l1_k,
                         buffer_num=min(self.buffer_num, 2), block_dim=self.block_dim)


class GroupKey(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str                   # the group's class: groups of any case with this id share one schedule
    op_class: str             # pointwise | reduction | matmul | sort | scan | gather | scatter | ...
    dtype: str                # the widest floating dtype it reads (or its integer dtype)
    regime: str               # size bucket: "<log2 elements>/<log2 row>"


def group_key(group: Group, prog: Program, case: int = 0, index: int = 0) -> GroupKey:
    """The group's key; its id names its class (`class_id`), not its case: one schedule serves
    every case whose group is of that class, so their kernels share one text (a schedule is a
    tiling rule, never a per-case constant)."""
    refs = [r for n in group.nodes for r in n.ins if r is not None] or [o for n in group.nodes for o in n.outs]
    dtypes = {r.dtype for r in refs}
    dtype = next((d for d in ("float32", "bfloat16", "float16") if d in dtypes), sorted(dtypes)[0] if dtypes else "-")
    if group.kind == "tile":
        assert group.tile is not None
        op_class = "reduction" if group.tile.rdims else "pointwise"
        full = group.tile.full
        row = math.prod(full[d] for d in group.tile.rdims) if group.tile.rdims else (full[-1] if full else 1)
        numel = math.prod(full)
    else:
        op_class = group.kind
        biggest = max(refs, key=lambda r: r.layout.numel) if refs else None
        numel = biggest.layout.numel if biggest else 1
        row = biggest.shape[-1] if biggest is not None and biggest.shape else 1
    regime = f"{_log2(numel)}/{_log2(row)}"
    return GroupKey(id=class_id(group, prog), op_class=op_class, dtype=dtype, regime=regime)


def class_id(group: Group, prog: Program) -> str:
    """What the group computes with its sizes left out: its tile program with every size
    reduced to 0, 1 or many and every constant to a float (a tile group), or its primitive's
    op, dtypes and ranks; hashed. Groups of two cases with one id take one schedule."""
    import hashlib

    from sage.agent.compiler.generic.lift import shape_free

    if group.kind == "tile" and group.tile is not None and group.stores:
        from sage.agent.compiler.build import Unsupported
        from sage.agent.compiler.tilelower import tile_spec

        try:
            what = repr(shape_free(tile_spec(group, prog, "g"), prog.names()))
        except (Unsupported, ValueError):
            what = group.describe()
    else:
        refs = [(r.dtype, len(r.shape)) if r is not None else None for n in group.nodes for r in n.ins + n.outs]
        what = repr((group.kind, [n.call.qualname for n in group.nodes], refs))
    return f"{group.kind}-{hashlib.sha1(what.encode()).hexdigest()[:10]}"


def _log2(n: int) -> int:
    return int(math.log2(max(n, 1)))


def default_schedule(key: GroupKey) -> Schedule:
    return Schedule()
