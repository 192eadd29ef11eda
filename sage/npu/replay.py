"""Timing a kernel run from its instruction records: the replay.

The functional run (usually in the sandboxed child) records what each instruction is and
how big (``sim/opcodes.py``); here, in the trusted process, every record gets its cost
from the preset's tables, GM transfers go through the L2 model in program order (launch
by launch, block by block, as the run issued them), and each launch is scheduled on the
cores (``sim/schedule.py``, ``sim/multicore.py``). Nothing the kernel's process reports
about time is used: only the work it asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sage.npu.hardware import HardwareSpec
from sage.npu.sim.costs import CostModel
from sage.npu.sim.l2 import L2Cache
from sage.npu.sim.multicore import BlockRun, LaunchTiming, time_launch
from sage.npu.sim.opcodes import (CROSS_SET, CROSS_WAIT, FLAG, GM_COPY, GM_READ_PATHS, LOCAL_COPY, MAD, MARK, NORMAL,
                                  PATHS, SCALAR_GM, SCALAR_LOCAL, SYNC_ALL, VEC, vector_keys)

_SYNC_OPS = frozenset({FLAG, CROSS_SET, CROSS_WAIT, SYNC_ALL})
from sage.npu.sim.runtrace import RunTrace
from sage.npu.sim.session import gm_addresses


@dataclass
class Replay:
    """The timed run: per launch its timing and its blocks' costed records."""

    spec: HardwareSpec
    launches: list[LaunchTiming] = field(default_factory=list)
    blocks: list[list[BlockRun]] = field(default_factory=list)   # per launch; records kept only with keep=True

    @property
    def cycles(self) -> float:
        return sum(lt.cycles for lt in self.launches)

    def all_blocks(self):
        for launch in self.blocks:
            yield from launch


class _Coster:
    """Costs the records of one run, in order, against one L2 state."""

    def __init__(self, spec: HardwareSpec, trace: RunTrace):
        self.costs = CostModel(spec)
        self.l2 = L2Cache(spec.chip.l2_bytes)
        self.addrs = gm_addresses([n for n, _ in trace.allocations])
        keys = vector_keys(spec)
        self.vector = [self.costs.vector[k] for k in keys]
        self.bpc = {p: self.costs.paths[p].bytes_per_cycle for p in PATHS}

    def block(self, records: list[tuple], uses_cube: bool) -> BlockRun:
        costs, l2, addrs, vector = self.costs, self.l2, self.addrs, self.vector
        line = costs.gm_line
        out = []
        nbytes: dict[str, int] = {}
        hbm = macs = instructions = 0
        vec_cycles = 0.0
        for (pipe, kind, op, a, b, c, d, gbuf, glo, ghi, deps, name, _line) in records:
            head = gm = 0.0
            if op == VEC:
                head, slope = vector[a][1 if b >= 4 else 0]
                body = slope * c
                vec_cycles += body
                body += head * d
            elif op == GM_COPY:
                path = PATHS[a]
                hit = l2.access(gbuf, glo, ghi)
                if a in GM_READ_PATHS:
                    hit = min(hit, b)
                    unaligned = (addrs[gbuf] + glo) % line != 0 or (c > 1 and d % line != 0)
                else:
                    unaligned, hit = False, 0  # writes drain to HBM through L2 whatever was resident
                body, gm = costs.transfer(path, b, c, unaligned=unaligned, hit_bytes=hit)
                hbm += b - hit
                nbytes[path] = nbytes.get(path, 0) + b
            elif op == LOCAL_COPY:
                path = PATHS[a]
                fixed, _ = costs.transfer(path, b, c)
                body = fixed + b / self.bpc[path]
                nbytes[path] = nbytes.get(path, 0) + b
            elif op == MAD:
                body = costs.mad_cycles(a, b, c, d)
                macs += a * b * c
            elif op == SCALAR_LOCAL:
                body = costs.local_access
            elif op == SCALAR_GM:
                body = costs.gm_access
            elif op in _SYNC_OPS:
                body = costs.flag
            else:
                assert op == MARK
                body = 0.0
            if kind == NORMAL:
                instructions += 1
            out.append((pipe, head, body, gm, deps, name, kind))
        return BlockRun(out, nbytes, hbm, macs, vec_cycles, instructions, uses_cube)


def replay(trace: RunTrace, spec: HardwareSpec, *, keep: bool = False) -> Replay:
    """Cost and schedule every launch of `trace` on `spec` (`keep`: per-record times, for a trace)."""
    coster = _Coster(spec, trace)
    result = Replay(spec)
    chip = spec.chip
    for launch in trace.launches:
        blocks = [coster.block(b.records, b.uses_cube) for b in launch.blocks]
        # AIC and AIV streams run on their own cores, side by side (cross-core waits are not timed here)
        timing = time_launch(launch.name, blocks, (chip.aiv_cores, chip.aic_cores), coster.costs.issue,
                             spec.hbm_bytes_per_cycle, spec.launch_overhead_cycles, keep=keep)
        if not keep:
            for b in blocks:
                b.records = []  # timed: keep the counters only
        result.launches.append(timing)
        result.blocks.append(blocks)
    return result
