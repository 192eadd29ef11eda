"""The event-driven schedule of one launch: blocks on cores in waves, HBM shared moment by moment.

Placement: blockDim counts logical blocks, 1..65535, and more blocks than cores run in waves
(CANN SetBlockDim, https://www.hiascend.com/document/detail/en/canncommercial/850/API/basicdataapi/atlasopapi_07_00236.html).
A block of an AIV-only or AIC-only launch needs one core of its type; a block of a MIX_AIC_1_2
launch one AI Core group (its AIC and its two AIVs, which run the block's three streams), and
such a launch may not have more blocks than groups (same page). Blocks start in order, each
on the earliest-free core (lowest id on a tie). Every stream is run by a `StreamRunner`
(``engine_stream``); GM streams share HBM through ``engine_hbm``; cross-core flags and
SyncAll go through ``engine_sync``.

Identical blocks are timed once only where that is exact: blocks whose costed streams are
the same objects and that start at the same moment on the same kind of core behave the same
at every moment (they issue the same records at the same times, and every one of their HBM
flows has identical peers active over exactly the same intervals, which max-min sharing
treats alike), so one runner stands for all of them and counts that many times in the HBM
sharing and in the cross-core barriers. ``group=False`` times every block on its own (the
tests check both give the same times).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

from sage.npu.errors import KernelTimeout, LaunchError
from sage.npu.results import PIPES
from sage.npu.sim.engine_hbm import HbmShare
from sage.npu.sim.engine_stream import N_PIPES, CostedStream, StreamRunner
from sage.npu.sim.engine_sync import SyncHub
from sage.npu.sim.opcodes import AIC, AIV, CROSS_WAIT, SYNC_ALL
from sage.npu.sim.runtrace import LaunchTrace

MIX_GROUP = "MIX_AIC_1_2"


@dataclass
class Placement:
    stream: int          # index of the stream in the launch's blocks
    block: int           # its logical block
    core_type: str
    core: int            # core id among the cores of its type
    start: float
    finish: float


@dataclass
class LaunchTiming:
    name: str
    kernel_type: str
    block_dim: int
    cores_by_type: dict[str, int]        # physical cores used, per core type
    kernel_cycles: float                 # first block start to last block end, without launch overhead
    overhead_cycles: float
    busy: list[float]                    # per pipe, summed over all cores
    busy_by_type: dict[str, list[float]]  # the same, per core type
    hbm_bytes: int
    placements: list[Placement]
    timelines: int                       # runners simulated (identical blocks started together share one)
    timings: list[tuple[list[float], list[float]]] | None = None  # per stream (starts, ends) when kept

    @property
    def cycles(self) -> float:
        return self.kernel_cycles + self.overhead_cycles

    @property
    def cores_used(self) -> int:
        return sum(self.cores_by_type.values())


class Instance:
    """Blocks with identical streams started together on the cores `units`: one runner per stream role."""

    def __init__(self, members: list[tuple[int, int]], start: float):
        self.blocks = [b for b, _ in members]
        self.units = [u for _, u in members]
        self.start = start
        self.finish = -1.0
        self.runners: list[StreamRunner] = []
        self.aic: StreamRunner | None = None
        self.aiv: list[StreamRunner] = []
        self.left = 0


class Engine:
    def __init__(self, launch: LaunchTrace, streams: list[CostedStream], *, aiv_cores: int, aic_cores: int,
                 issue: float, hbm_bytes_per_cycle: float, overhead_cycles: float, keep: bool = False,
                 group: bool = True):
        self.launch, self.streams, self.keep, self.group = launch, streams, keep, group
        self.issue, self.overhead = issue, overhead_cycles
        by_block: dict[int, list[int]] = {}
        for s, bt in enumerate(launch.blocks):
            by_block.setdefault(bt.block, []).append(s)
        self.block_streams = {b: sorted(ss, key=lambda s: self._role(s)) for b, ss in sorted(by_block.items())}
        self.grouped = launch.kernel_type == MIX_GROUP or any(len(ss) > 1 for ss in by_block.values())
        types = {bt.core_type for bt in launch.blocks}
        self.capacity = (min(aic_cores, aiv_cores // 2) if self.grouped
                         else aic_cores if types == {AIC} else aiv_cores)
        self.pool = list(range(self.capacity))
        self.pending = deque(self.block_streams)
        self.keys = {b: tuple((self._role(s), id(streams[s])) for s in ss) for b, ss in self.block_streams.items()}
        self.hbm = HbmShare(hbm_bytes_per_cycle)
        self.sync = SyncHub(self, {AIV: sum(bt.core_type == AIV for bt in launch.blocks),
                                   AIC: sum(bt.core_type == AIC for bt in launch.blocks)})
        self.events: list[tuple] = []
        self.work: list[StreamRunner] = []
        self.instances: list[Instance] = []
        self.now = 0.0
        self.place_due = False
        self._seq = 0
        self._check_waves()

    def _role(self, s: int) -> tuple[str, int]:
        bt = self.launch.blocks[s]
        return bt.core_type, bt.sub

    def _check_waves(self) -> None:
        blocks = len(self.block_streams)
        if blocks <= self.capacity:
            return
        for s, stream in enumerate(self.streams):
            if stream.sync_all >= 0:
                raise LaunchError(
                    f"SyncAll in a launch of {blocks} blocks on {self.capacity} cores: the blocks of a later wave "
                    "cannot start until the first wave ends, and the first wave waits for them in SyncAll, so the "
                    "chip hangs (CANN SyncAll: blockDim must not exceed the cores running the kernel)",
                    self.launch.blocks[s].records[stream.sync_all][12])
        if self.grouped:
            raise LaunchError(
                f"a {self.launch.kernel_type} launch of {blocks} blocks: each block takes an AI Core group (1 AIC + 2 "
                f"AIV) and blockDim may not exceed the {self.capacity} groups (CANN SetBlockDim, separated "
                "architecture)")

    # -- what runners and the sync hub call ----------------------------------------------------------
    def at(self, t: float, fn, *args) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, fn, args))

    def wake(self, runner: StreamRunner) -> None:
        if not runner.awake:
            runner.awake = True
            self.work.append(runner)

    def start_flow(self, runner: StreamRunner, i: int, entry: float, nbytes: float, rate: float) -> None:
        if entry <= self.now:
            self.hbm.add((runner, i), nbytes, rate, runner.weight)
        else:
            self.at(entry, self.hbm.add, (runner, i), nbytes, rate, runner.weight)

    def stream_done(self, runner: StreamRunner) -> None:
        inst = runner.inst
        inst.left -= 1
        if inst.left == 0:
            inst.finish = max(r.finish for r in inst.runners)
            self.at(inst.finish, self._release, inst)

    # -- the schedule ------------------------------------------------------------------------------
    def run(self) -> LaunchTiming:
        self._place()
        self._loop()
        unfinished = [inst for inst in self.instances if inst.finish < 0]
        if unfinished or self.pending:
            raise self._deadlock(unfinished)
        return self._result()

    def _loop(self) -> None:
        events, hbm = self.events, self.hbm
        self._drain()
        while events or hbm.active:
            t_event = events[0][0] if events else math.inf
            t_flow = hbm.next_finish()
            if t_flow <= t_event:
                self.now = max(self.now, t_flow)
                hbm.advance(self.now)
                for runner, i in hbm.pop_finished():
                    runner.flow_done(i, self.now)
                    self.wake(runner)
            else:
                self.now = max(self.now, t_event)
                hbm.advance(self.now)
                while events and events[0][0] <= self.now:
                    _, _, fn, args = heapq.heappop(events)
                    fn(*args)
                if self.place_due:
                    self.place_due = False
                    self._place()
            self._drain()

    def _drain(self) -> None:
        work = self.work
        while work:
            runner = work.pop()
            runner.awake = False
            runner.advance()

    def _place(self) -> None:
        """Start waiting blocks on free cores, in block order, lowest core id first."""
        taken = []
        while self.pending and self.pool:
            taken.append((self.pending.popleft(), heapq.heappop(self.pool)))
        groups: dict = {}
        for b, unit in taken:
            groups.setdefault(self.keys[b] if self.group else b, []).append((b, unit))
        for members in groups.values():
            inst = Instance(members, self.now)
            self.instances.append(inst)
            for s in self.block_streams[members[0][0]]:
                role = self._role(s)
                runner = StreamRunner(self, self.streams[s], self.now, inst, role, self.keep)
                inst.runners.append(runner)
                if role[0] == AIC:
                    inst.aic = runner
                else:
                    inst.aiv.append(runner)
                self.sync.add(runner)
            inst.left = len(inst.runners)
            for runner in inst.runners:
                self.wake(runner)

    def _release(self, inst: Instance) -> None:
        for unit in inst.units:
            heapq.heappush(self.pool, unit)
        self.place_due = True   # placed once every release of this moment is in: lowest core id first

    # -- results -------------------------------------------------------------------------------------
    def _core(self, unit: int, role: tuple[str, int]) -> int:
        if not self.grouped or role[0] == AIC:
            return unit
        return 2 * unit + role[1]

    def _result(self) -> LaunchTiming:
        by_type = {AIV: [0.0] * N_PIPES, AIC: [0.0] * N_PIPES}
        placements, timings = [], [None] * len(self.streams) if self.keep else None
        cores: dict[str, set[int]] = {AIV: set(), AIC: set()}
        for inst in self.instances:
            for runner in inst.runners:
                busy = by_type[runner.core_type]
                for p in range(N_PIPES):
                    busy[p] += runner.busy[p] * runner.weight
            for b, unit in zip(inst.blocks, inst.units):
                for s, runner in zip(self.block_streams[b], inst.runners):
                    role = (runner.core_type, runner.sub)
                    core = self._core(unit, role)
                    cores[role[0]].add(core)
                    placements.append(Placement(s, b, role[0], core, inst.start, runner.finish))
                    if timings is not None:
                        timings[s] = (runner.start, runner.end)
        placements.sort(key=lambda p: p.stream)
        kernel = max((inst.finish for inst in self.instances), default=0.0)
        hbm = sum(self.streams[p.stream].hbm_bytes for p in placements)
        busy = [a + c for a, c in zip(by_type[AIV], by_type[AIC])]
        return LaunchTiming(self.launch.name, self.launch.kernel_type, len(self.block_streams),
                            {k: len(v) for k, v in cores.items() if v}, kernel, self.overhead, busy,
                            {k: v for k, v in by_type.items() if cores[k]}, hbm, placements,
                            sum(len(inst.runners) for inst in self.instances), timings)

    def _deadlock(self, unfinished: list[Instance]) -> KernelTimeout:
        """The record a stuck core waits on, with its kernel line."""
        stuck = [(inst.blocks[0], runner, i) for inst in unfinished for runner in inst.runners
                 for i in runner.blocked_records()]
        waits = [x for x in stuck if x[1].recs[x[2]][2] in (CROSS_WAIT, SYNC_ALL)] or stuck
        if not waits:
            return KernelTimeout(f"{len(self.pending)} blocks never got a core: the cores are held by blocks that "
                                 "wait forever (deadlock)")
        block, runner, i = min(waits, key=lambda x: (x[0], x[2]))
        rec = runner.recs[i]
        s = next(s for s in self.block_streams[block] if self._role(s) == (runner.core_type, runner.sub))
        line = self.launch.blocks[s].records[i][12]
        where = f"{runner.core_type}{'' if not self.grouped else f' {runner.sub}'} of block {block}"
        if rec[2] == CROSS_WAIT:
            what = (f"CrossCoreWaitFlag(flag {rec[8]}, mode {rec[9]}) on {where} waits forever: no "
                    "CrossCoreSetFlag raises its counter")
        elif rec[2] == SYNC_ALL:
            aiv_only = rec[8] == 1
            what = (f"SyncAll on {where} waits forever: {self.sync.arrived(runner, i, aiv_only)} of "
                    f"{self.sync.taking_part(aiv_only)} cores reach it")
        else:
            what = f"{PIPES[rec[0]]} record {i} on {where} waits for work that never ends"
        if self.pending:
            what += f"; {len(self.pending)} blocks of a later wave never got a core"
        return KernelTimeout(what + " (deadlock: the kernel would hang on the chip)", line)
