"""Cost formulas of the simulator, with their numbers taken from a HardwareSpec."""

from __future__ import annotations

import math

from sage.npu.hardware import HardwareSpec, PathSpec

_CACHE_LIMIT = 65536


class PathCost:
    """cycles = latency + (K + bytes) / peak, i.e. bytes / bw(bytes) with bw(B) = peak·B/(K+B)."""

    __slots__ = ("latency", "k_cycles", "bytes_per_cycle")

    def __init__(self, spec: HardwareSpec, path: PathSpec):
        self.bytes_per_cycle = spec.bytes_per_cycle(path.peak_gbps)
        self.latency = path.latency_cycles
        self.k_cycles = path.k_bytes / self.bytes_per_cycle


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
        c = spec.cube
        self.fractal = c.fractal
        self.mad_fixed = c.fixed_cycles
        self.fp32_factor = c.fp32_factor
        self._transfers: dict[tuple, tuple[float, float]] = {}  # a kernel copies the same few sizes over and over

    def repeats(self, count: int, itemsize: int) -> int:
        return -(-count * itemsize // self.repeat_bytes)

    def vector_cost(self, key: str, itemsize: int, repeats: int) -> tuple[float, float]:
        """(head, body) of one vector instruction: head + slope × repeats."""
        head, slope = self.vector[key][1 if itemsize >= 4 else 0]
        return head, slope * repeats

    def transfer(self, path: str, nbytes: int, bursts: int = 1, *, unaligned: bool = False,
                 hit_bytes: int = 0) -> tuple[float, float]:
        """(fixed, stretchable) cycles of one copy.

        The stretchable part is the bandwidth time of bytes that go to HBM (L2 misses); it
        grows when concurrently running cores ask for more than the HBM bandwidth.
        """
        key = (path, nbytes, bursts, unaligned, hit_bytes)
        cost = self._transfers.get(key)
        if cost is None:
            if len(self._transfers) > _CACHE_LIMIT:
                self._transfers.clear()
            cost = self._transfers[key] = self._transfer(path, nbytes, bursts, unaligned, hit_bytes)
        return cost

    def _transfer(self, path: str, nbytes: int, bursts: int, unaligned: bool, hit_bytes: int) -> tuple[float, float]:
        pc = self.paths[path]
        bw_cycles = nbytes / pc.bytes_per_cycle
        if unaligned:
            bw_cycles *= self.unaligned_penalty
        fixed = pc.latency + pc.k_cycles + (bursts - 1) * self.burst_overhead
        if hit_bytes and nbytes:
            hit_frac = hit_bytes / nbytes
            fixed += bw_cycles * hit_frac / self.l2_speedup
            bw_cycles *= 1.0 - hit_frac
        return fixed, bw_cycles

    def mad_cycles(self, m: int, n: int, k: int, in_itemsize: int) -> float:
        """ceil(m/16) · ceil(k/(32/sizeof(in))) · ceil(n/16) × (2 for fp32 inputs) + 6."""
        f = self.fractal
        k0 = 32 // in_itemsize
        cycles = math.ceil(m / f) * math.ceil(k / k0) * math.ceil(n / f)
        if in_itemsize == 4:
            cycles *= self.fp32_factor
        return cycles + self.mad_fixed
