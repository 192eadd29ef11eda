"""GlobalTensor (a typed window on GM) and LocalTensor (a typed window on a local buffer)."""

from __future__ import annotations

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import BoundsError, KernelRuntimeError, QueueError, RaceError
from sage.npu.sim import core as core_mod
from sage.npu.sim.core import S, Slot, current_core
from sage.npu.sim.lanes import LaneValue, lane_ready, lane_values, lanes, per_lane
from sage.npu.sim.opcodes import SCALAR_GM, SCALAR_LOCAL
from sage.npu.ascendc.host import GmHandle


def _index(i, what: str) -> int:
    if i.__class__ is int:  # the common case first (bool is a subclass, not this class)
        return i
    if i.__class__ is LaneValue:  # (a lane group: each lane's index checked as it would be alone)
        return lanes((_index(a, what) for a in lane_values(i)), i.d)
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise KernelRuntimeError(f"{what}: index must be an int, got {type(i).__name__}")
    return int(i)


@lane_ready
class GlobalTensor:
    """``GlobalTensor<T>``: ``SetGlobalBuffer(gm, offset, size)``; ``gt[i]`` is the view from element i."""

    __slots__ = ("_buf", "_off", "_size")
    API = ("SetGlobalBuffer", "__getitem__", "dtype", "GetSize", "GetValue", "SetValue")

    def __init__(self):
        self._buf = None
        self._off = 0
        self._size = 0

    @lane_ready
    def SetGlobalBuffer(self, gm, offset: int = 0, size: int | None = None) -> None:
        """Point at elements [offset, offset + size) of a GM tensor (size defaults to the rest)."""
        if isinstance(gm, GlobalTensor):
            buf, base, avail = gm._require(), gm._off, gm._size
        elif isinstance(gm, GmHandle):
            buf, base, avail = gm._buf, 0, gm._buf.data.size
        else:
            raise KernelRuntimeError(f"SetGlobalBuffer needs a GM tensor argument of the kernel, got {type(gm).__name__}")
        offset = _index(offset, "SetGlobalBuffer offset")
        if size is None:
            size = avail - offset
        size = _index(size, "SetGlobalBuffer size")
        if offset < 0 or size < 0 or offset > avail:
            raise BoundsError(f"SetGlobalBuffer(offset={offset}, size={size}) starts outside the GM tensor of {avail} elements")
        self._buf, self._off, self._size = buf, base + offset, size

    def _require(self):
        if self._buf is None:
            raise KernelRuntimeError("GlobalTensor used before SetGlobalBuffer")
        return self._buf

    @lane_ready
    def __getitem__(self, i) -> GlobalTensor:
        i = _index(i, "GlobalTensor[i]")
        if self._buf is None:
            self._require()
        if i < 0:
            raise BoundsError(f"GlobalTensor[{i}]: negative offset")
        view = GlobalTensor()
        view._buf, view._off, view._size = self._buf, self._off + i, self._size - i
        return view

    @property
    @lane_ready
    def dtype(self) -> np.dtype:
        return self._require().dtype

    @lane_ready
    def GetSize(self) -> int:
        return self._size

    def _check(self, start: int, count: int, what: str) -> None:
        buf = self._require()
        lo = self._off + start
        if start < 0 or count < 0 or lo + count > buf.data.size:
            raise BoundsError(
                f"{what}: elements [{lo}, {lo + count}) are outside the GM allocation of {buf.data.size} elements")

    def _gm_access(self, core, i: int, write: bool, name: str) -> None:
        isz = self._buf.dtype.itemsize
        core.gm_access(S, self._buf, (self._off + i) * isz, isz, isz, 1, write, name)

    def _gm_ref(self, i: int) -> tuple:
        isz = self._buf.dtype.itemsize
        lo = (self._off + i) * isz
        return (self._buf.id, lo, lo + isz)

    def GetValue(self, i: int):
        """A scalar read from GM (slow: a scalar-pipe GM access)."""
        core = current_core("GlobalTensor.GetValue")
        i = _index(i, "GetValue")
        self._check(i, 1, "GetValue")
        core.instr(S, "GetValue(GM)", SCALAR_GM, gm=self._gm_ref(i))
        self._gm_access(core, i, False, "GetValue(GM)")
        core.scalar_read_done()
        return self._buf.data[self._off + i].item()

    def SetValue(self, i: int, value) -> None:
        core = current_core("GlobalTensor.SetValue")
        i = _index(i, "SetValue")
        self._check(i, 1, "SetValue")
        core.instr(S, "SetValue(GM)", SCALAR_GM, gm=self._gm_ref(i))
        self._gm_access(core, i, True, "SetValue(GM)")
        self._buf.data[self._off + i] = value


