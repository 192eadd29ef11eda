"""Average and max pooling as one pass per spatial axis.

A pooling window is a box, so its sum (or max) is the sum (max) along one axis, then the
next: k_d + k_h + k_w strided views instead of k_d * k_h * k_w (a [3, 7, 7] average pool
wrote 147 views into one kernel, and level1/26_avg_pool3d's 72 cases compiled to an 801 KB
kernel file). That is the compact form (sage/kernels/compact.py), taken when the one-pass
kernels do not fit the file: a window of at most ONE_PASS_TAPS taps, and any window by
default, stays one pass over the input (every tap a strided view, summed in one kernel), as
the axis passes each write and read back an intermediate (about 2.6x the traffic of one
pass for a 2x2x2 pool; the suite's 3x3x3 avg_pool3d ran 0.66x of torch_npu axis by axis
against 0.86x in one pass). The divisor is separable too: ATen's avg_pool3d divides by the product over
the axes of each axis's window length (clipped to the padded input; or to the input with
count_include_pad=False), or by divisor_override, so each axis's sum is scaled by its own
lengths, and ceil_mode's last windows that run past the end are padded with zeros (or -inf
for max) that the lengths do not count. Window bounds as in ATen's
aten/src/ATen/native/cpu/AvgPoolKernel.cpp and pooling_output_shape (Pool.h):
https://github.com/pytorch/pytorch/blob/v2.3.0/aten/src/ATen/native/Pool.h
"""

from __future__ import annotations

import math

import torch

from sage.kernels.compact import is_compact
from sage.kernels.decompose import _acc, _spatial_rank, _triple, constant_pad_nd

# the most taps (window elements) pooled in one pass; larger windows go axis by axis
ONE_PASS_TAPS = 8


def output_size(n: int, k: int, s: int, p: int, ceil_mode: bool, dilation: int = 1) -> int:
    """ATen's pooling_output_shape."""
    span = n + 2 * p - dilation * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1                      # the last window must start inside the input or left pad
    return out


def _lengths(n: int, k: int, s: int, p: int, m: int, include_pad: bool) -> list[int]:
    """Each output's window length along one axis (the divisor's factor)."""
    out = []
    for i in range(m):
        lo, hi = i * s - p, min(i * s - p + k, n + p)
        if not include_pad:
            lo, hi = max(lo, 0), min(hi, n)
        out.append(hi - lo)
    return out


def _inverse_lengths(n: int, k: int, s: int, p: int, m: int, include_pad: bool, dtype):
    """1 / `_lengths`, as traced ops on an arange (a torch.tensor() constant is refused)."""
    lo = torch.arange(m) * s - p
    hi = torch.clamp(lo + k, max=n + p)
    if not include_pad:
        lo, hi = torch.clamp(lo, min=0), torch.clamp(hi, max=n)
    return 1.0 / (hi - lo).to(dtype)


def _pooled_axis(y, d: int, k: int, s: int, dilation: int, m: int, combine):
    """combine() of the k strided views of axis d (y already padded so they fit)."""
    out = None
    for j in range(k):
        v = y.narrow(d, j * dilation, (m - 1) * s + 1)
        if s > 1:
            v = v.unfold(d, 1, s).squeeze(-1)
        out = v if out is None else combine(out, v)
    return out


def _one_pass(y, n: int, kernel: list[int], stride: list[int], dilation: list[int], outs: list[int], combine):
    """combine() of every tap of the window, each one strided view of padded `y`, taps in
    row-major order of their offsets."""
    views = [y]
    for i in range(n):
        d = y.dim() - n + i
        taps = []
        for v in views:
            for j in range(kernel[i]):
                w = v.narrow(d, j * dilation[i], (outs[i] - 1) * stride[i] + 1)
                taps.append(w.unfold(d, 1, stride[i]).squeeze(-1) if stride[i] > 1 else w)
        views = taps
    out = views[0]
    for v in views[1:]:
        out = combine(out, v)
    return out


def _padded(x, n: int, padding: list[int], extra: list[int], fill: float):
    pad: list[int] = []
    for i in reversed(range(n)):
        pad += [padding[i], padding[i] + extra[i]]
    return constant_pad_nd(x, pad, fill) if any(pad) else x


def avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    n = _spatial_rank(x, kernel_size)
    kernel = _triple(kernel_size, n)
    stride = _triple(stride if stride else kernel_size, n)
    padding = _triple(padding, n)
    spatial = x.shape[-n:]
    outs = [output_size(spatial[i], kernel[i], stride[i], padding[i], ceil_mode) for i in range(n)]
    # zeros past the right pad for ceil_mode's last windows (not counted by the lengths)
    extra = [max(0, (outs[i] - 1) * stride[i] + kernel[i] - spatial[i] - 2 * padding[i]) for i in range(n)]
    y = _padded(_acc(x), n, padding, extra, 0.0)
    scale = 1.0
    if (math.prod(kernel) <= ONE_PASS_TAPS or not is_compact()) and count_include_pad and not ceil_mode:
        y = _one_pass(y, n, kernel, stride, [1] * n, outs, torch.add)
        return (y * (1.0 / (divisor_override or math.prod(kernel)))).to(x.dtype)
    for i in reversed(range(n)):
        d = x.dim() - n + i
        y = _pooled_axis(y, d, kernel[i], stride[i], 1, outs[i], torch.add)
        if divisor_override:
            continue
        lengths = _lengths(spatial[i], kernel[i], stride[i], padding[i], outs[i], count_include_pad)
        if len(set(lengths)) == 1:
            scale /= lengths[0]
        else:
            shape = [1] * y.dim()
            shape[d] = outs[i]
            inv = _inverse_lengths(spatial[i], kernel[i], stride[i], padding[i], outs[i], count_include_pad, y.dtype)
            y = y * inv.reshape(shape)
    if divisor_override:
        scale = 1.0 / divisor_override
    return (y * scale if scale != 1.0 else y).to(x.dtype)


def max_pool_with_indices(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """The maximum along each axis in turn; the indices output is zeros (the kernels compute
    the values only)."""
    n = _spatial_rank(x, kernel_size)
    kernel = _triple(kernel_size, n)
    stride = _triple(stride if stride else kernel_size, n)
    padding, dilation = _triple(padding, n), _triple(dilation, n)
    spatial = x.shape[-n:]
    outs = [output_size(spatial[i], kernel[i], stride[i], padding[i], ceil_mode, dilation[i]) for i in range(n)]
    extra = [max(0, (outs[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - spatial[i] - 2 * padding[i])
             for i in range(n)]
    y = _padded(x, n, padding, extra, float("-inf"))
    if math.prod(kernel) <= ONE_PASS_TAPS or not is_compact():
        y = _one_pass(y, n, kernel, stride, dilation, outs, torch.maximum)
        return y, torch.zeros(y.shape, dtype=torch.int64)
    for i in reversed(range(n)):
        y = _pooled_axis(y, x.dim() - n + i, kernel[i], stride[i], dilation[i], outs[i], torch.maximum)
    return y, torch.zeros(y.shape, dtype=torch.int64)


__all__ = ["avg_pool", "max_pool_with_indices", "output_size"]
