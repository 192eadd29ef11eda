"""Timing of one block from its instruction records (one pass, O(records)).

The scalar unit issues in program order, ``issue`` cycles per instruction; an instruction
starts at max(its pipe is free, it was issued, its dependencies finished). Scalar-pipe
records (GetValue, SetValue, flags on S) run on the issue timeline itself, so they stall
everything issued after them. A vector instruction pays its head only when its pipe was
idle: queued behind a busy pipe, heads pipeline. ``stretch`` multiplies the HBM part of
GM transfers when concurrently running cores ask for more than the HBM bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.npu.sim.core import BARRIER, S
from sage.npu.sim.opcodes import NORMAL


@dataclass
class BlockTiming:
    cycles: float
    busy: list[float]           # per pipe
    starts: list[float] | None  # per record, when a trace is wanted
    ends: list[float] | None


def schedule(records: list[tuple], issue: float, stretch: float = 1.0, keep: bool = False) -> BlockTiming:
    ends = [0.0] * len(records)
    starts = [0.0] * len(records) if keep else None
    free = [0.0] * 7
    drained = [True] * 7
    busy = [0.0] * 7
    t = 0.0  # the scalar unit's issue time
    for i, (pipe, head, body, gm, deps, _name, kind) in enumerate(records):
        ready = 0.0
        if deps is not None:
            for d in deps:
                e = ends[d]
                if e > ready:
                    ready = e
        dur = body + gm * stretch if gm else body
        if pipe == S:
            st = t if t > ready else ready
            dur += head
            t = st + dur
            if kind == NORMAL:
                busy[0] += dur
        else:
            if kind != BARRIER:  # a barrier is a marker on its pipe, not an issued instruction
                t += issue
                busy[0] += issue
            if t > ready:
                ready = t
            f = free[pipe]
            if f > ready and not drained[pipe]:
                st = f  # queued behind a busy pipe: its head is hidden
            else:
                st = f if f > ready else ready
                dur += head
            # A barrier or a flag waits for the pipe's earlier work: the next instruction finds it
            # empty and pays its head. Busy cycles count instructions only, as msprof's ratios do.
            drained[pipe] = kind != NORMAL
            free[pipe] = st + dur
            if kind == NORMAL:
                busy[pipe] += dur
        ends[i] = st + dur
        if keep:
            starts[i] = st
    total = max(max(free), t)
    return BlockTiming(total, busy, starts, ends if keep else None)
