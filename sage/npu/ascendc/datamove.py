"""DataCopy and DataCopyPad: GM <-> UB (MTE2 / MTE3, on an AIV), GM -> L1 (MTE2, ND -> NZ, on an AIC), UB -> UB (V)."""

from __future__ import annotations

import numpy as np

from sage.npu.errors import AlignmentError, KernelRuntimeError
from sage.npu.sim.core import MTE2, MTE3, V, CoreState, current_core
from sage.npu.sim.lanes import lane_ready, per_lane
from sage.npu.sim.opcodes import GM_COPY, LOCAL_COPY, PATH_INDEX
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc.params import (DataCopyExtParams, DataCopyPadExtParams, DataCopyParams, Nd2NzParams)
from sage.npu.ascendc.tensors import GlobalTensor, LocalTensor


def gm_transfer(core: CoreState, pipe: int, name: str, path: str, gt: GlobalTensor, elem_lo: int, elem_hi: int,
                nbytes: int, bursts: int, pitch_bytes: int, local_span: tuple, read: bool,
                rows: tuple[int, int, int] | None = None) -> None:
    """Record one GM transfer: its path, size, bursts and pitch, and the GM bytes it touches
    (the replay costs it, with the L2 state, alignment and HBM sharing). `rows` = (bytes per row,
    pitch, rows) when the bytes touched are rows the cost counts as one burst (Fixpipe)."""
    buf = gt._buf
    isz = buf.dtype.itemsize
    byte_lo, byte_hi = (gt._off + elem_lo) * isz, (gt._off + elem_hi) * isz
    reads, writes = ((), (local_span,)) if read else ((local_span,), ())
    core.instr(pipe, name, GM_COPY, PATH_INDEX[path], nbytes, bursts, pitch_bytes, (buf.id, byte_lo, byte_hi),
               reads, writes)
    length, pitch, count = rows or (nbytes // bursts, pitch_bytes, bursts)
    core.gm_access(pipe, buf, byte_lo, length, pitch, count, not read, name)


_GM_UB, _UB_GM = PATH_INDEX["GM->UB"], PATH_INDEX["UB->GM"]


def _store(core: CoreState, d: np.ndarray, s: np.ndarray) -> None:
    """A write to GM: plain, or combined with what is there under SetAtomicAdd/Max/Min."""
    if core.atomic is None:
        d[...] = s
    else:
        d[...] = core.atomic(d, s)


def _each(core: CoreState, off) -> list[tuple[int | None, int]]:
    """(lane, GM element offset) per lane of a lane group, or [(None, off)] for a lone block: the
    general copy forms below take each lane's own rows one lane at a time."""
    if core.lanes is None:
        return [(None, off)]
    return list(enumerate(per_lane(off, core.weight)))


def _row(arr: np.ndarray, lane: int | None) -> np.ndarray:
    """A lane's own local memory (a lone block's is the whole array)."""
    return arr if lane is None else arr[lane]


def _store_all(core: CoreState, pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """The GM writes of (source, destination) views, one pair per lane."""
    for s, d in pairs:
        _store(core, d, s)


def SetAtomicAdd(dtype=None) -> None:
    """Later UB->GM copies (DataCopy, DataCopyPad, Fixpipe) add into GM instead of storing, so blocks can
    accumulate into one output (the output must be initialised first). Ended by SetAtomicNone()."""
    current_core("SetAtomicAdd").atomic = np.add


def SetAtomicMax(dtype=None) -> None:
    """As SetAtomicAdd, storing max(GM, data)."""
    current_core("SetAtomicMax").atomic = np.maximum


def SetAtomicMin(dtype=None) -> None:
    """As SetAtomicAdd, storing min(GM, data)."""
    current_core("SetAtomicMin").atomic = np.minimum


def SetAtomicNone() -> None:
    """Back to plain stores."""
    current_core("SetAtomicNone").atomic = None


def _blocks_32(params: DataCopyParams, isz: int, what: str) -> tuple[int, int, int, int]:
    """(blocks, elements per block, src pitch, dst pitch) of a DataCopyParams copy (32 B units)."""
    bc = chk.count_arg(params.blockCount, f"{what} blockCount")
    bl = chk.count_arg(params.blockLen, f"{what} blockLen")
    if bc < 1 or bl < 1:
        raise KernelRuntimeError(f"{what}: blockCount and blockLen must be >= 1 (got {bc}, {bl})")
    unit = 32 // isz
    return bc, bl * unit, (bl + params.srcStride) * unit, (bl + params.dstStride) * unit


@lane_ready
def DataCopy(dst, src, count_or_params) -> None:
    """Copy ``count`` elements (or DataCopyParams blocks): GM->UB, UB->GM, UB->UB on an AIV; GM->L1 (with
    Nd2NzParams for the cube) on an AIC. dst and src share one dtype."""
    core = current_core("DataCopy")
    arg = count_or_params
    if arg.__class__ is int and _fast_copy(core, dst, src, arg):
        return
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        dst = chk.local(dst, "DataCopy dst")
        pos = dst._slot.space.name
        if pos == "L1" and isinstance(arg, Nd2NzParams):
            from sage.npu.ascendc.cube import copy_nd2nz
            copy_nd2nz(core, dst, src, arg)
            return
        if pos not in ("UB", "L1"):
            raise KernelRuntimeError(f"DataCopy GM -> {pos} is not a hardware path: copy GM -> L1 (A1/B1) and LoadData into L0A/L0B")
        _gm_to_local(core, dst, src, arg, "GM->UB" if pos == "UB" else "GM->L1")
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        src = chk.local(src, "DataCopy src")
        if src._slot.space.name != "UB":
            hint = "use Fixpipe for L0C" if src._slot.space.name == "L0C" else "only UB -> GM is a DataCopy path"
            raise KernelRuntimeError(f"DataCopy {src._slot.space.name} -> GM is not a hardware path: {hint}")
        _local_to_gm(core, dst, src, arg)
    elif isinstance(dst, LocalTensor) and isinstance(src, LocalTensor):
        _local_to_local(core, chk.local(dst, "DataCopy dst"), chk.local(src, "DataCopy src"), arg)
    else:
        raise KernelRuntimeError(
            f"DataCopy(dst, src, ...) needs a LocalTensor and a GlobalTensor (or two LocalTensors), "
            f"got {type(dst).__name__} and {type(src).__name__}")


def _fast_copy(core: CoreState, dst, src, count: int) -> bool:
    """The common case, a valid contiguous GM <-> UB copy, without the general path's detours.

    Returns False (nothing done) for anything else, including every error case, which the
    general path then reports.
    """
    if dst.__class__ is LocalTensor and src.__class__ is GlobalTensor:
        local, gt, read = dst, src, True
    elif dst.__class__ is GlobalTensor and src.__class__ is LocalTensor:
        local, gt, read = src, dst, False
    else:
        return False
    slot = local._slot
    buf = gt._buf
    if buf is None or slot.space.name != "UB" or local._gen != slot.alloc_gen or buf.dtype is not local._dtype:
        return False
    isz = local._dtype.itemsize
    nbytes = count * isz
    off = gt._off
    if count < 0 or nbytes & 31 or (slot.addr + local._off) & 31 or count > local._size or off + count > buf.data.size:
        return False
    byte_lo = off * isz
    byte_hi = byte_lo + nbytes
    lspan = (slot, local._off, local._off + nbytes)
    gm = (buf.id, byte_lo, byte_hi)
    if read:
        core.instr(MTE2, "DataCopy", GM_COPY, _GM_UB, nbytes, 1, nbytes, gm, (), (lspan,))
        core.gm_access(MTE2, buf, byte_lo, nbytes, nbytes, 1, False, "DataCopy")
        for lane, at in _each(core, off):  # (each lane's row from its own GM bytes)
            _row(local._arr, lane)[:count] = buf.data[at:at + count]
    else:
        core.instr(MTE3, "DataCopy", GM_COPY, _UB_GM, nbytes, 1, nbytes, gm, (lspan,), ())
        core.gm_access(MTE3, buf, byte_lo, nbytes, nbytes, 1, True, "DataCopy")
        for lane, at in _each(core, off):
            _store(core, buf.data[at:at + count], _row(local._arr, lane)[:count])
    return True


def mark_layout(slot, lo: int, hi: int, *, nd: bool) -> None:
    """Bytes [lo, hi) of an L1 buffer now hold ND rows (a plain copy from GM) or not (an ND->NZ copy)."""
    kept = [(a, b) for a, b in slot.nd if b <= lo or a >= hi]
    kept += [(a, lo) for a, b in slot.nd if a < lo < b] + [(hi, b) for a, b in slot.nd if a < hi < b]
    slot.nd = kept + [(lo, hi)] if nd else kept


def _check_dtypes(dst, src, what):
    if dst.dtype != src.dtype:
        raise KernelRuntimeError(f"{what}: dst is {dst.dtype.name} but src is {src.dtype.name}; copy, then Cast")


def _gm_to_local(core, dst: LocalTensor, src: GlobalTensor, arg, path: str) -> None:
    _check_dtypes(dst, src, "DataCopy")
    chk.aligned(dst, "DataCopy dst")
    isz = dst._dtype.itemsize
    gm = src._buf.data
    if isinstance(arg, DataCopyParams):
        bc, be, sp, dp = _blocks_32(arg, isz, "DataCopy")
    else:
        count = chk.count_arg(arg, "DataCopy count")
        if (count * isz) % 32:
            raise AlignmentError(
                f"DataCopy of {count} x {dst._dtype.name} = {count * isz} B: the length must be a multiple of 32 B "
                f"({32 // isz} elements); use DataCopyPad for unaligned lengths")
        bc, be, sp, dp = 1, count, count, count
    # (source first, then destination: a block's bounds errors come in that order)
    pairs = [(chk.rows_view(gm, off, bc, be, sp, "DataCopy src", "the GM tensor"),
              chk.rows_view(_row(dst._arr, lane), 0, bc, be, dp, "DataCopy dst", "the local tensor"))
             for lane, off in _each(core, src._off)]
    nbytes = bc * be * isz
    span_lo, span_hi = 0, (bc - 1) * sp + be
    local_span = dst.span((bc - 1) * dp + be)
    gm_transfer(core, MTE2, "DataCopy", path, src, span_lo, span_hi, nbytes, bc, sp * isz, local_span, True)
    for s, d in pairs:
        d[...] = s
    if path == "GM->L1":  # raw rows, as in GM: the cube cannot take them (LoadData reads NZ)
        mark_layout(dst._slot, local_span[1], local_span[2], nd=True)


def _local_to_gm(core, dst: GlobalTensor, src: LocalTensor, arg) -> None:
    _check_dtypes(dst, src, "DataCopy")
    chk.aligned(src, "DataCopy src")
    isz = src._dtype.itemsize
    if isinstance(arg, DataCopyParams):
        bc, be, sp, dp = _blocks_32(arg, isz, "DataCopy")
    else:
        count = chk.count_arg(arg, "DataCopy count")
        if (count * isz) % 32:
            raise AlignmentError(
                f"DataCopy of {count} x {src._dtype.name} = {count * isz} B: the length must be a multiple of 32 B "
                f"({32 // isz} elements); use DataCopyPad for unaligned lengths")
        bc, be, sp, dp = 1, count, count, count
    pairs = [(chk.rows_view(_row(src._arr, lane), 0, bc, be, sp, "DataCopy src", "the local tensor"),
              chk.rows_view(dst._buf.data, off, bc, be, dp, "DataCopy dst", "the GM tensor"))
             for lane, off in _each(core, dst._off)]
    nbytes = bc * be * isz
    gm_transfer(core, MTE3, "DataCopy", "UB->GM", dst, 0, (bc - 1) * dp + be, nbytes, bc, dp * isz,
                src.span((bc - 1) * sp + be), False)
    _store_all(core, pairs)


def _local_to_local(core, dst: LocalTensor, src: LocalTensor, arg) -> None:
    pd, ps = dst._slot.space.name, src._slot.space.name
    if (ps, pd) != ("UB", "UB"):
        hint = (" (use LoadData for L1 -> L0A/L0B)" if ps == "L1" else
                ": on Atlas A2 UB and L1 are on different cores (AIV, AIC), which exchange data through GM")
        raise KernelRuntimeError(f"DataCopy {ps} -> {pd} is not a hardware path{hint}")
    pipe, path = V, "UB->UB"
    _check_dtypes(dst, src, "DataCopy")
    chk.aligned(dst, "DataCopy dst")
    chk.aligned(src, "DataCopy src")
    isz = dst._dtype.itemsize
    if isinstance(arg, DataCopyParams):
        bc, be, sp, dp = _blocks_32(arg, isz, "DataCopy")
    else:
        count = chk.count_arg(arg, "DataCopy count")
        if (count * isz) % 32:
            raise AlignmentError(f"DataCopy of {count * isz} B between local buffers: the length must be a multiple of 32 B")
        bc, be, sp, dp = 1, count, count, count
    pairs = [(chk.rows_view(_row(src._arr, lane), 0, bc, be, sp, "DataCopy src", "the local tensor"),
              chk.rows_view(_row(dst._arr, lane), 0, bc, be, dp, "DataCopy dst", "the local tensor"))
             for lane, _ in _each(core, 0)]
    nbytes = bc * be * isz
    core.instr(pipe, "DataCopy", LOCAL_COPY, PATH_INDEX[path], nbytes, bc, 0, None,
               reads=(src.span((bc - 1) * sp + be),), writes=(dst.span((bc - 1) * dp + be),))
    for s, d in pairs:
        d[...] = s.copy()


def _ceil32(n: int) -> int:
    return -(-n // 32) * 32


@lane_ready
def DataCopyPad(dst, src, copy_params, pad_params: DataCopyPadExtParams | None = None) -> None:
    """Copy blockCount rows of blockLen bytes (any length) between GM and UB. GM strides are in bytes, UB
    strides in 32 B units. In UB each row takes ceil32(leftPadding + blockLen + rightPadding) bytes
    (+ stride x 32), so row r starts at r x that pitch; GM -> UB fills the paddings when isPad."""
    core = current_core("DataCopyPad")
    if not isinstance(copy_params, (DataCopyExtParams, DataCopyParams)):
        raise KernelRuntimeError("DataCopyPad needs DataCopyExtParams(blockCount, blockLen_bytes, srcStride, dstStride, 0)")
    bc = chk.count_arg(copy_params.blockCount, "DataCopyPad blockCount")
    bl = chk.count_arg(copy_params.blockLen, "DataCopyPad blockLen")
    if not 1 <= bc <= 4095 or bl < 1:
        raise KernelRuntimeError(f"DataCopyPad: blockCount must be 1..4095 and blockLen >= 1 byte (got {bc}, {bl})")
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        dst = chk.local(dst, "DataCopyPad dst", "UB")
        _check_dtypes(dst, src, "DataCopyPad")
        chk.aligned(dst, "DataCopyPad dst")
        isz = dst._dtype.itemsize
        if bl % isz or copy_params.srcStride % isz:
            raise AlignmentError(f"DataCopyPad: blockLen {bl} B and GM stride {copy_params.srcStride} B must be whole {dst._dtype.name} elements")
        pad = pad_params or DataCopyPadExtParams()
        left, right = (pad.leftPadding, pad.rightPadding) if pad.isPad else (0, 0)
        if (left + right) * isz > 32:
            raise KernelRuntimeError("DataCopyPad: leftPadding + rightPadding may add at most 32 B per row")
        be = bl // isz
        row = _ceil32((left + right) * isz + bl) // isz
        dp = row + copy_params.dstStride * 32 // isz
        sp = be + copy_params.srcStride // isz
        pairs = [(chk.rows_view(src._buf.data, off, bc, be, sp, "DataCopyPad src", "the GM tensor"),
                  chk.rows_view(_row(dst._arr, lane), 0, bc, row, dp, "DataCopyPad dst", "the local tensor"))
                 for lane, off in _each(core, src._off)]
        gm_transfer(core, MTE2, "DataCopyPad", "GM->UB", src, 0, (bc - 1) * sp + be, bc * bl, bc, sp * isz,
                    dst.span((bc - 1) * dp + row), True)
        for s, d in pairs:
            d[:, left:left + be] = s
            if pad.isPad:
                d[:, :left] = pad.paddingValue
                d[:, left + be:left + be + right] = pad.paddingValue
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        src = chk.local(src, "DataCopyPad src", "UB")
        _check_dtypes(dst, src, "DataCopyPad")
        chk.aligned(src, "DataCopyPad src")
        isz = src._dtype.itemsize
        if bl % isz or copy_params.dstStride % isz:
            raise AlignmentError(f"DataCopyPad: blockLen {bl} B and GM stride {copy_params.dstStride} B must be whole {src._dtype.name} elements")
        be = bl // isz
        sp = _ceil32(bl) // isz + copy_params.srcStride * 32 // isz
        dp = be + copy_params.dstStride // isz
        pairs = [(chk.rows_view(_row(src._arr, lane), 0, bc, be, sp, "DataCopyPad src", "the local tensor"),
                  chk.rows_view(dst._buf.data, off, bc, be, dp, "DataCopyPad dst", "the GM tensor"))
                 for lane, off in _each(core, dst._off)]
        gm_transfer(core, MTE3, "DataCopyPad", "UB->GM", dst, 0, (bc - 1) * dp + be, bc * bl, bc, dp * isz,
                    src.span((bc - 1) * sp + be), False)
        _store_all(core, pairs)
    else:
        raise KernelRuntimeError(f"DataCopyPad copies between GM and UB, got {type(dst).__name__} <- {type(src).__name__}")
