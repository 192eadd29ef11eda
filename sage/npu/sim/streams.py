"""One launch, run functionally: every core's stream of the kernel, and the syncs between them.

A 910B launch runs its kernel on split cores: AIV (vector) and AIC (cube). A vector-only or
cube-only kernel runs one stream per block; a ``KERNEL_TYPE_MIX_AIC_1_2`` kernel runs, per
block, one AIC stream and two AIV streams (sub-blocks 0 and 1) that exchange data through
GM and synchronise with ``CrossCoreSetFlag``/``CrossCoreWaitFlag``; ``SyncAll`` synchronises
every core of a launch. Streams run as greenlets in one thread: each runs until it ends or
waits for a flag no one has raised yet, then the next runnable one goes on, so a kernel's
data flows exactly as the syncs order it. When every unfinished stream waits, the launch
would hang on the chip: a KernelTimeout naming the waiting line.

The kernel type is the kernel's own declaration, ``KERNEL_TASK_TYPE_DEFAULT(...)`` as the
first thing its first stream does (as in Ascend C); without one it is inferred from what
the first stream touches (UB and the vector unit: AIV_ONLY; L1/L0 and the cube: AIC_ONLY).

Cross-core semantics (CANN CrossCoreSetFlag, Atlas A2; /work notes cite the page): each
flag id is a counter per core, +1 on a set that reaches the core, -1 on a wait (which
blocks while it is 0). Mode 0: the k-th set of every core of one type reaches all of them;
mode 1: the k-th set of both AIVs of a group reaches both; mode 2: an AIC's set reaches its
two AIVs, the k-th set of both AIVs reaches their AIC.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import greenlet
import numpy as np

from sage.npu.errors import KernelTimeout, LaunchError
from sage.npu.sim import core as core_mod
from sage.npu.sim.core import merge
from sage.npu.sim.gmhazards import GmHazards
from sage.npu.sim import lanes
from sage.npu.sim.lanes import Divergence
from sage.npu.sim.opcodes import AIC, AIV
from sage.npu.sim.runtrace import BlockTrace, LaunchTrace

MAX_FLAG_ID = 10            # CANN: flagId 0..10 on Atlas A2
MAX_PENDING_SETS = 16       # CANN: a flag id's counter may be set at most 16 times
STREAM_CORE = {"AIV_ONLY": AIV, "AIC_ONLY": AIC, "MIX_AIV_1_0": AIV, "MIX_AIC_1_0": AIC, "MIX_AIC_1_2": AIC}


@dataclass
class Stream:
    block: int
    sub: int
    core: core_mod.CoreState
    blocks: tuple[int, ...] = ()          # the blocks it runs: (block,), or a lane group's
    glet: greenlet.greenlet | None = None
    done: bool = False
    waiting: str | None = None            # what it waits for, in words (None: runnable)
    counters: dict[int, int] = field(default_factory=dict)
    inbox: dict[int, list[dict]] = field(default_factory=dict)      # flag -> what each pending set tells
    sets: dict[tuple[int, int], int] = field(default_factory=dict)   # (flag, mode) -> sets so far
    told: dict[tuple[int, int, int], dict] = field(default_factory=dict)  # (flag, mode, k) -> its payload
    syncs: int = 0                        # SyncAll calls so far


class LaunchRun:
    """Runs one launch's streams; `run()` returns the launch's trace."""

    def __init__(self, session, fn, name: str, block_dim: int, args: tuple, kwargs: dict, on_block_end,
                 partition: list[tuple[int, ...]] | None = None):
        """`partition`: the blocks split into lane groups (sage.npu.sim.lanes), each group of two or
        more run as one stream; None runs every block alone."""
        self.session, self.fn, self.args, self.kwargs = session, fn, args, kwargs
        self.partition = partition
        self.on_block_end = on_block_end
        self.trace = LaunchTrace(name, block_dim)
        self.block_dim = block_dim
        self.declared: str | None = None
        self.streams: list[Stream] = []
        self.expanded = False
        self._made = 0
        self.scheduler: greenlet.greenlet | None = None
        self.syncall_arrivals: dict[int, int] = {}    # k-th SyncAll -> streams arrived
        self.syncall_told: dict[int, dict] = {}       # k-th SyncAll -> what all arrivals knew
        self.hazards = GmHazards()

    # -- running -----------------------------------------------------------------------------
    def run(self) -> LaunchTrace:
        try:
            return self._run()
        finally:
            self._release()

    def _release(self) -> None:
        """Break the launch's reference cycles (each stream's greenlet closes over the stream, each
        core points back here): its GM-hazard index, tens of thousands of objects, is then freed
        as soon as the launch ends instead of by a later cyclic collection, which cost the next
        run 0.1-0.25 s (the 4096 x 4096 softmax: 0.26 s functional when collected at once)."""
        for stream in self.streams:
            stream.glet = None
            stream.core.launch = None
        self.streams = []
        self.hazards = None

    def _run(self) -> LaunchTrace:
        self.scheduler = greenlet.getcurrent()
        # Blocks run in a random order (Session.block_order), the first one included: cores run
        # concurrently on the chip, so no legal kernel depends on the order, and a kernel that
        # hands results from block to block in Python values gets them wrong.
        rng = self.session.block_order
        if self.partition is None:
            first = self._stream(rng.randrange(self.block_dim), 0, None)
        else:  # a lane group first: every group runs before any lone block (Session._run_launch relies on it)
            grouped = [g for g in self.partition if len(g) > 1]
            first = self._group(grouped[rng.randrange(len(grouped))], None)
        self.streams.append(first)
        # The first stream runs until the kernel type is known (its declaration, or the first
        # core-specific thing it touches) or it ends; then every other stream exists.
        self._resume(first)
        rest = self._rest()
        self.streams += rest
        self.expanded = True
        rng.shuffle(rest)
        rest.sort(key=lambda s: s.core.lanes is None)  # (a stable sort: lane groups first, each part shuffled)
        order = [first, *rest]
        while True:
            runnable = [s for s in order if not s.done and s.waiting is None]
            if not runnable:
                break
            for stream in runnable:
                if not stream.done and stream.waiting is None:
                    self._resume(stream)
        stuck = [s for s in self.streams if not s.done]
        if stuck:
            s = stuck[0]
            raise KernelTimeout(f"deadlock: every unfinished core waits ({s.core.core_type} block {s.block}"
                                f"{f' sub-block {s.sub}' if s.core.core_type == AIV else ''} waits for "
                                f"{s.waiting}); on the chip this launch would hang", line=s.core.last_line)
        blocks = []
        for s in self.streams:  # (a lane group gives one block per lane)
            core = s.core
            for i, b in enumerate(core.lanes or (s.block,)):
                records = core.records if core.lanes is None else core.lane_records(i)
                blocks.append(BlockTrace(records, core.core_type == AIC, core.core_type or AIV, b, s.sub))
        self.trace.blocks = sorted(blocks, key=lambda t: (t.block, t.core_type != AIC, t.sub))
        self.trace.kernel_type = self.kernel_type
        return self.trace

    def _stream(self, block: int, sub: int, core_type: str | None, lanes: tuple[int, ...] | None = None) -> Stream:
        """The stream of one core: block `block` alone, or the lane group of blocks `lanes` (one
        stream id per lane, for GM hazards)."""
        core = core_mod.CoreState(self.session, block, self.block_dim, core_type=core_type, sub=sub, launch=self,
                                  lanes=lanes)
        n = 1 if lanes is None else len(lanes)
        core.stream_id = self._made
        core.lane_ids = tuple(range(self._made, self._made + n)) if lanes is not None else ()
        self._made += n
        stream = Stream(block, sub, core, lanes if lanes is not None else (block,))
        stream.glet = greenlet.greenlet(lambda: self._body(stream), parent=self.scheduler)
        return stream

    def _group(self, blocks: tuple[int, ...], core_type: str | None, sub: int = 0) -> Stream:
        """One stream for a partition group: a lone block as ever, or a lane group."""
        return self._stream(blocks[0], sub, core_type, blocks if len(blocks) > 1 else None)

    def _body(self, stream: Stream) -> None:
        # A greenlet starts with a fresh context: numpy's error state is not inherited.
        try:
            with np.errstate(all="ignore"):
                self.fn(*self.args, **self.kwargs)
        finally:
            if self.on_block_end is not None:
                self.on_block_end(stream.core)
            stream.core.release_memory()
        stream.done = True

    def _resume(self, stream: Stream) -> None:
        core_mod.set_current(stream.core)
        lanes.enter(stream.core if stream.core.lanes is not None else None)
        try:
            stream.glet.switch()
        except Divergence as split:
            split.group = stream.core.lanes  # which group to split (Session._run_launch)
            raise
        finally:
            core_mod.set_current(None)
            lanes.enter(None)

    def _rest(self) -> list[Stream]:
        """Every stream after the first, once the first has fixed the kernel type."""
        kind = self.kernel_type
        first = self.streams[0]
        if first.core.core_type is None:  # it touched nothing core-specific: a vector kernel
            first.core.core_type = AIV
        rest = []
        if self.partition is not None:
            # Every core type runs the same groups: a block's AIC and AIVs are lane i of groups
            # with the same blocks (what cross-core flags within a block rely on: CoreState.payload)
            others = [g for g in self.partition if g != (first.core.lanes or (first.block,))]
            if kind != "MIX_AIC_1_2":
                return [self._group(g, first.core.core_type) for g in others]
            return ([self._group(g, AIC) for g in others] +
                    [self._group(g, AIV, sub) for g in self.partition for sub in (0, 1)])
        for b in range(self.block_dim):
            if kind == "MIX_AIC_1_2":
                if b != first.block:
                    rest.append(self._stream(b, 0, AIC))
                rest += [self._stream(b, 0, AIV), self._stream(b, 1, AIV)]
            elif b != first.block:
                rest.append(self._stream(b, 0, first.core.core_type))
        return rest

    @property
    def kernel_type(self) -> str:
        if self.declared is not None:
            return self.declared
        return "AIC_ONLY" if self.streams and self.streams[0].core.core_type == AIC else "AIV_ONLY"

    # -- what kernel code calls ----------------------------------------------------------------
    def declare(self, core, kernel_type: str) -> None:
        stream = self._of(core)
        if stream is self.streams[0] and self.declared is None:
            if core.records or core.core_type is not None:
                raise LaunchError("KERNEL_TASK_TYPE_DEFAULT must come first in the kernel, before any instruction")
            self._check_block_dim(kernel_type)
            self.declared = kernel_type
            core.core_type = STREAM_CORE[kernel_type]
            self.scheduler.switch()  # let the other streams be made before this one goes on
        elif kernel_type != self.declared:
            raise LaunchError(f"KERNEL_TASK_TYPE_DEFAULT({kernel_type}) differs from the launch's type {self.declared}")

    def _check_block_dim(self, kernel_type: str) -> None:
        chip = self.session.spec.chip
        groups = min(chip.aic_cores, chip.aiv_cores // 2)
        if kernel_type == "MIX_AIC_1_2" and self.block_dim > groups:
            raise LaunchError(f"a MIX_AIC_1_2 launch runs one AIC + two AIV per block: block_dim may be at most "
                              f"{groups} on {self.session.spec.name} (the physical groups), got {self.block_dim}")

    def cross_set(self, core, flag: int, mode: int, pipe: int) -> None:
        stream = self._of(core)
        self._check_flag(flag, mode, core)
        k = stream.sets.get((flag, mode), 0) + 1
        stream.sets[(flag, mode)] = k
        stream.told[(flag, mode, k)] = core.payload_to_all(pipe) if mode == 0 else core.payload(pipe)
        reached = self._reached(stream, flag, mode, k)
        told: dict = {}
        for s in self._senders(stream, flag, mode, k) if reached else ():
            told = merge(told, s.told[(flag, mode, k)])
        for target in reached:
            n = target.counters.get(flag, 0) + 1
            if n > MAX_PENDING_SETS:
                raise LaunchError(f"CrossCoreSetFlag: flag {flag} was set {n} times with no wait in between; "
                                  f"a flag id's counter holds at most {MAX_PENDING_SETS}")
            target.counters[flag] = n
            target.inbox.setdefault(flag, []).append(told)
            if target.waiting == f"flag {flag}":
                target.waiting = None

    def cross_wait(self, core, flag: int) -> None:
        stream = self._of(core)
        if not 0 <= flag <= MAX_FLAG_ID:
            raise LaunchError(f"CrossCoreWaitFlag: flag id must be 0..{MAX_FLAG_ID}, got {flag}")
        while stream.counters.get(flag, 0) == 0:
            stream.waiting = f"flag {flag}"
            self.scheduler.switch()
        stream.counters[flag] -= 1
        core.learn(stream.inbox[flag].pop(0))

    def sync_all(self, core, aiv_only: bool) -> None:
        stream = self._of(core)
        if self.declared is None or self.declared in ("AIV_ONLY", "AIC_ONLY"):
            raise LaunchError("SyncAll needs a kernel declared KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0 or "
                              "KERNEL_TYPE_MIX_AIC_1_2 (KERNEL_TASK_TYPE_DEFAULT)")
        chip = self.session.spec.chip
        cores = chip.aiv_cores if self.declared == "MIX_AIV_1_0" else chip.aic_cores
        if self.block_dim > cores:
            raise LaunchError(f"SyncAll in a launch of {self.block_dim} blocks on {cores} cores: the blocks beyond "
                              "the first wave would never arrive, and the chip hangs (CANN: SyncAll needs "
                              "block_dim <= the cores that run it)")
        stream.syncs += 1
        k = stream.syncs
        members = [s for s in self.streams if not aiv_only or s.core.core_type == AIV]
        if aiv_only and core.core_type != AIV:
            raise LaunchError("SyncAll() (isAIVOnly) is for vector cores: use SyncAll(False) on a cube core")
        self.syncall_arrivals[k] = self.syncall_arrivals.get(k, 0) + 1
        self.syncall_told[k] = merge(self.syncall_told.get(k, {}), core.payload_to_all(core_mod.S))
        while self.syncall_arrivals[k] < len(members):
            stream.waiting = f"SyncAll #{k} ({self.syncall_arrivals[k]} of {len(members)} cores arrived)"
            self.scheduler.switch()
        stream.waiting = None
        for s in members:
            if s.waiting is not None and s.waiting.startswith(f"SyncAll #{k} "):
                s.waiting = None
        core.learn(self.syncall_told[k])

    def claimed(self, core) -> None:
        """`core` has just taken a core type by what it touched (an undeclared kernel)."""
        if not self.expanded and core is self.streams[0].core:
            self.scheduler.switch()

    # -- helpers -----------------------------------------------------------------------------
    def _of(self, core) -> Stream:
        for s in self.streams:
            if s.core is core:
                return s
        raise LaunchError("internal: a core outside its launch")

    def _check_flag(self, flag: int, mode: int, core) -> None:
        if not 0 <= flag <= MAX_FLAG_ID:
            raise LaunchError(f"CrossCoreSetFlag: flag id must be 0..{MAX_FLAG_ID}, got {flag}")
        if mode not in (0, 1, 2):
            raise LaunchError(f"CrossCoreSetFlag: modeId must be 0, 1 or 2, got {mode}")
        if mode in (1, 2) and self.kernel_type != "MIX_AIC_1_2":
            raise LaunchError(f"CrossCoreSetFlag mode {mode} syncs the cores of one AI Core group: it needs a "
                              "KERNEL_TYPE_MIX_AIC_1_2 kernel")
        if mode == 1 and core.core_type != AIV:
            raise LaunchError("CrossCoreSetFlag mode 1 syncs the two AIVs of a group: call it on the AIV side")

    def _senders(self, stream: Stream, flag: int, mode: int, k: int) -> list[Stream]:
        """The streams whose k-th (flag, mode) sets together made this delivery."""
        if mode == 2 and stream.core.core_type == AIC:
            return [stream]
        if mode == 0:
            return [s for s in self.streams if s.core.core_type == stream.core.core_type]
        return [s for s in self.streams if s.blocks == stream.blocks and s.core.core_type == AIV]

    def _reached(self, stream: Stream, flag: int, mode: int, k: int) -> list[Stream]:
        """The streams whose counter the k-th (flag, mode) set of `stream` completes, if it completes any."""
        if mode == 2 and stream.core.core_type == AIC:
            return [s for s in self.streams if s.blocks == stream.blocks and s.core.core_type == AIV]
        if mode == 0:
            group = [s for s in self.streams if s.core.core_type == stream.core.core_type]
        else:  # mode 1, or mode 2 from an AIV: both AIVs of the group must have set
            group = [s for s in self.streams if s.blocks == stream.blocks and s.core.core_type == AIV]
        if all(s.sets.get((flag, mode), 0) >= k for s in group):
            if mode == 2:
                return [s for s in self.streams if s.blocks == stream.blocks and s.core.core_type == AIC]
            return group
        return []
