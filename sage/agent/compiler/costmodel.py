"""An analytic estimate of a group's time under a schedule: what the search ranks by.

For a tile program: the tile the schedule makes (`tile_geometry`), then per tile the MTE2
copy-in, vector and MTE3 copy-out cycles from the preset's transfer paths and vector
costs; with double buffering a tile costs its slowest pipe, else their sum; blocks run in
parallel and share HBM. It is a ranking tool, checked against the simulator when the
budget allows (and the gap is recorded); it never decides correctness.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from sage.kernels import Access, Knobs, Target, TileSpec, dtype_size, tile_geometry
from sage.npu.hardware import HardwareSpec, PathSpec, load_preset


class Estimate(BaseModel):
    time_us: float
    bottleneck: str                # MTE2 | V | MTE3 | HBM | launch
    parts: dict[str, float] = {}   # cycles per block by pipe


def _copy(hw: HardwareSpec, path: PathSpec, nbytes: float, bursts: int = 1) -> float:
    if nbytes <= 0:
        return 0.0
    peak = hw.bytes_per_cycle(path.peak_gbps)
    return path.latency_cycles + (path.k_bytes + nbytes) / peak + hw.transfer.effects.burst_overhead_cycles * (bursts - 1)


_LEAF_SHAPE = {"rows": ("nr", "nc"), "row_loop": ("nr", "nc"), "row": (1, "nc"), "col": (1, "nr"),
               "col_strided": ("nr", 1), "scalar": (1, 1), "span": ("nr", "span"), "transposed": ("nc", "nr"),
               "elements": ("nrnc", 1), "seg": ("nr", 1), "padded": ("nr", "nc")}


def estimate_tile(spec: TileSpec, knobs: Knobs, target: Target, hw: HardwareSpec | None = None) -> Estimate:
    hw = hw or load_preset(target.preset)
    geo = tile_geometry(spec, knobs, target=target)
    nr, nc = geo.nr, geo.nc
    dims = {"nr": nr, "nc": nc, "nrnc": nr * nc}
    mte2 = mte3 = 0.0
    moved = 0.0
    for i, leaf in enumerate(spec.leaves):
        if not isinstance(leaf, Access) or i in geo.shared:
            continue
        plan = geo.plans.get(i, "rows")
        es = dtype_size(leaf.dtype)
        _, sc = spec.strides_of(leaf)
        dims["span"] = (nc - 1) * max(sc, 1) + 1
        bursts_key, len_key = _LEAF_SHAPE[plan]
        bursts = dims[bursts_key] if isinstance(bursts_key, str) else bursts_key
        length = dims[len_key] if isinstance(len_key, str) else len_key
        nbytes = bursts * length * es
        if plan in ("row_loop",):
            mte2 += nr * _copy(hw, hw.transfer.gm_to_ub, nc * es)
        else:
            mte2 += _copy(hw, hw.transfer.gm_to_ub, nbytes, bursts)
        moved += nbytes
    for j, out in enumerate(spec.outputs):
        es = dtype_size(out.access.dtype)
        plan = geo.out_plans[j]
        sr, _ = spec.strides_of(out.access)
        rows = 1 if sr == 0 or plan in ("col", "col_strided") else nr
        length = nr if plan in ("col", "col_strided") else nc
        bursts = rows * (nc if plan == "elements" else 1)
        mte3 += _copy(hw, hw.transfer.ub_to_gm, rows * length * es, bursts) / max(geo.rows_per_item, 1)
        moved += rows * length * es / max(geo.rows_per_item, 1)
    es_c = dtype_size(spec.compute)
    repeats = max(1, math.ceil(nr * geo.pitch * es_c / hw.vector.repeat_bytes))
    head, slope = hw.vector.costs["vadd"].b32 if es_c >= 4 else hw.vector.costs["vadd"].b16
    vec = geo.vector_lines * (slope * repeats + 1.0) + 4 * head
    vec += sum(1 for p in geo.plans.values() if p in ("span", "transposed", "elements")) * 4 * slope * repeats
    tile = max(mte2, vec, mte3) if geo.buffer_num >= 2 else mte2 + vec + mte3
    cores = knobs.block_dim or target.vector_cores
    blocks = min(geo.tiles, cores)
    per_block = math.ceil(geo.tiles / max(blocks, 1)) * geo.rows_per_item
    cycles = per_block * tile
    hbm = geo.tiles * geo.rows_per_item * moved / hw.hbm_bytes_per_cycle
    parts = {"MTE2": per_block * mte2, "V": per_block * vec, "MTE3": per_block * mte3, "HBM": hbm}
    bottleneck = max(parts, key=parts.get)
    total = max(cycles, hbm) / hw.cycles_per_us + hw.launch.overhead_us
    return Estimate(time_us=total, bottleneck=bottleneck, parts=parts)
