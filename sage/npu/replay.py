"""Timing a kernel run from its instruction records: the replay.

The functional run (usually in the sandboxed child) records what each instruction is and
how big (``sim/opcodes.py``); here, in the trusted process, every record gets its cost
from the preset's tables, GM transfers go through the L2 model in program order (launch
by launch, block by block, as the run issued them), and each launch is scheduled on the
cores by the event-driven engine (``sim/engine.py``). Nothing the kernel's process reports
about time is used: only the work it asked for.

Costing is cheap because blocks repeat each other: a costed record is a tuple interned per
distinct input record (GM copies per distinct size, alignment and L2 outcome), so the
blocks of a launch share their costed tuples, identical costed streams are one object, and
the engine times identical blocks that start together once.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from sage.npu.hardware import HardwareSpec
from sage.npu.results import PIPES
from sage.npu.sim.costs import CostModel
from sage.npu.sim.engine import Engine, LaunchTiming
from sage.npu.sim.engine_stream import CostedStream
from sage.npu.sim.l2 import L2Cache
from sage.npu.sim.opcodes import (CROSS_SET, CROSS_WAIT, FLAG, GM_COPY, GM_READ_PATHS, LOCAL_COPY, MAD, MARK, PATHS,
                                  SCALAR_GM, SCALAR_LOCAL, SYNC_ALL, VEC, vector_keys)
from sage.npu.sim.runtrace import LaunchTrace, RunTrace
from sage.npu.sim.session import gm_addresses

S = PIPES.index("S")


@dataclass
class Replay:
    """The timed run: per launch its timing and the costed stream of each of its blocks."""

    spec: HardwareSpec
    launches: list[LaunchTiming] = field(default_factory=list)
    blocks: list[list[CostedStream]] = field(default_factory=list)   # per launch, per stream
    traces: list[LaunchTrace] = field(default_factory=list)          # the records, kept for a Chrome trace

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
        self.vector = [self.costs.vector[k] for k in vector_keys(spec)]
        self.local: dict[tuple, tuple] = {}    # input record -> costed record (every record but GM copies)
        self.gm: dict[tuple, tuple] = {}       # GM copy after L2 and alignment -> costed record
        self.streams: dict[int, list[CostedStream]] = {}   # this launch's streams, by a hash of their records' ids

    def stream(self, records: list[tuple]) -> CostedStream:
        local = self.local
        out = list(map(local.get, records))              # the bulk: records seen before, at C speed
        for i in [i for i, c in enumerate(out) if c is None]:
            r = records[i]                               # GM copies, and records not seen before
            if r[2] == GM_COPY:
                out[i] = self._gm_copy(r)
            else:   # the same record may come twice in a block not seen before
                c = local.get(r)
                out[i] = c if c is not None else local.setdefault(r, self._local(r))
        # Costed tuples are interned, so equal streams have equal ids: the key is a hash of the ids
        # (no per-record key is kept: a tuple of ids once took 40 bytes per record) and streams of
        # equal hash are compared record by record (by identity first, so equal ones compare fast)
        same = self.streams.setdefault(hash(array("Q", map(id, out)).tobytes()), [])
        stream = next((s for s in same if s.recs == out), None)
        if stream is None:
            stream = CostedStream(out)
            same.append(stream)
        return stream

    def _gm_copy(self, r: tuple) -> tuple:
        pipe, kind, op, a, b, c, d, gbuf, glo, ghi, deps, _name, _line = r
        if c > 1 and b % c == 0 and glo + (c - 1) * d + b // c <= ghi:
            hit = self.l2.access_rows(gbuf, glo, b // c, d, c)      # bursts of b / c bytes, d apart
        else:
            hit = self.l2.access(gbuf, glo, ghi)
        if a in GM_READ_PATHS:
            line = self.costs.gm_line
            hit = min(hit, b)
            unaligned = (self.addrs[gbuf] + glo) % line != 0 or (c > 1 and d % line != 0)
        else:
            unaligned, hit = False, 0  # writes drain to HBM through L2 whatever was resident
        key = (pipe, kind, a, b, c, unaligned, hit, deps)
        costed = self.gm.get(key)
        if costed is None:
            t = self.costs.transfer(PATHS[a], b, c, unaligned=unaligned, hit_bytes=hit)
            if pipe == S or not t.hbm_bytes:   # only an MTE/FIX pipe streams; the scalar waits it out
                costed = (pipe, kind, op, 0.0, t.fixed + t.hbm_bytes / t.rate, 0, 0.0, deps, a, b, b)
            else:
                costed = (pipe, kind, op, 0.0, t.fixed, t.hbm_bytes, t.rate, deps, a, b, b)
            self.gm[key] = costed
        return costed

    def _local(self, r: tuple) -> tuple:
        pipe, kind, op, a, b, c, d, _gbuf, _glo, _ghi, deps, _name, _line = r
        costs = self.costs
        head = work = 0.0
        if op == VEC:
            head, slope = self.vector[a][1 if b >= 4 else 0]
            work = slope * c
            body = work + head * d
        elif op == LOCAL_COPY:
            t = costs.transfer(PATHS[a], b, c)
            body, work = t.fixed + t.hbm_bytes / t.rate, b
        elif op == MAD:
            body, work = costs.mad_cycles(a, b, c, d), a * b * c
        elif op == SCALAR_LOCAL:
            body = costs.local_access
        elif op == SCALAR_GM:
            body = costs.gm_access
        elif op == MARK:
            body = 0.0
        elif op == FLAG:
            body = costs.flag
        elif op == SYNC_ALL:
            body = costs.sync_all
        else:
            assert op in (CROSS_SET, CROSS_WAIT)
            body = costs.cross_flag
        return (pipe, kind, op, head, body, 0, 0.0, deps, a, b, work)


def replay(trace: RunTrace, spec: HardwareSpec, *, keep: bool = False, group: bool = True) -> Replay:
    """Cost and schedule every launch of `trace` on `spec` (`keep`: per-record times, for a trace).

    Raises the NpuError of a launch that cannot run (a deadlock is a KernelTimeout with the
    waiting record's line). `group=False` times identical blocks one by one (for tests).
    """
    coster = _Coster(spec, trace)
    result = Replay(spec)
    chip = spec.chip
    for launch in trace.launches:
        # Identical streams are one object within a launch (the engine times them once); a launch's
        # costed records are dropped once it is timed (their totals stay), so the replay holds one
        # launch's costed records at a time, not the whole run's (sim/caps.py)
        coster.streams = {}
        streams = [coster.stream(b.records) for b in launch.blocks]
        engine = Engine(launch, streams, aiv_cores=chip.aiv_cores, aic_cores=chip.aic_cores,
                        issue=coster.costs.issue, hbm_bytes_per_cycle=spec.hbm_bytes_per_cycle,
                        overhead_cycles=spec.launch_overhead_cycles, keep=keep, group=group)
        result.launches.append(engine.run())
        del engine
        if not keep:
            for stream in streams:
                stream.recs = []
        result.blocks.append(streams)
        if keep:
            result.traces.append(launch)
    return result