@lane_ready
class LocalTensor:
    """``LocalTensor<T>``: a typed window on a local buffer; ``t[offset]`` is the view from element offset."""

    __slots__ = ("_slot", "_off", "_size", "_dtype", "_arr", "_gen")
    API = ("__getitem__", "addr", "dtype", "position", "GetSize", "ReinterpretCast", "GetValue", "SetValue")

    def __init__(self, slot: Slot, off: int, size: int, dtype: np.dtype, gen: int):
        self._slot, self._off, self._size, self._dtype, self._gen = slot, off, size, dtype, gen
        self._arr = slot.space.data[..., slot.addr + off:slot.addr + off + size * dtype.itemsize].view(dtype)

    @classmethod
    def whole(cls, slot: Slot, dtype: np.dtype, gen: int) -> LocalTensor:
        """The whole buffer as one tensor (its typed numpy view is cached on the slot)."""
        t = cls.__new__(cls)
        t._slot, t._off, t._size, t._dtype, t._gen = slot, 0, slot.nbytes // dtype.itemsize, dtype, gen
        arr = slot.views.get(dtype)
        if arr is None:
            arr = slot.views[dtype] = slot.space.data[..., slot.addr:slot.addr + t._size * dtype.itemsize].view(dtype)
        t._arr = arr
        return t

    # -- validity ---------------------------------------------------------------------------
    def _live(self, what: str) -> None:
        slot = self._slot
        if slot.alloc_gen != self._gen:
            raise QueueError(f"{what}: tensor used after FreeTensor (its buffer was freed and may be reused)")

    @property
    @lane_ready
    def addr(self) -> int:
        """Byte address inside its memory (UB, L1, ...)."""
        return self._slot.addr + self._off

    @property
    @lane_ready
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    @lane_ready
    def position(self) -> str:
        return self._slot.space.name

    def span(self, count: int) -> tuple:
        return (self._slot, self._off, self._off + count * self._dtype.itemsize)

    # -- Ascend C API -----------------------------------------------------------------------
    @lane_ready
    def __getitem__(self, offset) -> LocalTensor:
        offset = _index(offset, "LocalTensor[offset]")
        if not 0 <= offset <= self._size:
            raise BoundsError(f"LocalTensor[{offset}]: offset outside the tensor of {self._size} elements")
        self._live("LocalTensor[offset]")
        view = LocalTensor.__new__(LocalTensor)
        view._slot, view._off, view._size, view._dtype, view._gen = (
            self._slot, self._off + offset * self._dtype.itemsize, self._size - offset, self._dtype, self._gen)
        view._arr = self._arr[..., offset:]  # the same bytes as slicing the memory again, in one numpy call
        return view

    @lane_ready
    def GetSize(self) -> int:
        return self._size

    @lane_ready
    def ReinterpretCast(self, dtype) -> LocalTensor:
        """The same bytes seen as another element type."""
        dt = dtypes.as_dtype(dtype)
        self._live("ReinterpretCast")
        return LocalTensor(self._slot, self._off, self._size * self._dtype.itemsize // dt.itemsize, dt, self._gen)

    def _scalar(self, i, what: str, write: bool) -> int:
        core = core_mod._current
        if core is None:
            current_core(f"LocalTensor.{what}")  # raises the LaunchError
        i = _index(i, what)
        if not 0 <= i < self._size:
            raise BoundsError(f"{what}({i}): index outside the tensor of {self._size} elements")
        self._live(what)
        lo = self._off + i * self._dtype.itemsize
        rng = ((self._slot, lo, lo + self._dtype.itemsize),)
        try:
            core.instr(S, what, SCALAR_LOCAL, reads=() if write else rng, writes=rng if write else ())
        except RaceError as err:
            hint = (" A scalar read of data another pipe wrote needs SetFlag/WaitFlag(HardEvent.V_S) "
                    "(or MTE2_S) first." if not write else
                    " A scalar write before vector use needs SetFlag/WaitFlag(HardEvent.S_V).")
            raise RaceError(err.message + hint) from None
        if not write:
            core.scalar_read_done()
        return i

    @lane_ready
    def GetValue(self, i: int):
        """A scalar read (slow: a scalar-pipe load; needs V_S / MTE2_S sync after other pipes wrote)."""
        i = self._scalar(i, "GetValue", write=False)
        arr = self._arr
        if arr.ndim == 2:  # a lane group: each lane's own value
            return lanes(arr[:, i].tolist(), data=True)
        return arr[i].item()

    @lane_ready
    def SetValue(self, i: int, value) -> None:
        """A scalar write (slow: a scalar-pipe store; vector use afterwards needs S_V sync)."""
        i = self._scalar(i, "SetValue", write=True)
        arr = self._arr
        if arr.ndim == 2:  # each lane's value stored as a lone store would store it
            for lane, v in enumerate(per_lane(value, arr.shape[0])):
                arr[lane, i] = v
            return
        arr[i] = value

    def __repr__(self) -> str:
        return f"LocalTensor({self._dtype.name}[{self._size}] in {self._slot.label})"
