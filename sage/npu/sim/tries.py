"""A launch try that may be thrown away leaves nothing behind: GM and Python state as before it.

A launch runs first in lane groups (sage.npu.sim.lanes); a try that diverges, meets a call
lanes cannot run, or fails is run again with the groups split or block by block. What is
judged (outputs), replayed (records) and reported (time) must come from one complete
execution, so nothing of a thrown-away try may reach the next one:

- **GM**: every GM write made while such a try runs first saves the bytes it overwrites
  (`GmUndo`); before the launch runs again they are put back, newest first, so the retry
  starts from the GM the launch started with. A kernel that computed its whole output in
  the first try and then forced a retry would otherwise be judged on that output while
  only the retry's (cheaper) records are timed.
- **Python state**: a try may not change a Python object that existed before it (a
  module-level list, a class attribute, a list passed as a kernel argument, a default
  argument...): `preexisting` collects those objects' ids when the try starts and the
  restricted language's write guards refuse a change to one with `NotLaneable`, before it
  happens, so the launch runs block by block instead. Otherwise a try could leave a mark
  ("I ran before") or data it read for free, and the retry would act on it.

Objects the kernel reaches that could change in ways no guard sees (an iterator, a bound
method of a list kept in a variable) make `preexisting` give up (None): such a launch runs
block by block from the start, where no try is ever thrown away.
"""

from __future__ import annotations

import enum
import types
from typing import Any, Iterable

import numpy as np

from sage.npu.sim.lanes import LaneValue, NotLaneable

MAX_OBJECTS = 200_000   # a kernel's reachable Python state is a few hundred objects; past this, no lanes

_frozen: set[int] | None = None   # ids of the objects the running try may not change (None: any may change)

_DSL = "sage.npu."
_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), range, slice, LaneValue, np.generic, np.dtype,
              enum.Enum, BaseException, types.ModuleType, types.CodeType)


class GmUndo:
    """The GM bytes a try overwrote, each saved before its write."""

    __slots__ = ("saved", "seen", "spent", "whole")

    def __init__(self):
        self.saved: list[tuple[Any, int, np.ndarray]] = []
        # (allocation, lo, hi) already saved: a loop that writes one tile of GM over and over
        # keeps one copy of what was there first, not one per write (the oldest value is the one
        # put back), so a try's undo log stays the size of what it touched
        self.seen: set[tuple] = set()   # (allocation, lo, hi) or (allocation, lo, length, pitch, count)
        # Bytes saved per allocation, and the allocations saved whole: overlapping pieces (spans
        # cut differently each time, strided writes saved as spans when their bursts overlap)
        # can add up to many times an allocation (a transpose's tiles once saved 2 GB for a 32 MB
        # output); past its size, one copy of the whole allocation replaces further saves (at
        # its size exactly, not yet: a launch that writes its output once saves it once, in
        # pieces). It is put back before the older pieces (newest first), which then restore
        # what was overwritten before it was taken.
        self.spent: dict[int, int] = {}
        self.whole: set[int] = set()

    def save(self, buf, lo: int, hi: int) -> None:
        """Bytes [lo, hi) of GM allocation `buf` are about to be written."""
        lo, hi = max(lo, 0), min(hi, buf.nbytes)
        if hi <= lo or buf.id in self.whole or (buf.id, lo, hi) in self.seen:
            return
        spent = self.spent.get(buf.id, 0) + hi - lo
        if spent > buf.nbytes:
            self.whole.add(buf.id)
            self.saved.append((buf, 0, buf.data.view(np.uint8).reshape(-1).copy()))
            return
        self.spent[buf.id] = spent
        self.seen.add((buf.id, lo, hi))
        self.saved.append((buf, lo, buf.data.view(np.uint8)[lo:hi].copy()))

    def save_bursts(self, buf, lo: int, length: int, pitch: int, count: int) -> None:
        """`count` bursts of `length` bytes, `pitch` apart, from byte `lo` of `buf` are about to
        be written. Only the bursts are saved: a transposing copy writes a column stripe across
        thousands of rows, and saving the span from its first to its last byte copied a
        thousand times what it wrote (level1/8_sort along axis 0)."""
        end = lo + (count - 1) * pitch + length
        if count <= 1 or pitch <= length or lo < 0 or end > buf.nbytes:
            self.save(buf, lo, end if count > 1 else lo + length)
            return
        key = (buf.id, lo, length, pitch, count)
        if buf.id in self.whole or key in self.seen:
            return
        spent = self.spent.get(buf.id, 0) + count * length
        if spent > buf.nbytes:
            self.whole.add(buf.id)
            self.saved.append((buf, 0, buf.data.view(np.uint8).reshape(-1).copy()))
            return
        self.spent[buf.id] = spent
        self.seen.add(key)
        self.saved.append((buf, (lo, length, pitch, count), _bursts(buf, lo, length, pitch, count).copy()))

    def restore(self) -> None:
        """Put every saved byte back, the newest write first (so the oldest value wins)."""
        for buf, at, old in reversed(self.saved):
            if isinstance(at, tuple):
                _bursts(buf, *at)[...] = old
            else:
                buf.data.view(np.uint8)[at:at + old.size] = old
        self.saved, self.seen, self.spent, self.whole = [], set(), {}, set()


