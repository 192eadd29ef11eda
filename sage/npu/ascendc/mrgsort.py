"""MrgSort: merge up to four sorted queues into one (V pipe), sage's form of Ascend C's MrgSort.

Ascend C (Atlas A2, https://www.hiascend.com/document/detail/zh/CANNCommunityEdition/910beta2/API/ascendcopapi/atlasascendc_api_07_0847.html
and the MrgSort4Info page, atlasascendc_api_07_0232) merges 2 to 4 already-sorted queues of
(score, index) structures into one, by score; `validBit` (0b11, 0b111, 0b1111) says how many
queues take part; each queue's length (`elementLengths`) is a uint16 in [0, 4095]; the
destination starts 32 B aligned, the sources 8 B aligned. With `ifExhaustedSuspension` the
merge stops as soon as one queue is used up, and GetMrgSortResult (atlasascendc_api_07_0233)
reads how many structures of each queue were merged: that is how a long row is merged from
GM through UB-sized windows.

sage's Sort writes values and indices as two tensors (sage/npu/ascendc/sort.py), so MrgSort
takes each queue as a (values, indices) pair too and keeps Sort's `descending` switch. The
per-queue counts GetMrgSortResult returns are written to the UB tensor `sortedNum` (4 int32):
reading them back on the scalar unit then needs V_S sync like any scalar read of V output.
Equal scores leave in queue order (queue 1 first), then in position order, so merging the
runs of a stable sort in index order stays stable; NaN ranks as Sort ranks it (above every
number). The hardware's result on unsorted queues is not documented: they are refused.
Cost: one merge pass, head + slope x repeats over the merged 8-byte structures.
"""

from __future__ import annotations

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError, UnsupportedError
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc._vecbase import issue, repeat_bytes, require
from sage.npu.ascendc.sort import rank_order

QUEUES_OF = {0b11: 2, 0b111: 3, 0b1111: 4}     # validBit -> queues merged
MAX_QUEUE = 4095                               # elementLengths[i]: uint16, at most 4095 structures
STRUCT_BYTES = 8                               # a (score, index) structure, half or float


def _overlaps(a: tuple, b: tuple) -> bool:
    """Two (slot, start, end) byte spans share bytes."""
    return a[0] is b[0] and a[1] < b[2] and b[1] < a[2]


def _queue_args(srcValues, srcIndices, elementCounts, validBit) -> tuple[list, list, list[int]]:
    vb = chk.count_arg(validBit, "MrgSort validBit")
    if vb not in QUEUES_OF:
        raise UnsupportedError(f"MrgSort: validBit {vb:#b} is not one of 0b11, 0b111, 0b1111 (2 to 4 queues)")
    n = QUEUES_OF[vb]
    queues = [list(x) for x in (srcValues, srcIndices, elementCounts)]
    if any(len(q) < n for q in queues):
        raise KernelRuntimeError(f"MrgSort: validBit {vb:#b} merges {n} queues; give {n} values, indices and counts")
    values, indices, counts = (q[:n] for q in queues)
    counts = [chk.count_arg(c, f"MrgSort elementCountList[{i}]") for i, c in enumerate(counts)]
    for i, c in enumerate(counts):
        if not 0 <= c <= MAX_QUEUE:
            raise UnsupportedError(f"MrgSort: elementCountList[{i}] = {c} is outside [0, {MAX_QUEUE}] (a uint16 "
                                   "field of at most 4095 structures); merge longer runs through windows")
    return values, indices, counts


def _sorted(keys: np.ndarray, descending) -> bool:
    """Whether `keys` is in Sort's order: a neighbour comparison, or Sort's own order when NaN is there."""
    if keys.dtype.kind == "f" and np.isnan(keys).any():
        return bool((rank_order(keys, descending) == np.arange(len(keys))).all())
    return bool((keys[:-1] >= keys[1:]).all() if descending else (keys[:-1] <= keys[1:]).all())


