"""TPipe, TQue and TBuf: local buffer allocation and the queue sync Ascend C does for you.

A queue's position fixes its producer and consumer pipes (VECIN: MTE2 -> V, VECOUT:
V -> MTE3, A1/B1: MTE2 -> MTE1, A2/B2: MTE1 -> M, CO1: M -> FIX), and its four calls are
the hardware flags Ascend C issues for you, per pipe:

- EnQue: SetFlag on the producer pipe (up once its earlier work is done);
- DeQue: WaitFlag on the consumer pipe: the whole pipe waits, not just this buffer's users;
- FreeTensor: SetFlag on the consumer pipe;
- AllocTensor of a freed buffer: WaitFlag on the producer pipe, so the refill waits for the
  consumer's earlier work.

A pipe other than the queue's two that touches a queue buffer is not ordered by the queue:
it needs its own SetFlag/WaitFlag, as on the chip (else a RaceError). With two buffers,
the copy of tile i+1 overlaps the compute of tile i.
"""

from __future__ import annotations

import enum
from collections import deque

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError, QueueError
from sage.npu.sim.core import FIX, M, MTE1, MTE2, MTE3, V, Slot, current_core
from sage.npu.sim.lanes import lane_ready
from sage.npu.ascendc.tensors import LocalTensor


class TPosition(enum.Enum):
    """Where a queue's buffers live: VECIN/VECOUT/VECCALC/CO2 in UB, A1/B1 in L1, A2 in L0A, B2 in L0B, CO1 in L0C."""

    GM = "GM"
    VECIN = "VECIN"
    VECOUT = "VECOUT"
    VECCALC = "VECCALC"
    A1 = "A1"
    B1 = "B1"
    C1 = "C1"
    A2 = "A2"
    B2 = "B2"
    CO1 = "CO1"
    CO2 = "CO2"


QuePosition = TPosition
_SPACE = {TPosition.VECIN: "UB", TPosition.VECOUT: "UB", TPosition.VECCALC: "UB", TPosition.CO2: "UB",
          TPosition.A1: "L1", TPosition.B1: "L1", TPosition.C1: "L1", TPosition.A2: "L0A",
          TPosition.B2: "L0B", TPosition.CO1: "L0C"}


# (producer pipe, consumer pipe) of a queue at each position
_PIPES = {TPosition.VECIN: (MTE2, V), TPosition.VECOUT: (V, MTE3), TPosition.VECCALC: (V, V),
          TPosition.A1: (MTE2, MTE1), TPosition.B1: (MTE2, MTE1), TPosition.C1: (MTE2, MTE1),
          TPosition.A2: (MTE1, M), TPosition.B2: (MTE1, M), TPosition.CO1: (M, FIX), TPosition.CO2: (FIX, MTE3)}


def _space_of(position) -> str:
    if position not in _SPACE:
        raise KernelRuntimeError(f"{position} is not a local buffer position")
    return _SPACE[position]


