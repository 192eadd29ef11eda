"""PipeBarrier, SetFlag/WaitFlag and block queries."""

from __future__ import annotations

import enum

from sage.npu.errors import KernelRuntimeError
from sage.npu.sim.core import PIPE_INDEX, current_core


class PipeType(enum.Enum):
    PIPE_S = "S"
    PIPE_V = "V"
    PIPE_M = "M"
    PIPE_MTE1 = "MTE1"
    PIPE_MTE2 = "MTE2"
    PIPE_MTE3 = "MTE3"
    PIPE_FIX = "FIX"
    PIPE_ALL = "ALL"


PIPE_S, PIPE_V, PIPE_M = PipeType.PIPE_S, PipeType.PIPE_V, PipeType.PIPE_M
PIPE_MTE1, PIPE_MTE2, PIPE_MTE3 = PipeType.PIPE_MTE1, PipeType.PIPE_MTE2, PipeType.PIPE_MTE3
PIPE_FIX, PIPE_ALL = PipeType.PIPE_FIX, PipeType.PIPE_ALL

EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 = range(8)

_PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
_PAIRS = [f"{a}_{b}" for a in _PIPES for b in _PIPES if a != b]  # every ordered pair of distinct pipes

HardEvent = enum.Enum("HardEvent", {p: p for p in _PAIRS})
HardEvent.__doc__ = "Event pairs SRC_DST: SetFlag runs on SRC when its earlier work is done; WaitFlag blocks DST."


_PAIR_PIPES = {e: (PIPE_INDEX[e.value.split("_")[0]], PIPE_INDEX[e.value.split("_")[1]]) for e in HardEvent}
_FLAG_NAMES: dict[tuple, str] = {}  # (verb, event, id) -> record name, built once per combination


def _pair(event) -> tuple[int, int]:
    pair = _PAIR_PIPES.get(event) if isinstance(event, HardEvent) else None
    if pair is None:
        raise KernelRuntimeError(f"expected a HardEvent (e.g. HardEvent.MTE2_V), got {event!r}")
    return pair


def _flag_name(verb: str, event: HardEvent, event_id: int) -> str:
    key = (verb, event, event_id)
    name = _FLAG_NAMES.get(key)
    if name is None:
        name = _FLAG_NAMES[key] = f"{verb}({event.name},{event_id})"
    return name


def _event_id(core, event_id) -> int:
    n = core.spec.scalar.event_ids
    if isinstance(event_id, bool) or not isinstance(event_id, int) or not 0 <= event_id < n:
        raise KernelRuntimeError(f"event_id must be an int in 0..{n - 1}, got {event_id!r}")
    return event_id


def SetFlag(event: HardEvent, event_id: int = 0) -> None:
    """For ``HardEvent.SRC_DST`` and id 0..7: the flag goes up on pipe SRC once all its earlier work is done. Cost: 1 cycle on SRC."""
    core = current_core("SetFlag")
    src, dst = _pair(event)
    core.set_flag(src, dst, _event_id(core, event_id), _flag_name("SetFlag", event, event_id))


def WaitFlag(event: HardEvent, event_id: int = 0) -> None:
    """For ``HardEvent.SRC_DST`` and id: pipe DST waits for the matching SetFlag, then lowers it. Cost: 1 cycle on DST."""
    core = current_core("WaitFlag")
    src, dst = _pair(event)
    core.wait_flag(src, dst, _event_id(core, event_id), _flag_name("WaitFlag", event, event_id))


def PipeBarrier(pipe: PipeType) -> None:
    """PIPE_X: later work of pipe X waits for its earlier work (the next instruction pays its head);
    PIPE_ALL: every pipe waits for all earlier work of all pipes."""
    core = current_core("PipeBarrier")
    if not isinstance(pipe, PipeType):
        raise KernelRuntimeError(f"PipeBarrier needs a pipe such as PIPE_V, got {pipe!r}")
    core.barrier(None if pipe is PipeType.PIPE_ALL else PIPE_INDEX[pipe.value], f"PipeBarrier({pipe.name})")


def GetBlockIdx() -> int:
    """Index of this block, 0..block_dim-1."""
    return current_core("GetBlockIdx").block_idx


def GetBlockNum() -> int:
    """block_dim of the launch."""
    return current_core("GetBlockNum").block_num
