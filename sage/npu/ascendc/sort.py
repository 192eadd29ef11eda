"""Sort and TopK: sage's simplified forms of Ascend C's sort helpers (V pipe).

Ascend C builds a full sort from Sort32 (32-element sorts) and merge passes over
(value, index) proposals; here one call sorts ``count`` elements and writes values and
indices separately. Cost: vsort head + slope x repeats per pass, with
1 + ceil(log2(count / 32)) passes (one Sort32 pass, then merges).
"""

from __future__ import annotations

import math

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc._vecbase import issue, repeat_bytes, require


def _passes(count: int) -> int:
    return 1 + max(0, math.ceil(math.log2(max(count, 1) / 32)))


def _order(name, dst_value, dst_index, src, count, descending):
    dt = chk.same_dtype(name, dst_value, src)
    require(name, dt)
    if dst_index._dtype not in (dtypes.uint32, dtypes.int32):
        raise KernelRuntimeError(f"{name}: indices are written as uint32 or int32, got {dst_index._dtype.name}")
    count = chk.count_arg(count, f"{name} count")
    if count < 1:
        raise KernelRuntimeError(f"{name}: count must be >= 1")
    return rank_order(src._arr[:count], descending), count, dt


def rank_order(values: np.ndarray, descending) -> np.ndarray:
    """The stable order of `values`: equal keys keep their index order in both directions,
    as the hardware's proposals do, and NaN ranks above every number (first when descending,
    last when ascending), as torch.sort and torch.topk order it."""
    if values.dtype.kind == "f":
        keys = values.astype(np.float64)
        nan = np.isnan(keys)
        if not nan.any():      # the same order by one stable argsort (lexsort is ~3x slower)
            return np.argsort(-keys if descending else keys, kind="stable")
        keys = np.where(nan, 0.0, -keys if descending else keys)
        return np.lexsort((keys, ~nan if descending else nan))
    keys = values.astype(np.int64)
    return np.argsort(-keys if descending else keys, kind="stable")


def Sort(dstValue, dstIndex, src, count: int, descending: bool = True) -> None:
    """Sort(dstValue, dstIndex, src, count, descending=True): src[:count] sorted (stable), with the source
    index of each value in dstIndex (uint32/int32). Cost per pass, 1 + ceil(log2(count / 32)) passes."""
    order, count, dt = _order("Sort", dstValue, dstIndex, src, count, descending)
    chk.fits(dstIndex, count, "Sort")
    spans = ((src.span(count),), (dstValue.span(count), dstIndex.span(count)))
    issue("Sort", "vsort", dstValue, (src, dstIndex), count, itemsize=dt.itemsize,
          repeats=-(-count * dt.itemsize // repeat_bytes("Sort")) * _passes(count), spans=spans)
    values = src._arr[order]
    dstValue._arr[:count] = values
    dstIndex._arr[:count] = order


def TopK(dstValue, dstIndex, src, k: int, count: int, largest: bool = True) -> None:
    """TopK(dstValue, dstIndex, src, k, count, largest=True): the k largest (or smallest) of src[:count] in
    order, with their source indices (uint32/int32). Cost as Sort."""
    order, count, dt = _order("TopK", dstValue, dstIndex, src, count, largest)
    k = chk.count_arg(k, "TopK k")
    if not 1 <= k <= count:
        raise KernelRuntimeError(f"TopK: k must be in 1..count ({count}), got {k}")
    chk.fits(dstIndex, k, "TopK")
    chk.fits(dstValue, k, "TopK")
    spans = ((src.span(count),), (dstValue.span(k), dstIndex.span(k)))
    issue("TopK", "vsort", dstValue, (src, dstIndex), 0, itemsize=dt.itemsize,
          repeats=-(-count * dt.itemsize // repeat_bytes("TopK")) * _passes(count), spans=spans)
    top = order[:k]
    values = src._arr[top]
    dstValue._arr[:k] = values
    dstIndex._arr[:k] = top
