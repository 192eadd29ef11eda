"""The vendor's (torch_npu's) device time for one kernel: analytic, calibrated to public figures.

    device_us = device_fixed_us (preset) + t0[g]
                + max(memory_us / mem_eff[g], vector_us / vec_eff[g],
                      cube_us / (cube_eff[g] x wave_util) + fill[g] x tile_us)

- `memory_us`: the kernel's HBM bytes at HBM bandwidth; bytes the chain re-reads while they
  are still in L2 cost 1 / l2_hit_speedup of that (the preset's L2 rate, as the simulator);
- `vector_us`: its vector work (`work.py`) spread over the AIV cores at the fp32 `vadd`
  rate (over at most `work.rows` cores for per-row algorithms: sort, top-k, scan);
- `cube_us`: its matmul FLOPs at the cube peak (halved for fp32 inputs), with `wave_util` =
  tiles / (waves x cube cores) for the vendor's base output tile, and `tile_us` the time of
  one output tile on one core at peak: the pipeline fill before the cores stream (it grows
  with K, which is why a 256³ matmul takes a few µs and a 1024³ one twice its FLOPs' worth);
- `t0`, `mem_eff`, `vec_eff`, `cube_eff`, `fill`: per group `g` of cost classes, fitted by
  `benchmarks/calibration.py` to public torch_npu times on 910B, each compared with the
  model's time of the kind its page measured (device events, profiler kernel time or a host
  loop; whole pages held out, `docs/calibration.md`) and stored in `vendor_params.json`. The affine
  form makes the efficiency grow with size, as the measurements do: a small kernel is
  dominated by `t0`, a big one runs at `mem_eff` of HBM.

Cost classes without a public figure of their own borrow a measured group (`BORROWED`,
reasons in docs/calibration.md).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

from sage.bench.reference.work import Work
from sage.kernels import CostClass
from sage.npu.hardware import HardwareSpec

PARAMS_FILE = Path(__file__).with_name("vendor_params.json")


class GroupParams(BaseModel):
    t0_us: float = 0.0
    mem_eff: float = 1.0
    vec_eff: float = 1.0
    cube_eff: float = 1.0        # fp16 / bf16 inputs
    cube_eff_fp32: float = 1.0   # fp32 inputs (on top of the preset's fp32 factor)
    fill: float = 0.0            # pipeline fill, in output-tile times of one core


class VendorParams(BaseModel):
    source: str
    groups: dict[str, GroupParams]


# Which fitted group times each cost class. Groups with public figures of their own are
# their own entry; the others borrow the closest measured behaviour (docs/calibration.md).
GROUP_OF: dict[CostClass, str] = {
    CostClass.ELEMENTWISE: "elementwise", CostClass.BROADCAST: "elementwise", CostClass.COPY: "elementwise",
    CostClass.OTHER: "elementwise",
    CostClass.REDUCTION: "reduction", CostClass.SOFTMAX_NORM: "reduction",
    CostClass.SORT: "sort", CostClass.SCAN: "sort",
    CostClass.INDEX: "index",
    CostClass.MATMUL: "cube", CostClass.CONV: "cube",
}
BORROWED: dict[CostClass, str] = {
    CostClass.BROADCAST: "an elementwise kernel with a broadcast operand streams like one without",
    CostClass.COPY: "a copy is an elementwise kernel without arithmetic (no public torch_npu copy figure found)",
    CostClass.OTHER: "pooling and interpolation are streaming vector kernels (no public figure found)",
    CostClass.SOFTMAX_NORM: "a row-wise reduction plus elementwise passes (no public softmax/norm figure found)",
    CostClass.SCAN: "a multi-pass vector algorithm like sort (no public AI Core cumsum figure found)",
    CostClass.CONV: "convolution runs as an im2col matmul on the cube",
}


class VendorTime(BaseModel):
    group: str
    fixed_us: float
    work_us: float               # device time beyond the fixed cost
    bound: str                   # memory | vector | cube: the term that set it
    l2_hit_bytes: float = 0.0

    @property
    def device_us(self) -> float:
        return self.fixed_us + self.work_us


@lru_cache(maxsize=4)
def load_params(path: str = str(PARAMS_FILE)) -> VendorParams:
    return VendorParams.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))


def cube_peak_flops_per_us(hw: HardwareSpec, fp32: bool) -> float:
    peak = 2.0 * hw.cube.peak_macs_per_cycle * hw.chip.aic_cores * hw.chip.clock_mhz
    return peak / hw.cube.fp32_factor if fp32 else peak


def wave_util(tiles: int, cores: int) -> float:
    if tiles <= 0:
        return 1.0
    return tiles / (math.ceil(tiles / cores) * cores)


def resource_us(work: Work, hw: HardwareSpec, l2_hit_bytes: float = 0.0) -> tuple[float, float, float]:
    """Memory (L2 hits at the L2 rate), vector and cube time of the work at each unit's peak."""
    hit = min(max(l2_hit_bytes, 0.0), work.bytes)
    hbm = hw.chip.hbm_gbps * 1e3
    mem = (work.bytes - hit) / hbm + hit / (hbm * hw.transfer.effects.l2_hit_speedup)
    cores = min(work.rows, hw.chip.aiv_cores) if work.rows else hw.chip.aiv_cores
    vec = work.vector_cycles / (cores * hw.chip.clock_mhz)
    cube = work.cube_flops / cube_peak_flops_per_us(hw, work.fp32_cube) if work.cube_flops else 0.0
    return mem, vec, cube


def vendor_time(work: Work, group: str, hw: HardwareSpec, *, l2_hit_bytes: float = 0.0,
                params: VendorParams | None = None) -> VendorTime:
    p = (params or load_params()).groups[group]
    mem, vec, cube = resource_us(work, hw, l2_hit_bytes)
    cube_eff = p.cube_eff_fp32 if work.fp32_cube else p.cube_eff
    cores = hw.chip.aic_cores
    tile_us = cube * cores / work.cube_tiles if work.cube_tiles else 0.0
    terms = {"memory": mem / p.mem_eff, "vector": vec / p.vec_eff,
             "cube": cube / (cube_eff * wave_util(work.cube_tiles, cores)) + p.fill * tile_us if cube else 0.0}
    bound = max(terms, key=lambda k: terms[k])
    return VendorTime(group=group, fixed_us=hw.launch.device_fixed_us, work_us=p.t0_us + terms[bound], bound=bound,
                      l2_hit_bytes=min(l2_hit_bytes, work.bytes))


def group_of(op_class: CostClass | None, work: Work, hw: HardwareSpec) -> str:
    """The group of an eager call, or for a fused kernel (op_class None) the group of its dominant unit."""
    if op_class is not None:
        return GROUP_OF[op_class]
    mem, vec, cube = resource_us(work, hw)
    return "cube" if cube >= max(mem, vec) and cube > 0 else "elementwise"
