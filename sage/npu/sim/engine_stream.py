"""One core running its block's costed records inside the launch's event-driven schedule.

The rules are those of a single AI Core (docs/dsl.md, "Costs"): the scalar unit issues in program
order, ``issue`` cycles per instruction; an instruction starts at max(its pipe is free, it
was issued, its dependencies ended). Scalar-pipe records run on the issue timeline itself,
so they stall everything issued after them. A pipe's head (a vector instruction's start-up
cost) is paid only when the pipe was idle or drained by a barrier: queued behind a busy
pipe, heads pipeline.

What is new against a one-block schedule: a GM copy's end is not known when it starts, it
depends on what the other cores stream at the same time (``engine_hbm``), and a
cross-core wait's start depends on other cores (``engine_sync``). So records are placed in
dataflow order: the issue cursor walks the program; a record whose inputs are not known
yet waits in its pipe's queue (later records of that pipe queue behind it, as on the
chip), and the issue cursor goes on, unless the record is on the scalar pipe, which stalls
issue. Each record is placed once, when its inputs are known, and never starts before the
engine's present, so the HBM schedule is causal. Total work is O(records).

A costed record is ``(pipe, kind, op, head, body, hbm, rate, deps, a, b, work)``: ``body``
the cycles apart from the head (for a GM copy: its fixed part), ``hbm`` the bytes it
streams to or from HBM at up to ``rate`` bytes per cycle (0 for anything else), ``a, b``
the record's own fields (flag id and mode of a cross-core record), ``work`` what the
profile counts (vector slope cycles, MACs, bytes copied).
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sage.npu.results import PIPES
from sage.npu.sim.opcodes import BARRIER, CROSS_SET, GM_COPY, LOCAL_COPY, MAD, NORMAL, PATHS, SYNC_ALL, VEC

if TYPE_CHECKING:
    from sage.npu.sim.engine import Engine, Instance

S = PIPES.index("S")
N_PIPES = len(PIPES)


@dataclass(eq=False)
class CostedStream:
    """One core's costed records and what the profile counts in them. Streams with the same
    costed records are one object (the replay interns them), so blocks can be grouped by identity."""

    recs: list[tuple]
    instructions: int = 0
    bytes: dict[str, int] = field(default_factory=dict)
    hbm_bytes: int = 0
    macs: int = 0
    vector_cycles: float = 0.0
    sync_all: int = -1            # index of the first SyncAll record, -1 if none

    def __post_init__(self) -> None:
        nbytes: dict[str, int] = {}
        for i, rec in enumerate(self.recs):
            op = rec[2]
            if rec[1] == NORMAL:
                self.instructions += 1
            if op == VEC:
                self.vector_cycles += rec[10]
            elif op == GM_COPY or op == LOCAL_COPY:
                path = PATHS[rec[8]]
                nbytes[path] = nbytes.get(path, 0) + rec[10]
                self.hbm_bytes += rec[5]
            elif op == MAD:
                self.macs += rec[10]
            elif op == SYNC_ALL and self.sync_all < 0:
                self.sync_all = i
        self.bytes = nbytes


class StreamRunner:
    """The timing state of one stream (one core, or `weight` identical cores started together)."""

    def __init__(self, engine: Engine, stream: CostedStream, t0: float, inst: Instance, role: tuple[str, int],
                 keep: bool):
        self.engine, self.stream, self.inst = engine, stream, inst
        self.core_type, self.sub = role
        self.weight = len(inst.blocks)
        self.recs = stream.recs
        n = len(self.recs)
        # packed doubles: a list held a float object per record (32 bytes, 8 here)
        self.end = array("d", [-1.0]) * n      # -1: not known yet
        self.start = array("d", [0.0]) * n if keep else None
        self.flow_start: dict[int, float] = {}
        self.free = [t0] * N_PIPES
        self.drained = [True] * N_PIPES
        self.busy = [0.0] * N_PIPES
        self.t = t0                             # the scalar unit's issue time
        self.i = 0                              # the issue cursor
        # Per pipe, the records queued behind it and their issue times, packed (a hostile stream can
        # keep nearly all its records queued: a deque of ints and a dict of times took ~130 bytes
        # each, 16 here), read from `head` on (advance() is never re-entered, so it may cache it)
        self.queued = [array("q") for _ in range(N_PIPES)]
        self.issued_at = [array("d") for _ in range(N_PIPES)]
        self.head = [0] * N_PIPES
        self.waiting = 0
        self.inflight = [False] * N_PIPES       # the pipe's last record is a GM stream not yet ended
        self.flows = 0
        self.finish = -1.0
        self.counters: dict[int, deque] = {}    # flag id -> delivered increments (engine_sync)
        self.sync_alls: dict[int, int] = {}     # SyncAll record -> its ordinal on this stream
        self.awake = False

    # -- the engine calls these ----------------------------------------------------------------
    def advance(self) -> None:
        """Place every record whose inputs are known; report to the engine when all are placed."""
        queued, inflight, recs, issued_at, head = self.queued, self.inflight, self.recs, self.issued_at, self.head
        moved = True
        while moved:
            moved = self._issue()
            if not self.waiting:
                break
            for p in range(N_PIPES):
                q, h = queued[p], head[p]
                if h == len(q):
                    continue
                times = issued_at[p]
                while h < len(q) and not inflight[p]:
                    i = q[h]
                    if not self._place(i, recs[i], times[h]):
                        break
                    h += 1
                    self.waiting -= 1
                    moved = True
                if h == len(q):   # drained: start the arrays again
                    del q[:], times[:]
                    h = 0
                head[p] = h
        if self.finish < 0 and self.i == len(recs) and not self.flows and not self.waiting:
            self.finish = max(self.t, max(self.free))
            self.engine.stream_done(self)

    def flow_done(self, i: int, now: float) -> None:
        pipe = self.recs[i][0]
        self.end[i] = now
        self.free[pipe] = now
        self.busy[pipe] += now - self.flow_start.pop(i)
        self.inflight[pipe] = False
        self.flows -= 1

    def blocked_records(self) -> list[int]:
        """The records this stream is stuck on (for a deadlock report)."""
        heads = [q[h] for q, h in zip(self.queued, self.head) if h < len(q)]
        if self.i < len(self.recs):
            heads.append(self.i)
        return sorted(heads)

    # -- placing records -----------------------------------------------------------------------
    def _issue(self) -> bool:
        recs, n, issue = self.recs, len(self.recs), self.engine.issue
        queued, inflight, head = self.queued, self.inflight, self.head
        i0 = i = self.i
        while i < n:
            rec = recs[i]
            p = rec[0]
            if p == S:
                if not self._place_scalar(i, rec):
                    break
            else:
                if rec[1] != BARRIER:  # a barrier is a marker on its pipe, not an issued instruction
                    self.t += issue
                    self.busy[S] += issue
                if inflight[p] or head[p] < len(queued[p]) or not self._place(i, rec, self.t):
                    queued[p].append(i)
                    self.issued_at[p].append(self.t)
                    self.waiting += 1
            i += 1
        self.i = i
        return i != i0

    def _ready(self, i: int, rec: tuple, ready: float, arrival: float) -> float:
        """When record i, issued at `ready`, may start: after its dependencies and, for a cross-core
        wait or SyncAll arriving at `arrival`, the other cores; -1 while one of those is not known."""
        deps = rec[7]
        if deps is not None:
            end = self.end
            for d in deps:
                e = end[d]
                if e < 0:
                    return -1.0
                if e > ready:
                    ready = e
        if rec[2] > CROSS_SET:  # a wait or SyncAll: other cores decide when it may start
            return self.engine.sync.gate(self, i, rec, max(ready, arrival))
        return ready

    def _place(self, i: int, rec: tuple, issued: float) -> bool:
        pipe, kind, op, head, body, hbm, rate, _, a, b, _ = rec
        f = self.free[pipe]
        ready = self._ready(i, rec, issued, f)
        if ready < 0:
            return False
        if f > ready and not self.drained[pipe]:
            st, dur = f, body              # queued behind a busy pipe: its head is hidden
        else:
            st, dur = (f if f > ready else ready), body + head
        # A barrier or a flag waits for the pipe's earlier work: the next instruction finds the
        # pipe empty and pays its head. Busy cycles count instructions only, as msprof's ratios do.
        self.drained[pipe] = kind != NORMAL
        if self.start is not None:
            self.start[i] = st
        if hbm:
            self.inflight[pipe] = True
            self.flows += 1
            self.flow_start[i] = st
            self.engine.start_flow(self, i, st + dur, hbm, rate)
            return True
        e = st + dur
        self.end[i] = e
        self.free[pipe] = e
        if kind == NORMAL:
            self.busy[pipe] += dur
        if op == CROSS_SET:
            self.engine.sync.on_set(self, a, b, e)
        return True

    def _place_scalar(self, i: int, rec: tuple) -> bool:
        _, kind, op, head, body, _, _, _, a, b, _ = rec
        ready = self._ready(i, rec, self.t, self.t)
        if ready < 0:
            return False
        if self.start is not None:
            self.start[i] = ready
        dur = body + head
        e = self.t = ready + dur
        self.end[i] = e
        if kind == NORMAL:
            self.busy[S] += dur
        if op == CROSS_SET:
            self.engine.sync.on_set(self, a, b, e)
        return True