def _bursts(buf, lo: int, length: int, pitch: int, count: int) -> np.ndarray:
    """The (count, length) byte view of the bursts (in bounds: the caller checked)."""
    return np.lib.stride_tricks.as_strided(buf.data.view(np.uint8)[lo:], shape=(count, length), strides=(pitch, 1))


def frozen() -> set[int] | None:
    return _frozen


def freeze(ids: set[int] | None) -> None:
    """From now on (until freeze(None)) the objects `ids` may not change."""
    global _frozen
    _frozen = ids


def check_change(obj: Any) -> None:
    """`obj` is about to change: refused while a try that may be thrown away runs, if it existed before."""
    if _frozen is not None and id(obj) in _frozen:
        raise NotLaneable("a change to a Python object made before the launch")


def preexisting(roots: Iterable[Any], kernel_globals: dict, classes: set[type], writable: tuple[type, ...],
                handle_types: set[type]) -> set[int] | None:
    """The ids of the changeable objects reachable from `roots` through what kernel code can
    reach (containers, the kernel's own instances and classes, its functions' defaults and
    closures), or None when some reachable object could change unseen by the guards.

    `kernel_globals`: the kernel file's namespace (a function whose globals it is, is the
    kernel's own; the DSL's functions are not walked). `classes`: the classes the kernel
    defined. `writable`: the DSL parameter structs, whose fields a kernel may set.
    `handle_types`: the DSL's handle classes (immutable: sage.npu.ascendc.handles)."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        key = id(obj)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > MAX_OBJECTS:
            return None
        cls = obj.__class__
        if cls is list or cls is set:
            found.add(key)
            stack.extend(obj)
        elif cls is tuple or cls is frozenset:
            stack.extend(obj)
        elif cls is dict:
            found.add(key)
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif cls is types.FunctionType:
            if obj.__globals__ is kernel_globals:
                stack.extend(obj.__defaults__ or ())
                stack.extend((obj.__kwdefaults__ or {}).values())
                for cell in obj.__closure__ or ():
                    try:
                        stack.append(cell.cell_contents)
                    except ValueError:  # an empty cell (a name bound later): nothing to reach
                        pass
        elif cls in classes:
            found.add(key)
            stack.extend(obj.__dict__.values())
        elif isinstance(obj, type):
            if obj in classes:
                found.add(key)
                stack.extend(v for k, v in obj.__dict__.items() if not k.startswith("__"))
            # (any other class: the write guards refuse changes to it)
        elif cls is types.BuiltinFunctionType:
            if not isinstance(obj.__self__, (types.ModuleType, type(None))):
                return None  # a bound method of a list or dict (`add = xs.append`): it changes xs unseen
        elif cls is types.MethodType:
            stack.append(obj.__self__)
            stack.append(obj.__func__)
        elif cls in writable:
            found.add(key)
        elif cls in handle_types or cls is object or isinstance(obj, _IMMUTABLE) or cls.__module__.startswith(_DSL):
            pass  # (the DSL's own values change only through DSL calls: GM, undone, or a block's own state)
        else:  # an iterator, a bound method of a list, ...: state no write guard sees change
            return None
    return found

