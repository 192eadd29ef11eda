"""Cost formulas of the simulator, with their numbers taken from a HardwareSpec.

One copy alone on a path takes ``latency + max((K + B) / peak, B / plateau)`` cycles: the
rising part is the fit through the small-copy measurements, the plateau the rate one core
sustains on large copies (docs/hardware.md, "Data movement"). For the multi-core schedule a GM
copy is split in two (`Transfer`): an exposed fixed part that takes no HBM bandwidth
(latency and setup not hidden behind the stream, extra bursts, L2 hits at the L2 rate) and
the stream of bytes that go to or from HBM at the path's sustained rate, which the engine
shares with the streams of the other cores running at the same moment.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from sage.npu.hardware import HardwareSpec, PathSpec

_CACHE_LIMIT = 65536


class PathCost:
    """Rates of one path in bytes per cycle: ``peak`` and ``k_bytes`` of the rising fit,
    ``rate`` the sustained (plateau) rate its bytes stream at."""

    __slots__ = ("latency", "k_bytes", "peak", "rate")

    def __init__(self, spec: HardwareSpec, path: PathSpec):
        self.peak = spec.bytes_per_cycle(path.peak_gbps)
        self.rate = spec.bytes_per_cycle(path.plateau_gbps) if path.plateau_gbps else self.peak
        self.latency = path.latency_cycles
        self.k_bytes = path.k_bytes

    def cycles(self, nbytes: float) -> float:
        """One copy of `nbytes` alone on this path."""
        return self.latency + max((self.k_bytes + nbytes) / self.peak, nbytes / self.rate)


class Transfer(NamedTuple):
    """One copy: alone it takes ``fixed + hbm_bytes / rate`` cycles."""

    fixed: float      # cycles that use no HBM bandwidth
    hbm_bytes: int    # bytes streamed to or from HBM (L2 misses; every write)
    rate: float       # bytes per cycle of that stream when nothing else uses HBM


class CostModel:
    def __init__(self, spec: HardwareSpec):
        self.spec = spec
        self.repeat_bytes = spec.vector.repeat_bytes
        self.vector = {name: (c.b16, c.b32) for name, c in spec.vector.costs.items()}
        t = spec.transfer
        self.paths = {
            "GM->UB": PathCost(spec, t.gm_to_ub),
            "UB->GM": PathCost(spec, t.ub_to_gm),
            "GM->L1": PathCost(spec, t.gm_to_l1),
            "L1->L0A": PathCost(spec, t.l1_to_l0),
            "L1->L0B": PathCost(spec, t.l1_to_l0),
            "L0C->GM": PathCost(spec, t.l0c_to_gm),
            "UB->UB": PathCost(spec, t.ub_to_ub),
            "UB->L1": PathCost(spec, t.ub_to_l1),
        }
        e = t.effects
        self.gm_line = e.gm_line_bytes
        self.unaligned_penalty = e.unaligned_gm_penalty
        self.burst_overhead = e.burst_overhead_cycles
        self.l2_speedup = e.l2_hit_speedup
        self.issue = spec.scalar.issue_cycles
        self.local_access = spec.scalar.local_access_cycles
        self.gm_access = spec.scalar.gm_access_cycles
        self.flag = spec.scalar.flag_cycles
        self.cross_flag = spec.scalar.cross_core_flag_cycles
        self.sync_all = spec.scalar.sync_all_cycles
        c = spec.cube
        self.fractal = c.fractal
        self.mad_fixed = c.fixed_cycles
        self.fp32_factor = c.fp32_factor
        self._transfers: dict[tuple, Transfer] = {}  # a kernel copies the same few sizes over and over

    def repeats(self, count: int, itemsize: int) -> int:
        return -(-count * itemsize // self.repeat_bytes)

    def vector_cost(self, key: str, itemsize: int, repeats: int) -> tuple[float, float]:
        """(head, body) of one vector instruction: head + slope × repeats."""
        head, slope = self.vector[key][1 if itemsize >= 4 else 0]
        return head, slope * repeats

    def transfer(self, path: str, nbytes: int, bursts: int = 1, *, unaligned: bool = False,
                 hit_bytes: int = 0) -> Transfer:
        """One copy of `nbytes` in `bursts`; `hit_bytes` of them are read from L2."""
        key = (path, nbytes, bursts, unaligned, hit_bytes)
        cost = self._transfers.get(key)
        if cost is None:
            if len(self._transfers) > _CACHE_LIMIT:
                self._transfers.clear()
            cost = self._transfers[key] = self._transfer(path, nbytes, bursts, unaligned, hit_bytes)
        return cost

    def _transfer(self, path: str, nbytes: int, bursts: int, unaligned: bool, hit_bytes: int) -> Transfer:
        pc = self.paths[path]
        penalty = self.unaligned_penalty if unaligned else 1.0
        eff = nbytes * penalty                      # an unaligned read moves more lines
        stream = eff / pc.rate
        exposed = pc.latency + max(0.0, (pc.k_bytes + eff) / pc.peak - stream) + (bursts - 1) * self.burst_overhead
        rate = pc.rate / penalty
        hit = min(hit_bytes, nbytes)
        return Transfer(exposed + hit / rate / self.l2_speedup, nbytes - hit, rate)

    def mad_cycles(self, m: int, n: int, k: int, in_itemsize: int) -> float:
        """ceil(m/16) · ceil(k/(32/sizeof(in))) · ceil(n/16) × (2 for fp32 inputs) + the fixed cost."""
        f = self.fractal
        k0 = 32 // in_itemsize
        cycles = math.ceil(m / f) * math.ceil(k / k0) * math.ceil(n / f)
        if in_itemsize == 4:
            cycles *= self.fp32_factor
        return cycles + self.mad_fixed

    def fastest_macs_per_cycle(self) -> float:
        """The most MACs per cycle `mad_cycles` grants one AIC: a fractal step of the narrowest
        input it takes (1 byte: 16 x 32 x 16 = 8192, twice the fp16 peak), the fixed cost aside.
        Computed from `mad_cycles` itself, so the physical floor (sage/npu/bound.py) follows it."""
        f = self.fractal
        return max(f * f * (32 // size) / (self.mad_cycles(f, f, 32 // size, size) - self.mad_fixed)
                   for size in (1, 2, 4))
