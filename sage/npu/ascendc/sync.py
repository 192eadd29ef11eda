"""PipeBarrier, SetFlag/WaitFlag, block queries, kernel types and sync between cores."""

from __future__ import annotations

import enum

from sage.npu.errors import KernelRuntimeError, LaunchError
from sage.npu.sim.core import PIPE_INDEX, S, current_core
from sage.npu.sim.lanes import lane_ready
from sage.npu.sim.opcodes import AIC, AIV, CROSS_SET, CROSS_WAIT, KERNEL_TYPES, SYNC, SYNC_ALL


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


# Keyed by the member's name: an Enum member hashes through a Python-level __hash__, a string's
# hash is cached, and SetFlag/WaitFlag look these up on every call.
_PAIR_PIPES = {e.name: (PIPE_INDEX[e.value.split("_")[0]], PIPE_INDEX[e.value.split("_")[1]]) for e in HardEvent}
# (verb, event name, id) -> (source pipe, destination pipe, record name): what a SetFlag or
# WaitFlag of a valid event and id resolves to never changes, so it is worked out once per
# combination (three helper calls and an f-string per call before). Only whether the id is in
# range depends on the core (its preset's event_ids), so that is checked on every call.
_FLAG_CALLS: dict[tuple[str, str, int], tuple[int, int, str]] = {}


def _pair(event) -> tuple[int, int]:
    if event.__class__ is not HardEvent:  # (an Enum with members cannot be subclassed)
        raise KernelRuntimeError(f"expected a HardEvent (e.g. HardEvent.MTE2_V), got {event!r}")
    return _PAIR_PIPES[event._name_]


def _event_id(core, event_id) -> int:
    n = core.spec.scalar.event_ids
    if isinstance(event_id, bool) or not isinstance(event_id, int) or not 0 <= event_id < n:
        raise KernelRuntimeError(f"event_id must be an int in 0..{n - 1}, got {event_id!r}")
    return event_id


def _flag_call(core, verb: str, event, event_id) -> tuple[int, int, str]:
    """(source pipe, destination pipe, record name) of `verb`(event, event_id), checked."""
    if event.__class__ is HardEvent and event_id.__class__ is int and 0 <= event_id < core.spec.scalar.event_ids:
        hit = _FLAG_CALLS.get((verb, event._name_, event_id))
        if hit is not None:
            return hit
    src, dst = _pair(event)
    event_id = _event_id(core, event_id)
    hit = _FLAG_CALLS[(verb, event._name_, event_id)] = (src, dst, f"{verb}({event.name},{event_id})")
    return hit


@lane_ready
def SetFlag(event: HardEvent, event_id: int = 0) -> None:
    """For ``HardEvent.SRC_DST`` and id 0..7: the flag goes up on pipe SRC once all its earlier work is done. Cost: 1 cycle on SRC."""
    core = current_core("SetFlag")
    src, dst, name = _flag_call(core, "SetFlag", event, event_id)
    core.set_flag(src, dst, event_id, name)


@lane_ready
def WaitFlag(event: HardEvent, event_id: int = 0) -> None:
    """For ``HardEvent.SRC_DST`` and id: pipe DST waits for the matching SetFlag, then lowers it. Cost: 1 cycle on DST."""
    core = current_core("WaitFlag")
    src, dst, name = _flag_call(core, "WaitFlag", event, event_id)
    core.wait_flag(src, dst, event_id, name)


@lane_ready
def PipeBarrier(pipe: PipeType) -> None:
    """PIPE_X: later work of pipe X waits for its earlier work (the next instruction pays its head);
    PIPE_ALL: every pipe waits for all earlier work of all pipes."""
    core = current_core("PipeBarrier")
    if not isinstance(pipe, PipeType):
        raise KernelRuntimeError(f"PipeBarrier needs a pipe such as PIPE_V, got {pipe!r}")
    core.barrier(None if pipe is PipeType.PIPE_ALL else PIPE_INDEX[pipe.value], f"PipeBarrier({pipe.name})")


@lane_ready
def GetBlockIdx() -> int:
    """Index of this block, 0..block_dim-1; in a MIX_AIC_1_2 launch an AIV's index is 0..2*block_dim-1
    (block * 2 + GetSubBlockIdx()), an AIC's 0..block_dim-1, as in CANN."""
    core = current_core("GetBlockIdx")
    if core.core_type == AIV and core.launch is not None and core.launch.kernel_type == "MIX_AIC_1_2":
        return core.block_idx * 2 + core.sub
    return core.block_idx


# CANN documents GetBlockNum only as "the core count the task was configured with"
# (cannmirror/asc-devkit docs/api/context/GetBlockNum.md); its MIX operators count their AIVs
# as GetBlockNum() * GetTaskRation(), i.e. GetBlockNum() is the number of groups on both sides.
@lane_ready
def GetBlockNum() -> int:
    """block_dim of the launch, the same on every core: in a MIX_AIC_1_2 launch the number of groups (one AIC
    + two AIVs each), so the AIVs number GetBlockNum() * GetTaskRation()."""
    return current_core("GetBlockNum").block_num


@lane_ready
def GetSubBlockIdx() -> int:
    """Which of its group's two AIVs this core is (0 or 1; 0 on an AIC and in non-mix launches)."""
    return current_core("GetSubBlockIdx").sub


@lane_ready
def GetTaskRation() -> int:
    """AIVs per block as this core sees it: 2 on an AIV of a MIX_AIC_1_2 launch, else 1."""
    core = current_core("GetTaskRation")
    mix = core.launch is not None and core.launch.kernel_type == "MIX_AIC_1_2"
    return 2 if mix and core.core_type == AIV else 1


