"""The common path of every vector instruction: operand checks, cost, record, index forms."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from sage.npu.errors import BoundsError
from sage.npu.isa import legal
from sage.npu.isa.table import allowed_dtypes
from sage.npu.sim import core as core_mod
from sage.npu.sim.core import V
from sage.npu.sim.opcodes import VEC
from sage.npu.ascendc.tensors import LocalTensor
from sage.npu.ascendc import _checks as chk


def issue(name: str, key: str, dst, srcs, count: int, itemsize: int | None = None, repeats: int | None = None,
          spans=None, extra_heads: int = 0, dst_align: int = 32):
    """Check UB placement, 32 B alignment and bounds, then record one V instruction (costed
    later from ``key``, the operand width and the repeats).

    ``extra_heads``: instructions made of dependent steps (reduction levels) pay the head again per step.
    ``dst_align``: the destination's alignment where the reference relaxes it (reductions).
    """
    core = core_mod._current
    if core is None:
        core = core_mod.current_core(name)
    for t in (dst, *srcs):
        if t.__class__ is not LocalTensor:
            chk.local(t, name)
        slot = t._slot
        if slot.alloc_gen != t._gen or slot.space.name != "UB":
            chk.local(t, name, "UB")
        if (slot.addr + t._off) & 31 and (t is not dst or (slot.addr + t._off) % dst_align):
            chk.aligned(t, name, 32 if t is not dst else dst_align)
        if spans is None and count > t._size:
            chk.fits(t, count, name)
    if spans is None:
        if count < 0:
            chk.fits(dst, count, name)
        if len(srcs) == 1:  # (unary and scalar forms: no list built for one operand)
            s0 = srcs[0]
            reads = ((s0._slot, s0._off, s0._off + count * s0._dtype.itemsize),)
        else:
            reads = tuple([(t._slot, t._off, t._off + count * t._dtype.itemsize) for t in srcs])
        writes = ((dst._slot, dst._off, dst._off + count * dst._dtype.itemsize),)
    else:
        reads, writes = spans
    isz = itemsize or dst._dtype.itemsize
    reps = repeats if repeats is not None else -(-count * isz // core.session.repeat_bytes)
    core.instr(V, name, VEC, core.session.vec_index[key], isz, reps, extra_heads, None, reads, writes)
    return core


def repeat_bytes(name: str) -> int:
    """Bytes one vector repeat covers, from the preset (256 on Ascend 910B)."""
    core = core_mod._current or core_mod.current_core(name)
    return core.session.repeat_bytes


def require(name: str, dt: np.dtype) -> None:
    """The operand type is one the chip's instruction table lists for `name` (else UnsupportedError)."""
    if dt not in allowed_dtypes(name):
        legal.dtype(name, dt)


def repeat_form(name: str, mask, repeat_times, itemsize: int):
    """Check a mask/repeat form's repeatTimes (<= 255) and mask (per operand width); return
    (mask key, repeats)."""
    rep = chk.count_arg(repeat_times, f"{name} repeatTimes")
    legal.repeat_times(name, rep)
    mk = mask_key(mask)
    legal.mask(name, mk, itemsize)
    return mk, rep


@lru_cache(maxsize=512)
def _lane_mask(mask, lanes: int) -> np.ndarray:
    if isinstance(mask, tuple):  # Ascend C's uint64_t mask[2]: mask[0] = lanes 0..63, mask[1] = lanes 64..127
        bits = [(int(mask[w]) >> b) & 1 for w in range(len(mask)) for b in range(64)]
        return np.array(bits[:lanes], dtype=bool)
    return np.arange(lanes) < mask


@lru_cache(maxsize=512)
def repeat_index(mask, repeat: int, blk_stride: int, rep_stride: int, itemsize: int) -> np.ndarray:
    """Element indices touched by a mask/repeat instruction (strides in 32 B blocks)."""
    epb = 32 // itemsize
    lanes = 8 * epb
    active = _lane_mask(mask, lanes)
    lane = np.arange(lanes)
    within = (lane // epb) * blk_stride * epb + lane % epb
    idx = (np.arange(repeat)[:, None] * rep_stride * epb + within[None, :])[:, active]
    idx.setflags(write=False)
    return idx


def mask_key(mask):
    return tuple(int(m) for m in mask) if isinstance(mask, (list, tuple)) else int(mask)


def indexed(name: str, t, idx: np.ndarray) -> tuple:
    """The byte span of tensor ``t`` covered by element indices ``idx`` (bounds checked)."""
    hi = int(idx.max()) + 1 if idx.size else 0
    if hi > t._size:
        raise BoundsError(f"{name}: the repeat parameters reach element {hi - 1}, the tensor holds {t._size}")
    lo = int(idx.min()) if idx.size else 0
    if lo < 0:  # strides are unsigned on the chip (uint8 blkStride, uint8/uint16 repStride); numpy would wrap
        raise BoundsError(f"{name}: the repeat parameters reach element {lo}, before the tensor's start "
                          "(repeat strides are unsigned on Ascend)")
    isz = t._dtype.itemsize
    return (t._slot, t._off + lo * isz, t._off + hi * isz)