@lane_ready
class TQue:
    """``TQue<TPosition, depth>``: a queue of local buffers (created by ``TPipe.InitBuffer``)."""

    API = ("AllocTensor", "EnQue", "DeQue", "FreeTensor")

    def __init__(self, position: TPosition, depth: int = 1):
        if not isinstance(position, TPosition):
            raise KernelRuntimeError(f"TQue needs a TPosition, got {position!r}")
        self.position = position
        self.depth = depth
        self._producer, self._consumer = _PIPES.get(position, (V, V))
        self._slots: list[Slot] = []
        self._next = 0
        self._queue: deque = deque()
        self._name = f"TQue({position.name})"

    def _require_init(self, what: str) -> None:
        if not self._slots:
            raise QueueError(f"{what} on a {self._name} that has no buffers: call pipe.InitBuffer(que, num, bytes) first")

    # CANN's AllocTensor page (cannmirror/asc-devkit docs/api/context/AllocTensor.md) says nothing of
    # timing; here a queue is its flags, so the wait for the buffer is a WaitFlag issued in program order.
    @lane_ready
    def AllocTensor(self, dtype=dtypes.float16) -> LocalTensor:
        """Take a free buffer (round robin, in call order). Its wait for the last FreeTensor is put on the
        producer pipe where AllocTensor is called: all later work of that pipe waits too, so allocate late."""
        core = current_core("AllocTensor")
        slots = self._slots
        if not slots:
            self._require_init("AllocTensor")
        dt = dtypes.as_dtype(dtype)
        n = len(slots)
        start = self._next
        for k in range(n):
            slot = slots[(start + k) % n]
            if not slot.allocated:
                self._next = (start + k + 1) % n
                break
        else:
            raise QueueError(f"AllocTensor on a {self._name} whose {n} buffer(s) are all allocated: "
                             f"FreeTensor one first (or InitBuffer more buffers)")
        slot.allocated = True
        slot.alloc_gen += 1
        if slot.freed is not None:
            core.wait(self._producer, slot.freed, self._labels[0])
            slot.freed = None
        return LocalTensor.whole(slot, dt, slot.alloc_gen)

    @lane_ready
    def EnQue(self, tensor: LocalTensor) -> None:
        """Hand a tensor to the consumer (SetFlag on the pipe that wrote it)."""
        core = current_core("EnQue")
        self._own(tensor, "EnQue")
        slot = tensor._slot
        if slot.enqueued:
            raise QueueError(f"EnQue of a tensor that is already in the queue ({self._name})")
        if len(self._queue) >= max(self.depth, len(self._slots)):
            raise QueueError(f"EnQue beyond the depth of {self._name}: DeQue first")
        slot.enqueued = True
        self._queue.append((tensor, core.signal(self._producer, self._labels[1])))

    @lane_ready
    def DeQue(self, dtype=None) -> LocalTensor:
        """Take the oldest enqueued tensor; the next pipe to touch it waits for its producer."""
        core = current_core("DeQue")
        if not self._queue:
            raise QueueError(f"DeQue of an empty {self._name}: EnQue a tensor first")
        tensor, event = self._queue.popleft()
        slot = tensor._slot
        slot.enqueued = False
        core.wait(self._consumer, event, self._labels[2])
        if dtype is None or dtype is tensor._dtype or dtypes.as_dtype(dtype) == tensor._dtype:
            return tensor
        return LocalTensor.whole(slot, dtypes.as_dtype(dtype), tensor._gen)

    @lane_ready
    def FreeTensor(self, tensor: LocalTensor) -> None:
        """Give the buffer back: the consumer pipe raises a flag once its earlier work is done; the
        next AllocTensor of this buffer makes the producer pipe wait for it."""
        core = current_core("FreeTensor")
        self._own(tensor, "FreeTensor")
        slot = tensor._slot
        if slot.enqueued:
            raise QueueError(f"FreeTensor of a tensor still in {self._name}: DeQue it first")
        slot.freed = core.signal(self._consumer, self._labels[3])
        slot.allocated = False
        slot.alloc_gen += 1  # every handle on the old allocation is now dead

    def _own(self, tensor, what: str) -> None:
        if not isinstance(tensor, LocalTensor) or tensor._slot not in self._slots:
            raise QueueError(f"{what}: the tensor does not belong to this {self._name}")
        if tensor._gen != tensor._slot.alloc_gen or not tensor._slot.allocated:
            raise QueueError(f"{what}: tensor used after FreeTensor")

    def _init(self, core, num: int, nbytes: int) -> None:
        if self._slots:
            raise QueueError(f"InitBuffer called twice for the same {self._name}")
        space = core.space(_space_of(self.position), f"InitBuffer({self._name})")
        # the records' names, made once (every queue call would format one otherwise)
        self._labels = tuple(f"{verb}({self._name})" for verb in ("AllocTensor", "EnQue", "DeQue", "FreeTensor"))
        for i in range(num):
            addr = space.allocate(nbytes, f"InitBuffer({self._name}, {num}, {nbytes})")
            self._slots.append(Slot(space, addr, nbytes, f"{self._name} buffer {i} ({space.name} @{addr})"))