def _merged(keys: list[np.ndarray], descending, suspend: bool) -> tuple[np.ndarray, list[int]]:
    """Positions into the queues' concatenation in merged order, and each queue's count merged."""
    order = rank_order(np.concatenate(keys), descending)      # stable: queue order, then position
    owner = np.repeat(np.arange(len(keys)), [len(k) for k in keys])[order]
    if suspend:
        if any(len(k) == 0 for k in keys):
            order = order[:0]                                  # an empty queue is used up already
        else:
            # stop right after the first queue's last structure leaves
            last = [int(np.flatnonzero(owner == q)[-1]) for q in range(len(keys))]
            order = order[:min(last) + 1]
        owner = owner[:len(order)]
    return order, [int(np.count_nonzero(owner == q)) for q in range(len(keys))]


def MrgSort(dstValue, dstIndex, srcValues, srcIndices, elementCounts, validBit: int, sortedNum,
            isExhaustedSuspension: bool = False, descending: bool = True) -> None:
    """MrgSort(dstValue, dstIndex, [v1..v4], [i1..i4], [n1..n4], validBit, sortedNum, isExhaustedSuspension=False,
    descending=True): merge 2-4 sorted (values, uint32/int32 indices) queues into dst; sortedNum[0:4] (int32) gets
    how many of each queue were merged (GetMrgSortResult). Cost: one pass over the merged structures."""
    values, indices, counts = _queue_args(srcValues, srcIndices, elementCounts, validBit)
    total = sum(counts)
    dt = chk.same_dtype("MrgSort", dstValue, *values)
    require("MrgSort", dt)
    for t in (dstIndex, *indices, sortedNum):
        chk.local(t, "MrgSort")
    if any(t._dtype not in (dtypes.uint32, dtypes.int32) for t in (dstIndex, *indices, sortedNum)):
        raise KernelRuntimeError("MrgSort: indices and sortedNum are uint32 or int32")
    for q, (v, i, c) in enumerate(zip(values, indices, counts)):
        for t in (v, i):
            if t._slot.space.name != "UB" or t.addr % STRUCT_BYTES:
                chk.local(t, f"MrgSort queue {q + 1}", "UB")
                chk.aligned(t, f"MrgSort queue {q + 1}", STRUCT_BYTES)
            chk.fits(t, c, f"MrgSort queue {q + 1}")
            if any(_overlaps(t.span(c), d) for d in (dstValue.span(total), dstIndex.span(total), sortedNum.span(4))):
                raise KernelRuntimeError(f"MrgSort: queue {q + 1} overlaps the destination; merge into other UB")
    keys = [v._arr[:c] for v, c in zip(values, counts)]
    for q, k in enumerate(keys):
        if not _sorted(k, descending):
            raise KernelRuntimeError(f"MrgSort: queue {q + 1} is not sorted (the merge of unsorted queues is "
                                     "not documented); Sort each run first")
    suspend = bool(isExhaustedSuspension)
    chk.fits(dstValue, total, "MrgSort")
    chk.fits(dstIndex, total, "MrgSort")
    chk.fits(sortedNum, 4, "MrgSort sortedNum")
    order, merged = _merged(keys, descending, suspend)
    n = len(order)
    spans = (tuple(t.span(c) for v, i, c in zip(values, indices, counts) for t in (v, i)),
             (dstValue.span(total), dstIndex.span(total), sortedNum.span(4)))
    issue("MrgSort", "vmrgsort", dstValue, (dstIndex,), total, itemsize=dt.itemsize,
          repeats=max(1, -(-n * STRUCT_BYTES // repeat_bytes("MrgSort"))), spans=spans)
    dstValue._arr[:n] = np.concatenate(keys)[order]
    dstIndex._arr[:n] = np.concatenate([i._arr[:c] for i, c in zip(indices, counts)])[order]
    sortedNum._arr[:4] = merged + [0] * (4 - len(merged))