class KernelType(enum.Enum):
    """The kernel types of KERNEL_TASK_TYPE_DEFAULT (which cores a launch runs on)."""

    KERNEL_TYPE_AIV_ONLY = "AIV_ONLY"
    KERNEL_TYPE_AIC_ONLY = "AIC_ONLY"
    KERNEL_TYPE_MIX_AIC_1_2 = "MIX_AIC_1_2"
    KERNEL_TYPE_MIX_AIV_1_0 = "MIX_AIV_1_0"
    KERNEL_TYPE_MIX_AIC_1_0 = "MIX_AIC_1_0"


(KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_MIX_AIV_1_0,
 KERNEL_TYPE_MIX_AIC_1_0) = KernelType
assert {k.value for k in KernelType} == set(KERNEL_TYPES)


@lane_ready
def KERNEL_TASK_TYPE_DEFAULT(kernel_type: KernelType) -> None:
    """First statement of a kernel: which cores it runs on. MIX_AIC_1_2 runs one AIC and two AIVs per
    block (the cube part under `if ASCEND_IS_AIC:`, the vector part under `if ASCEND_IS_AIV:`);
    MIX_AIV_1_0 / MIX_AIC_1_0 are vector / cube kernels that use SyncAll. Without it a kernel is
    vector-only or cube-only by what it uses."""
    core = current_core("KERNEL_TASK_TYPE_DEFAULT")
    if not isinstance(kernel_type, KernelType):
        raise KernelRuntimeError(f"KERNEL_TASK_TYPE_DEFAULT needs a KERNEL_TYPE_..., got {kernel_type!r}")
    core.launch.declare(core, kernel_type.value)


class AscendIs:
    """``ASCEND_IS_AIC`` / ``ASCEND_IS_AIV``: true on that core type (use them as `if ASCEND_IS_AIV:`)."""

    __slots__ = ("core_type",)

    def __init__(self, core_type: str):
        self.core_type = core_type

    def __bool__(self) -> bool:
        core = current_core(f"ASCEND_IS_{self.core_type}")
        if core.core_type is None:
            raise LaunchError(f"ASCEND_IS_{self.core_type} in a kernel whose type is not known yet: declare it first "
                              "with KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_...)")
        return core.core_type == self.core_type

    def __repr__(self) -> str:
        return f"ASCEND_IS_{self.core_type}"


ASCEND_IS_AIC, ASCEND_IS_AIV = AscendIs(AIC), AscendIs(AIV)


# pipe: "PIPE_S and PIPE_ALL are not supported" (https://hiascend.com/document/detail/zh/
# CANNCommunityEdition/800alpha003/apiref/ascendcopapi/atlasascendc_api_07_0273.html).
@lane_ready
def CrossCoreSetFlag(modeId: int, pipe: PipeType, flagId: int) -> None:
    """``CrossCoreSetFlag<modeId, pipe>(flagId)``: once `pipe`'s earlier work is done, raise flag `flagId`
    (0..10) for other cores. Mode 0: every core of this type (the flag reaches each when all have set it);
    mode 1: the two AIVs of this group; mode 2: AIC -> its two AIVs, or both AIVs -> their AIC. At most 16
    sets of one flag may be pending. `pipe` may not be PIPE_S or PIPE_ALL (KernelRuntimeError, as CANN)."""
    core = current_core("CrossCoreSetFlag")
    if not isinstance(pipe, PipeType) or pipe in (PipeType.PIPE_S, PipeType.PIPE_ALL):
        raise KernelRuntimeError(f"CrossCoreSetFlag needs the pipe the flag follows (PIPE_MTE3, PIPE_FIX, ...; not "
                                 f"PIPE_S or PIPE_ALL), got {pipe!r}")
    flag, mode = _int_arg(flagId, "flagId"), _int_arg(modeId, "modeId")
    p = PIPE_INDEX[pipe.value]
    core.instr(p, f"CrossCoreSetFlag({mode},{flag})", CROSS_SET, flag, mode, kind=SYNC)
    core.launch.cross_set(core, flag, mode, p)


@lane_ready
def CrossCoreWaitFlag(flagId: int, modeId: int = 0, pipe: PipeType | None = None) -> None:
    """``CrossCoreWaitFlag(flagId)``: everything after it waits until flag `flagId` has reached this core
    (then the flag's counter goes down by one). `modeId`/`pipe` are accepted for the templated form."""
    core = current_core("CrossCoreWaitFlag")
    flag, mode = _int_arg(flagId, "flagId"), _int_arg(modeId, "modeId")
    core.instr(S, f"CrossCoreWaitFlag({flag})", CROSS_WAIT, flag, mode, kind=SYNC)
    core.scalar_read_done()  # nothing after the wait is issued before it
    core.launch.cross_wait(core, flag)


# isAIVOnly true (the default): the vector cores only; false: the vector and the cube cores each, then
# the two together (cannmirror/asc-devkit docs/api/context/SyncAll.md).
@lane_ready
def SyncAll(isAIVOnly: bool = True) -> None:
    """``SyncAll<isAIVOnly>()``: every core of the launch waits until all have arrived; their earlier work is
    done first. SyncAll() spans the AIVs only (an AIC calling it is a LaunchError); SyncAll(False) spans every
    AIC and AIV. Needs a MIX kernel type and block_dim <= the cores."""
    core = current_core("SyncAll")
    core.barrier(None, "SyncAll")
    core.instr(S, "SyncAll", SYNC_ALL, 1 if isAIVOnly else 0, kind=SYNC)
    core.scalar_read_done()
    core.launch.sync_all(core, bool(isAIVOnly))


def _int_arg(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise KernelRuntimeError(f"{what} must be an int, got {value!r}")
    return value
