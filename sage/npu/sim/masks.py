"""Masked lanes: an `if` whose lanes disagree runs both arms in the group, each under a lane mask.

A lane group (sage.npu.sim.lanes) that reaches ``if x > limit:`` with `x` read from each
lane's data splits, and a kernel that branches on every row's data then parts into lone
blocks within a few rows (benchmarks/kernels/row_clip.py: the whole launch block by block).
Most such branches pick one vector instruction or another (``Mins(y, x, 1.0, n)`` or
``Adds(y, x, 0.0, n)``): the same shape of work, on the same bytes, through the same pipe.
Such an `if` is run here without leaving the group:

- the kernel compiler (sage.npu.masked_if) marks the `if` statements whose two arms are
  only calls (``Name(args)`` or ``obj.attr(args)`` with call-free arguments) and runs them as
  ``for arm in _arms_(test): if arm: ... else: ...``;
- where `test` differs per lane, `arms` yields True with the mask of the lanes that take the
  first arm, then False with the others'. Inside an arm only the vector instructions marked
  `maskable` may run (anything else is a `Divergence` on `test`, the split of old): their
  numpy work runs on every lane, the bytes they write in the lanes outside the mask are saved
  first and put back when the arm ends, and the record they would make is held back;
- when both arms are done, their held records must have the same shape, record by record:
  pipe, opcode class, kind, dependencies and the very byte ranges read and written. Then each
  is recorded once for the group, race-checked as each lane alone would check it (the sync
  state and byte ranges are those of every lane), with what differs (the instruction, its
  sizes, its name, its line) as a per-lane value that `CoreState.lane_records` spells out
  lane by lane. Otherwise the lanes diverge on `test` as before.

So every lane gets exactly the records, memory and sync state it gets alone; a branch whose
arms do different kinds of work still splits the group. Held records are checked only at
the merge, after both arms' numpy work: an error there (a race) ends the lanes like any
error in a group, and the launch runs block by block, where the error comes at its place.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from sage.npu.sim import core as core_mod
from sage.npu.sim import lanes as lanes_mod
from sage.npu.sim.lanes import Divergence, LaneValue

MASKABLE: set = set()     # DSL functions that may run under a mask (their whole effect: one record, dst bytes)
CALLS: set = set()        # their kernel-facing wrappers (sage.npu.ascendc.handles.api)

_STRUCTURE = (0, 2, 7, 8, 9, 10, 11)   # intent fields every lane must share: pipe, op, gm, reads, writes, deps, kind
_PER_LANE = (1, 3, 4, 5, 6, 12)        # those that may differ: name, a, b, c, d, line


def maskable(fn: Callable) -> Callable:
    """Mark a lane-ready DSL function as safe under a mask: it makes exactly one record through
    `CoreState.instr` and writes only the bytes that record lists as written, lane by lane."""
    MASKABLE.add(fn)
    return fn


class Mask:
    """One arm in progress: the lanes outside it, their saved bytes, the records held back."""

    __slots__ = ("test", "outside", "saved", "intents")

    def __init__(self, test: LaneValue, outside: np.ndarray):
        self.test, self.outside = test, outside
        self.saved: list[tuple[np.ndarray, int, int, np.ndarray]] = []
        self.intents: list[tuple] = []

    def diverge(self) -> Divergence:
        """What `if test:` raises without masks: the group splits on the test's values."""
        return Divergence(self.test.v, self.test.d)

    def hold(self, intent: tuple) -> int:
        """CoreState.instr under this mask: save the bytes the instruction is about to write in the
        lanes outside the arm, hold its record back. (Its index is not known yet: -1.)"""
        for slot, lo, hi in intent[9]:
            rows = slot.space.data
            a, b = slot.addr + lo, slot.addr + hi
            self.saved.append((rows, a, b, rows[self.outside, a:b]))   # (fancy indexing: a copy)
        self.intents.append(intent)
        return -1

    def restore(self) -> None:
        """Put back what the arm wrote in the lanes outside it, the newest write first."""
        for rows, a, b, old in reversed(self.saved):
            rows[self.outside, a:b] = old
        self.saved = []


def callee(fn: Any) -> Any:
    """The function a call statement of a masked-ready `if` arm calls: under a mask only a
    maskable DSL call (a kernel's own function could change Python state for every lane)."""
    core = core_mod._current
    if core is not None and core.mask is not None and not (fn.__class__ is _FUNCTION and fn in CALLS):
        raise core.mask.diverge()
    return fn


_FUNCTION = type(callee)


def arms(test: Any) -> Any:
    """The arms of ``if test:`` to run, in order: (True,) or (False,) as Python decides, or both,
    each under its lane mask, where the lanes of the running group disagree on `test`."""
    if test.__class__ is not LaneValue:
        return _TRUE if test else _FALSE
    core = core_mod._current
    if core is None or core.lanes is None or core.mask is not None or test.g is not lanes_mod._group:
        return _TRUE if test else _FALSE    # (as `if test:`: a Divergence, or refused as foreign)
    truth = tuple(bool(v) for v in test.v)  # each lane's own `if`
    if all(truth) or not any(truth):
        return _TRUE if truth[0] else _FALSE
    return _both(core, test, truth)


_TRUE, _FALSE = (True,), (False,)


def _both(core: Any, test: LaneValue, truth: tuple) -> Any:
    taken = np.array(truth)
    held = []
    for arm in (True, False):
        mask = core.mask = Mask(test, np.flatnonzero(taken != arm))
        yield arm
        mask.restore()
        held.append(mask.intents)
    core.mask = None
    _merge(core, test, truth, *held)


def _merge(core: Any, test: LaneValue, truth: tuple, first: list, second: list) -> None:
    """Record each pair of held records once, lane by lane from the arm the lane took."""
    if len(first) != len(second) or any(x[i] is not y[i] and x[i] != y[i]
                                        for x, y in zip(first, second) for i in _STRUCTURE):
        raise Divergence(test.v, test.d)
    for x, y in zip(first, second):
        fields = list(x)
        for i in _PER_LANE:
            if x[i] is not y[i]:  # (lanes() keeps one value where every lane's has one type and value)
                fields[i] = lanes_mod.lanes(_lane(x[i] if t else y[i], k) for k, t in enumerate(truth))
        pipe, name, op, a, b, c, d, gm, reads, writes, deps, kind, line = fields
        idx = core.instr(pipe, name, op, a, b, c, d, gm, reads, writes, deps, kind, line=line)
        if any(fields[i].__class__ is LaneValue for i in _PER_LANE):
            core.masked_records.append(idx)


def _lane(x: Any, k: int) -> Any:
    return x.v[k] if x.__class__ is LaneValue else x
