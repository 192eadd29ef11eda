"""Bicubic upsampling and adaptive average pooling (F.interpolate's "bicubic" and "area"
modes) in gathers and multiply-adds.

torch's own decomposition (torch/_decomp/decompositions.py, `upsample_bicubic2d_default`)
gathers 16 source pixels per output pixel with 2-D index grids. The cubic filter is
separable, so here each axis is one pass of 4 `index_select`s along it: the last axis
first, then the one before, as torch's CPU kernel and its decomposition do (per output
pixel, the 4 rows are each interpolated along x, then the 4 results along y), so the sums
are formed in the same order. Source coordinate, the clamped fraction
(`guard_index_and_lambda`) and the coefficients (A = -0.75) follow that decomposition:
https://github.com/pytorch/pytorch/blob/v2.3.0/torch/_decomp/decompositions.py
"""

from __future__ import annotations

import torch

A = -0.75


def _scale(src: int, size: int, align_corners: bool, scale: float | None) -> float:
    """The source step per output pixel (`_compute_scale`)."""
    if align_corners:
        return (src - 1.0) / (size - 1.0) if size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else src / size


def _coefficients(t: torch.Tensor) -> list[torch.Tensor]:
    """The four cubic-convolution weights of taps floor(x) - 1 .. floor(x) + 2."""
    def near(x):      # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):       # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _axis(x: torch.Tensor, d: int, size: int, align_corners: bool, scale: float | None) -> torch.Tensor:
    """One pass along axis `d` of float `x`: each output position the weighted sum of its
    four neighbouring source positions (indices clamped to the axis)."""
    src = x.shape[d]
    step = _scale(src, size, align_corners, scale)
    pos = torch.arange(size).to(x.dtype)
    real = step * pos if align_corners else step * (pos + 0.5) - 0.5
    lo = real.floor()
    t = (real - lo).clamp(0.0, 1.0)
    lo = lo.to(torch.int64)
    shape = [1] * x.dim()
    shape[d] = size
    out = None
    for k, w in enumerate(_coefficients(t)):
        idx = torch.clamp(lo + (k - 1), 0, src - 1)
        term = torch.index_select(x, d, idx) * w.reshape(shape)
        out = term if out is None else out + term
    return out


def upsample_bicubic2d(x, output_size, align_corners, scales_h=None, scales_w=None):
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return NotImplemented            # uint8 rounds its weights to fixed point (not done here)
    # half inputs in float32 and rounded once (pw_cast_for_opmath in torch's decomposition)
    y = x.float() if x.dtype != torch.float32 else x
    y = _axis(y, x.dim() - 1, output_size[1], align_corners, scales_w)
    y = _axis(y, x.dim() - 2, output_size[0], align_corners, scales_h)
    return y.to(x.dtype)


def adaptive_avg_pool(x, output_size):
    """aten._adaptive_avg_pool2d/3d: output i of an axis of n is the mean of source
    [floor(i n / m), ceil((i + 1) n / m)) (ATen's start_index/end_index in
    aten/src/ATen/native/AdaptivePooling.h). The window is a box, so its mean is the mean
    along each axis in turn: per axis, the k-th member of every window gathered
    (`index_select`, clamped) and weighted by 1/length where it lies inside its window."""
    y = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    n = len(output_size)
    for i, size in reversed(list(enumerate(output_size))):
        d = x.dim() - n + i
        src = x.shape[d]
        if src == size:
            continue
        # the windows from arange (traced ops; a torch.tensor() constant is refused)
        pos = torch.arange(size)
        start = torch.div(pos * src, size, rounding_mode="floor")
        end = -torch.div(-(pos + 1) * src, size, rounding_mode="floor")
        inv = 1.0 / (end - start).to(y.dtype)
        shape = [1] * y.dim()
        shape[d] = size
        out = None
        longest = max(-((-(j + 1) * src) // size) - (j * src) // size for j in range(size))
        for k in range(longest):
            idx = torch.clamp(start + k, max=src - 1)
            w = torch.where(start + k < end, inv, torch.zeros((), dtype=y.dtype))
            term = torch.index_select(y, d, idx) * w.reshape(shape)
            out = term if out is None else out + term
        y = out
    return y.to(x.dtype)


__all__ = ["adaptive_avg_pool", "upsample_bicubic2d"]