@lane_ready
class TQueBind(TQue):
    """``TQueBind<src, dst, depth>``: one queue whose producer is ``src``'s and consumer ``dst``'s, e.g.
    VECIN -> VECOUT for a pure copy (MTE2 -> MTE3) with no vector copy between two queues (CANN best
    practice "纯搬运类算子VECIN和VECOUT建议复用", atlas_ascendc_best_practices_10_0026). Buffers live in
    ``src``'s memory."""

    API = TQue.API

    def __init__(self, src: TPosition, dst: TPosition, depth: int = 1):
        super().__init__(src, depth)
        if not isinstance(dst, TPosition) or dst not in _PIPES:
            raise KernelRuntimeError(f"TQueBind needs two queue positions, got {src!r} and {dst!r}")
        self._consumer = _PIPES[dst][1]
        self._name = f"TQueBind({src.name}, {dst.name})"


@lane_ready
class TBuf:
    """``TBuf<TPosition>``: one scratch buffer with no queue sync: ``Get(dtype)`` returns it as a tensor."""

    API = ("Get",)

    def __init__(self, position: TPosition = TPosition.VECCALC):
        self.position = position
        self._slot: Slot | None = None

    @lane_ready
    def Get(self, dtype=dtypes.float16, count: int | None = None) -> LocalTensor:
        """The whole buffer (or its first ``count`` elements) as a tensor of ``dtype``."""
        current_core("TBuf.Get")
        if self._slot is None:
            raise QueueError("TBuf.Get before pipe.InitBuffer(tbuf, bytes)")
        dt = dtypes.as_dtype(dtype)
        t = LocalTensor.whole(self._slot, dt, self._slot.alloc_gen)
        if count is not None:
            if not 0 <= count <= t._size:
                raise QueueError(f"TBuf.Get({dt.name}, {count}): the buffer holds only {t._size} elements")
            t = LocalTensor(self._slot, 0, count, dt, self._slot.alloc_gen)
        return t

    def _init(self, core, nbytes: int) -> None:
        if self._slot is not None:
            raise QueueError("InitBuffer called twice for the same TBuf")
        space = core.space(_space_of(self.position), f"InitBuffer(TBuf({self.position.name}))")
        addr = space.allocate(nbytes, f"InitBuffer(TBuf({self.position.name}), {nbytes})")
        self._slot = Slot(space, addr, nbytes, f"TBuf({self.position.name}) ({space.name} @{addr})")
        self._slot.allocated = True


@lane_ready
class TPipe:
    """``TPipe``: allocates queue and TBuf memory with ``InitBuffer``."""

    API = ("InitBuffer",)

    def __init__(self):
        current_core("TPipe()")

    @lane_ready
    def InitBuffer(self, que, num_or_bytes: int, nbytes: int | None = None) -> None:
        """``InitBuffer(que, num, bytes)`` for a TQue, ``InitBuffer(tbuf, bytes)`` for a TBuf."""
        core = current_core("InitBuffer")
        if isinstance(que, TQue):
            if nbytes is None:
                raise KernelRuntimeError("InitBuffer(que, num, bytes) needs the buffer count and the bytes per buffer")
            if int(num_or_bytes) < 1 or int(nbytes) < 1:
                raise KernelRuntimeError(f"InitBuffer(que, {num_or_bytes}, {nbytes}): count and size must be >= 1")
            que._init(core, int(num_or_bytes), int(nbytes))
        elif isinstance(que, TBuf):
            size = int(num_or_bytes if nbytes is None else nbytes)
            if size < 1:
                raise KernelRuntimeError(f"InitBuffer(tbuf, {size}): size must be >= 1")
            que._init(core, size)
        else:
            raise KernelRuntimeError(f"InitBuffer needs a TQue or TBuf, got {type(que).__name__}")
